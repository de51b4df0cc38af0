"""The propose -> verify -> solve -> reward -> learn pipeline shared by the code environments.

Both :class:`~redqueen.environments.CoevolutionEnv` (teachers vs students) and
:class:`~redqueen.environments.SelfPlayEnv` (one adapter in both roles) play the same game on
the same verifier; they differ only in who is matched with whom and in what happens between
steps. This module holds the game: one mixed-adapter ``generate`` call for every proposal of the
population, sandboxed verification, one mixed-adapter call for every answer, grading, rewards,
and one REINFORCE++ update per adapter on its own rollouts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from redqueen.engine import Generation, Rollout, SamplingParams, whiten_pooled
from redqueen.environments._instruments import MEASURE_KEYS, program_measures
from redqueen.environments.task_buffer import (
    TaskBuffer,
    TaskBuffers,
    buffer_for,
    complexity_score,
    task_signature,
)
from redqueen.fitness import StudentReward, TeacherReward
from redqueen.verifiers import Triplet, check_answers, complexity, make_task, validate_program
from redqueen.verifiers.formats import (
    PROPOSE_STOP,
    SOLVE_STOP,
    parse_proposal,
    parse_solution,
    propose_prompt,
    solve_prompt,
)

#: Reason recorded for a proposal the formats module cannot parse.
UNPARSEABLE = "unparseable"


@dataclass(frozen=True)
class GameSettings:
    """How much each adapter proposes and answers per step, and how it samples.

    Attributes:
        task_types: Task types proposed, cycled over each proposer's batch (the offset moves
            with the step so every type is proposed equally often over time).
        tasks_per_teacher: Proposals per proposing adapter per step.
        answers_per_task: Answers ``n`` sampled per valid task.
        references: Reference triplets ``K`` per proposal prompt.
        buffer_size: Task buffer capacity.
        propose_max_new_tokens: Token budget of a proposal.
        solve_max_new_tokens: Token budget of an answer.
        temperature: Sampling temperature (1 keeps the policy gradient unbiased).
        top_p: Nucleus mass.
        base_probe_answers: Answers the frozen base model samples per valid task to measure
            its solve rate (a difficulty probe independent of the population); ``0`` turns the
            probe off.

    Raises:
        ValueError: If a count is below its minimum or a task type is unknown.
    """

    task_types: tuple[str, ...] = ("code_o", "code_i", "code_f")
    tasks_per_teacher: int = 3
    answers_per_task: int = 4
    references: int = 3
    buffer_size: int = 256
    propose_max_new_tokens: int = 128
    solve_max_new_tokens: int = 96
    temperature: float = 1.0
    top_p: float = 1.0
    base_probe_answers: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "task_types", tuple(self.task_types))
        unknown = [t for t in self.task_types if t not in ("code_o", "code_i", "code_f")]
        if not self.task_types or unknown:
            raise ValueError(f"GameSettings.task_types: unknown or empty {list(self.task_types)!r}")
        for name in ("tasks_per_teacher", "answers_per_task", "buffer_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"GameSettings.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("references", "base_probe_answers"):
            if getattr(self, name) < 0:
                raise ValueError(f"GameSettings.{name} must be >= 0, got {getattr(self, name)}")


@dataclass
class PlayedTask:
    """Everything that happened to one proposed task within a step."""

    teacher: str
    student: str
    task_type: str
    proposal_gen: Generation
    task: Any = None  # CodeTask when valid
    reason: str | None = None
    program: str | None = None
    complexity: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    answers: list[Generation] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    solve_rate: float | None = None
    teacher_reward: float = 0.0
    student_rewards: list[float] = field(default_factory=list)
    measures: dict[str, float] = field(default_factory=dict)
    base_answers: list[Generation] = field(default_factory=list)
    base_solve_rate: float | None = None
    #: Whitened advantages, the proposal's first, then each answer's (set by :func:`learn`).
    advantages: list[float] = field(default_factory=list)
    #: Per advantage, whether it was whitened with pooled statistics.
    pooled: list[bool] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """Whether the task passed verification."""
        return self.task is not None

    @property
    def signature(self) -> str | None:
        """Short hash of the normalised program (``None`` if nothing parsed)."""
        return None if self.program is None else task_signature(self.program)


def task_types_for(settings: GameSettings, step: int) -> list[str]:
    """Task types of one proposer's batch at ``step`` (cycled, offset by the step)."""
    types, n = settings.task_types, settings.tasks_per_teacher
    return [types[(step * n + j) % len(types)] for j in range(n)]


