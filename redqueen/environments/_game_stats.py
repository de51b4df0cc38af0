"""What one round of the game says about the population: metrics, task rows, match outcomes.

Pure functions of the played tasks (:class:`~redqueen.environments._round.PlayedTask`):
:func:`step_metrics` and :func:`base_lift` for ``metrics.jsonl``, :func:`task_rows` for ``tasks.jsonl``,
:func:`member_stats` for each member's smoothed statistics and objectives, and
:func:`match_outcomes` for the ratings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from redqueen.environments._round import PlayedTask


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else 0.0


def base_lift(played: Sequence[PlayedTask]) -> float | None:
    """Mean over the step's probed tasks of the students' solve rate minus the frozen base
    model's on the same task; ``None`` when no task was probed (the probe is off, or none was
    valid). A paired, objective measure: ratings only compare members with each other."""
    lifts = [i.solve_rate - i.base_solve_rate for i in played
             if i.solve_rate is not None and i.base_solve_rate is not None]
    return _mean(lifts) if lifts else None


def step_metrics(played: Sequence[PlayedTask], task_types: Sequence[str]) -> dict[str, float]:
    """Population-level metrics of one step: solve rate (over answers to valid tasks), teacher
    reward, valid share and complexity of valid tasks, overall and per task type, and the
    number of proposals, answers and generated tokens."""
    answers = [s == "correct" for i in played for s in i.statuses]
    metrics = {
        "solve_rate": _mean(answers),
        "teacher_reward": _mean([i.teacher_reward for i in played]),
        "valid_share": _mean([i.valid for i in played]),
        # Compute actually spent, for budget-matched comparisons between environments.
        "proposals": float(len(played)),
        "answers": float(len(answers)),
        "generated_tokens": float(
            sum(
                len(i.proposal_gen.token_ids) + sum(len(a.token_ids) for a in i.answers)
                for i in played
            )
        ),
    }
    for task_type in task_types:
        of_type = [i for i in played if i.task_type == task_type]
        if not of_type:
            continue
        metrics[f"valid_share/{task_type}"] = _mean([i.valid for i in of_type])
        solved = [s == "correct" for i in of_type for s in i.statuses]
        if solved:
            metrics[f"solve_rate/{task_type}"] = _mean(solved)
        scores = [i.complexity for i in of_type if i.complexity is not None]
        if scores:
            metrics[f"complexity/{task_type}"] = _mean(scores)
    return metrics


def task_rows(
    played: Sequence[PlayedTask], step: int, measure_keys: Sequence[str]
) -> list[dict[str, Any]]:
    """Rows of ``tasks.jsonl`` (schema in the experiments interface); ``measure_keys`` are the
    domain's measure columns (``None`` for a task that was not valid)."""
    return [
        {
            "step": step,
            "teacher": item.teacher,
            "student": item.student,
            "task_type": item.task_type,
            "valid": item.valid,
            "reason": item.reason,
            "complexity": item.complexity,
            "solve_rate": item.solve_rate,
            "signature": item.signature,
            "program": item.program,
            **{key: item.measures.get(key) for key in measure_keys},
            "base_solve_rate": item.base_solve_rate,
        }
        for item in played
    ]


def member_stats(
    played: Sequence[PlayedTask], task_types: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Per-adapter summaries of one step, keyed by adapter id then by role.

    ``{"teacher": {...}}`` holds what the adapter did as a proposer (mean reward, valid share,
    complexity, ``reward_per_type``), ``{"student": {...}}`` what it did as a solver (solve rate,
    mean reward, ``solve_per_type``).
    """
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    by_teacher: dict[str, list[PlayedTask]] = defaultdict(list)
    by_student: dict[str, list[PlayedTask]] = defaultdict(list)
    for item in played:
        by_teacher[item.teacher].append(item)
        if item.valid:
            by_student[item.student].append(item)
    for teacher, items in by_teacher.items():
        scores = [i.complexity for i in items if i.complexity is not None]
        out[teacher]["teacher"] = {
            "teacher_reward": _mean([i.teacher_reward for i in items]),
            "valid_share": _mean([i.valid for i in items]),
            "complexity": _mean(scores),
            "reward_per_type": [
                _mean([i.teacher_reward for i in items if i.task_type == t]) for t in task_types
            ],
        }
    for student, items in by_student.items():
        answers = [s == "correct" for i in items for s in i.statuses]
        out[student]["student"] = {
            "solve_rate": _mean(answers),
            "student_reward": _mean([r for i in items for r in i.student_rewards]),
            "solve_per_type": [
                _mean([s == "correct" for i in items if i.task_type == t for s in i.statuses])
                for t in task_types
            ],
        }
    return dict(out)


def match_outcomes(
    played: Sequence[PlayedTask], pairs: Sequence[tuple[str, str]]
) -> list[tuple[str, str, list[float | None]]]:
    """Each (teacher, student) match's per-task solve rates, ``None`` for an invalid task,
    for :meth:`redqueen.evo.League.record` to score by the one rule
    (:func:`~redqueen.fitness.match_score`); matches with no task are left out."""
    results = []
    for teacher, student in pairs:
        items = [i for i in played if i.teacher == teacher and i.student == student]
        if items:
            results.append(
                (teacher, student, [(i.solve_rate or 0.0) if i.valid else None for i in items])
            )
    return results
