"""PopuLoRA's teacher-vs-student co-evolution environment (the RLVR inner loop).

One step, following the design's data flow: PFSP matchmaking pairs each teacher with a
student; every teacher proposes tasks of the environment's :class:`TaskDomain` (``code_o`` /
``code_i`` / ``code_f`` in the default code domain) conditioned on reference examples from the
task buffer (one mixed-adapter ``generate`` call for the whole population); the domain
validates them; matched students sample ``n`` answers per valid task
(one more mixed call); rewards, one REINFORCE++ update per adapter, rating updates from the
match outcomes; and every ``replace_every`` steps the evolution loop replaces the weakest
members through the operator library, the adapter host following births and deaths.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from redqueen.environments._domain import TaskDomain
from redqueen.environments._game_stats import match_outcomes
from redqueen.environments._round import GameSettings
from redqueen.environments._round_env import RoundEnv
from redqueen.environments.base import ENVIRONMENTS, StepRecord
from redqueen.evo import ReplacementConfig
from redqueen.fitness import Objectives, PFSPMatchmaker, StudentReward, TeacherReward

ROLES = ("teacher", "student")


@ENVIRONMENTS.register("coevolution")
class CoevolutionEnv(RoundEnv):
    """Teachers propose tasks of a domain (code by default), students solve them; both evolve.

    Args:
        model: Base model id or path; ``"tiny-coder"`` (or ``None``) is the shipped model.
        host: An already built :class:`redqueen.engine.AdapterHost` to use instead of loading
            ``model`` (it must hold no adapters; the environment owns the ones it adds).
        backend: Generation backend name.
        device: Torch device of the base model.
        dtype: Base model dtype (``"float32"``, ``"bfloat16"``, ...; ``None``: the host's default).
        target_modules: Linear modules that carry LoRA factors (``None``: every projection).
        teachers: Number of teachers.
        students: Number of students.
        rank: LoRA rank of every genome.
        alpha: LoRA alpha of every genome.
        init: Initialisation of founders (``"peft"``: B = 0, or ``"gaussian"``).
        init_std: Standard deviation of ``"gaussian"`` founders.
        domain: The task domain (default: the code domain with its default settings).
        settings: Per-step budgets and sampling (:class:`GameSettings`); its task types must
            be the domain's (empty: all of them).
        teacher_reward: Reward of a proposed task.
        student_reward: Reward of an answer.
        replacement: The replacement step's settings (default: the evolution core's defaults).
        matchmaker: PFSP matchmaking, with its share of opponents from the hall of fame.
        objectives: Objective names per role (default ``("rating",)``, the conservative rating),
            e.g. ``{"teacher": ("rating", "teacher_reward")}``.
        learner: A :class:`redqueen.engine.LearnerConfig` (default settings if ``None``).
        executor: Verifier executor settings ``{"workers", "timeout", "memory_mb"}``.
        seed: Seeds every random choice (genomes, matchmaking, references, sampling, evolution).

    Raises:
        ValueError: If a role has no members or a setting is out of range.
    """

    def __init__(
        self,
        *,
        model: str | Path | None = "tiny-coder",
        host: Any = None,
        backend: str = "auto",
        device: str = "cpu",
        dtype: str | None = None,
        target_modules: Sequence[str] | None = None,
        teachers: int = 4,
        students: int = 4,
        rank: int = 8,
        alpha: float = 16.0,
        init: str = "peft",
        init_std: float = 0.02,
        domain: TaskDomain[Any, Any, Any] | None = None,
        settings: GameSettings | None = None,
        teacher_reward: TeacherReward | None = None,
        student_reward: StudentReward | None = None,
        replacement: ReplacementConfig | None = None,
        matchmaker: PFSPMatchmaker | None = None,
        objectives: Mapping[str, Sequence[str]] | None = None,
        learner: Any = None,
        executor: Mapping[str, Any] | None = None,
        seed: int = 0,
    ) -> None:
        if teachers < 1 or students < 1:
            raise ValueError(
                f"CoevolutionEnv needs teachers and students, got {teachers} and {students}"
            )
        given = dict(objectives or {})
        super().__init__(
            sizes={"teacher": teachers, "student": students},
            objectives={r: Objectives(tuple(given.get(r, ("rating",)))) for r in ROLES},
            rated=True,
            per_member_buffers=False,
            replacement=replacement,
            matchmaker=matchmaker,
            model=model,
            host=host,
            backend=backend,
            device=device,
            dtype=dtype,
            target_modules=target_modules,
            rank=rank,
            alpha=alpha,
            init=init,
            init_std=init_std,
            domain=domain,
            settings=settings,
            teacher_reward=teacher_reward,
            student_reward=student_reward,
            learner=learner,
            executor=executor,
            seed=seed,
        )

    # -- one step ---------------------------------------------------------------------------

    def step(self) -> StepRecord:
        """Matchmaking, propose, verify, solve, reward, learn, rate, and replace when due."""
        start = time.perf_counter()
        step = self.step_count
        pairs = self.league.pair()
        frozen = self.league.frozen(pairs)
        self.adapters.lend(frozen)
        try:
            played, learner_stats = self._play(
                pairs, step, proposer_role="teacher", solver_role="student", frozen=frozen
            )
        finally:
            self.adapters.give_back(frozen)

        for teacher, student, rates in match_outcomes(played, pairs):
            self.league.record(teacher, student, rates)
        self.signatures.update(
            item.signature for item in played if item.valid and item.signature is not None
        )
        self.stats.observe(played, self.population.living)
        outcome = self.league.finish_step(step)

        record = self._record(
            step, start, played, learner_stats, ROLES, births=outcome.births, deaths=outcome.deaths
        )
        record.metrics.update(self.evolution.archive_metrics())
        return record