def propose(
    host: Any,
    pairs: Sequence[tuple[str, str]],
    buffer: TaskBuffer | TaskBuffers,
    settings: GameSettings,
    *,
    step: int,
    py_rng: Any,
    seed: int,
) -> list[PlayedTask]:
    """Every proposer writes its batch of tasks, all in one mixed-adapter ``generate`` call."""
    prompts, adapters, played = [], [], []
    for teacher, student in pairs:
        for task_type in task_types_for(settings, step):
            refs = buffer_for(buffer, teacher).sample(settings.references, py_rng)
            prompts.append(propose_prompt(task_type, refs))
            adapters.append(teacher)
            played.append((teacher, student, task_type))
    sampling = SamplingParams(
        max_new_tokens=settings.propose_max_new_tokens,
        temperature=settings.temperature,
        top_p=settings.top_p,
        stop=(PROPOSE_STOP,),
        seed=seed,
    )
    gens = host.generate(prompts, adapters, sampling) if prompts else []
    return [PlayedTask(t, s, tt, g) for (t, s, tt), g in zip(played, gens, strict=True)]


def verify(played: Sequence[PlayedTask], executor: Any, buffer: TaskBuffer | TaskBuffers) -> None:
    """Parse and validate each proposal in the sandbox; valid ones join the proposer's task
    buffer (the shared one, or its own when ``buffer`` is per proposer).

    Gold outputs come from execution, never from the model.
    """
    for item in played:
        proposal = parse_proposal(item.task_type, item.proposal_gen.text)
        if proposal is None:
            item.reason = UNPARSEABLE
            continue
        item.program = proposal.program
        check = validate_program(proposal.program, proposal.inputs, executor)
        if not check.ok:
            reason = check.reason
            item.reason = str(getattr(reason, "value", reason) or "invalid")
            continue
        item.task = make_task(item.task_type, proposal.program, proposal.inputs, check.outputs)
        item.metrics = {k: float(v) for k, v in complexity(proposal.program).items()}
        item.complexity = complexity_score(item.metrics)
        item.measures = program_measures(proposal.program, item.metrics)
        buffer_for(buffer, item.teacher).add(
            Triplet(program=proposal.program, input=proposal.inputs[0], output=check.outputs[0])
        )


def solve(host: Any, played: Sequence[PlayedTask], settings: GameSettings, *, seed: int) -> None:
    """Each matched solver samples ``n`` answers per valid task, and the frozen base model
    ``base_probe_answers`` (its difficulty probe), all in one mixed ``generate`` call."""
    valid = [item for item in played if item.valid]
    if not valid:
        return
    n, probe = settings.answers_per_task, settings.base_probe_answers
    sampling = SamplingParams(
        max_new_tokens=settings.solve_max_new_tokens,
        temperature=settings.temperature,
        top_p=settings.top_p,
        stop=(SOLVE_STOP,),
        seed=seed,
        n=n,
    )
    prompts = [solve_prompt(i.task) for i in valid]
    adapters: list[str | None] = [i.student for i in valid]
    per_row = [sampling] * len(valid)
    if probe:
        prompts += prompts
        adapters += [None] * len(valid)
        per_row += [replace(sampling, n=probe)] * len(valid)
    gens = host.generate(prompts, adapters, per_row)
    base = len(valid) * n
    for index, item in enumerate(valid):
        item.answers = list(gens[index * n : (index + 1) * n])
        item.base_answers = list(gens[base + index * probe : base + (index + 1) * probe])


def grade(
    played: Sequence[PlayedTask],
    executor: Any,
    teacher_reward: TeacherReward,
    student_reward: StudentReward,
) -> None:
    """Check every answer in the sandbox (one parallel batch) and compute solve rates and both
    roles' rewards."""
    items = [
        (item.task, parse_solution(item.task_type, gen.text))
        for item in played
        if item.valid
        for gen in item.answers
    ]
    statuses = iter(
        [str(getattr(s, "value", s)).lower() for s in check_answers(items, executor)]
        if items
        else []
    )
    for item in played:
        if not item.valid:
            item.teacher_reward = teacher_reward(False, None)
            continue
        item.statuses = [next(statuses) for _ in item.answers]
        item.student_rewards = [student_reward(s) for s in item.statuses]
        item.solve_rate = (
            sum(s == "correct" for s in item.statuses) / len(item.statuses)
            if item.statuses
            else 0.0
        )
        item.teacher_reward = teacher_reward(True, item.solve_rate)


def learn(
    learner: Any,
    played: Sequence[PlayedTask],
    *,
    proposer_role: str,
    solver_role: str,
    frozen: Collection[str] = (),
    pool_across_adapters: bool = True,
) -> dict[str, Any]:
    """One REINFORCE++ update per adapter on its own rollouts (``frozen`` adapters, the
    hall-of-fame opponents, are not updated).

    Advantages are rewards whitened per (adapter, role, task type) group. With a few tasks per
    adapter such a group is too small for its own baseline, so :func:`whiten_pooled`'s rule
    applies: a group of fewer than :data:`~redqueen.engine.MIN_WHITEN_GROUP` samples uses the
    statistics of its (role, task type) group over the whole population's batch (Task-Relative
    REINFORCE++, as in Absolute Zero), and if that is small too, of its role. With
    ``pool_across_adapters=False`` (independent agents, as in self-play) pooling stays within
    the adapter: (adapter, role), then (adapter). Each played task records its advantages and
    which of them were pooled.

    Returns:
        Learner statistics per adapter id.
    """
    owners: list[str] = []
    gens: list[Generation] = []
    rewards: list[float] = []
    levels: list[tuple[Hashable, ...]] = []

    def add(owner: str, gen: Generation, reward: float, role: str, task_type: str) -> None:
        owners.append(owner)
        gens.append(gen)
        rewards.append(reward)
        if pool_across_adapters:
            levels.append(((owner, role, task_type), (role, task_type), (role,)))
        else:
            levels.append(((owner, role, task_type), (owner, role), (owner,)))

    for item in played:
        add(item.teacher, item.proposal_gen, item.teacher_reward, proposer_role, item.task_type)
        for gen, reward in zip(item.answers, item.student_rewards, strict=True):
            add(item.student, gen, reward, solver_role, item.task_type)
    if not gens:
        return {}
    advantages, used = whiten_pooled(rewards, levels)
    position = 0
    for item in played:
        size = 1 + len(item.answers)
        item.advantages = [float(a) for a in advantages[position : position + size]]
        item.pooled = [level > 0 for level in used[position : position + size]]
        position += size
    per_adapter: dict[str, list[Rollout]] = defaultdict(list)
    for owner, gen, adv in zip(owners, gens, advantages, strict=True):
        if gen.token_ids:
            per_adapter[owner].append(
                Rollout(
                    prompt_ids=list(gen.prompt_ids),
                    token_ids=list(gen.token_ids),
                    logprobs=list(gen.logprobs),
                    advantage=float(adv),
                )
            )
    return {
        adapter: learner.step(adapter, rollouts)
        for adapter, rollouts in per_adapter.items()
        if adapter not in frozen
    }


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else 0.0


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


def task_rows(played: Sequence[PlayedTask], step: int) -> list[dict[str, Any]]:
    """Rows of ``tasks.jsonl`` (schema in the experiments interface)."""
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
            **{key: item.measures.get(key) for key in MEASURE_KEYS},
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


def match_scores(
    played: Sequence[PlayedTask], pairs: Sequence[tuple[str, str]]
) -> list[tuple[str, str, float]]:
    """Outcome of each (teacher, student) match as the student's score in [0, 1].

    The student earns each valid task's solve rate and every invalid task (the teacher
    forfeits it); the teacher earns the rest. The match is zero-sum, which is what a rating
    system models; the teacher's learning reward separately favours learnable tasks.
    """
    results = []
    for teacher, student in pairs:
        items = [i for i in played if i.teacher == teacher and i.student == student]
        if not items:
            continue
        score = sum(i.solve_rate if i.valid else 1.0 for i in items) / len(items)
        results.append((teacher, student, float(score)))
    return results
