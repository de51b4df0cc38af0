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

import random
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from redqueen.environments._codegame import GameSettings
from redqueen.environments._domain import TaskDomain, make_domain
from redqueen.environments._game_env import GameEnv
from redqueen.environments._game_stats import match_scores
from redqueen.environments._members import MemberBook, make_host, objectives_for
from redqueen.environments.base import ENVIRONMENTS, StepRecord
from redqueen.environments.task_buffer import TaskBuffer
from redqueen.evo import EvolutionLoop, Lineage, Population, ReplacementConfig
from redqueen.fitness import PFSPMatchmaker, RatingSystem, StudentReward, TeacherReward

ROLES = ("teacher", "student")


@ENVIRONMENTS.register("coevolution")
class CoevolutionEnv(GameEnv):
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
        objectives: Objective names per role, e.g. ``{"teacher": ("rating_lcb",)}``.
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
        self.domain = domain if domain is not None else make_domain("code")
        self.settings = (settings or GameSettings()).for_domain(self.domain)
        self.teacher_reward = teacher_reward or TeacherReward()
        self.student_reward = student_reward or StudentReward()
        self.seed = int(seed)
        self.step_count = 0
        self.py_rng = random.Random(self.seed)
        self.np_rng = np.random.default_rng(self.seed)
        self.population = Population(roles=ROLES)
        self.lineage = Lineage()
        self.ratings = RatingSystem()
        self.matchmaker = matchmaker or PFSPMatchmaker()
        self.buffer = TaskBuffer(
            capacity=self.settings.buffer_size, seed=self.domain.seed_examples()
        )
        roles_objectives = objectives_for(objectives, ROLES)
        self.replacement = replacement or ReplacementConfig()
        self.evolution = EvolutionLoop(  # checks operator names before any model loads
            self.population,
            self.lineage,
            self.replacement,
            np.random.default_rng(self.seed + 1),
            objectives=roles_objectives,
        )
        self.host, self.learner, self.executor = make_host(
            model=model,
            host=host,
            backend=backend,
            device=device,
            dtype=dtype,
            target_modules=target_modules,
            learner=learner,
            executor=executor,
        )
        self.book = MemberBook(
            population=self.population,
            lineage=self.lineage,
            ratings=self.ratings,
            host=self.host,
            learner=self.learner,
            objectives=roles_objectives,
            task_types=self.settings.task_types,
            evolution=self.evolution,
        )
        init_rng = torch.Generator().manual_seed(self.seed)
        try:
            for role, size in (("teacher", teachers), ("student", students)):
                for _ in range(size):
                    self.book.found(
                        role, rank=rank, alpha=alpha, init=init, std=init_std, rng=init_rng
                    )
        except BaseException:
            self.close()  # no sandbox processes outlive a failed construction
            raise
        self.signatures: set[str] = set()
        self.cells: set[str] = set()

    # -- one step ---------------------------------------------------------------------------

    def step(self) -> StepRecord:
        """Matchmaking, propose, verify, solve, reward, learn, rate, and replace when due."""
        start = time.perf_counter()
        step = self.step_count
        teacher_ids = [ind.id for ind in self.population.members("teacher")]
        student_ids = [ind.id for ind in self.population.members("student")]
        hall = self.evolution.hall
        pairs = self.matchmaker.pair(
            teacher_ids,
            student_ids,
            self.ratings,
            self.np_rng,
            past_teachers={m.key: m.rating for m in hall.members("teacher")},
            past_students={m.key: m.rating for m in hall.members("student")},
        )
        frozen = self.book.lend_frozen(pairs)
        try:
            played, learner_stats = self._play(
                pairs, step, proposer_role="teacher", solver_role="student", frozen=frozen
            )
        finally:
            self.book.return_frozen(frozen)

        for teacher, student, student_score in match_scores(played, pairs):
            scores = (1.0 - student_score, student_score)
            if teacher in frozen:
                self.ratings.record_against(student, frozen[teacher], scores[1], scores[0])
            elif student in frozen:
                self.ratings.record_against(teacher, frozen[student], *scores)
            else:
                self.ratings.record_score(teacher, student, *scores)
        self.signatures.update(
            item.signature for item in played if item.valid and item.signature is not None
        )
        self.book.observe(played)

        births: list[str] = []
        deaths: list[str] = []
        if self.replacement.due(step):
            births, deaths = self.book.replace(step + 1)
        else:
            self.book.refresh()
        if self.replacement.snapshot_due(step):
            self.book.snapshot(step + 1)

        record = self._record(step, start, played, learner_stats, ROLES, births=births, deaths=deaths)
        record.metrics.update(self.evolution.archive_metrics())
        return record

    # -- checkpoints ------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything :class:`GameEnv` keeps, plus the evolution loop's state (ratings
        live in the member book)."""
        return {**super().state_dict(), "evolution": self.evolution.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned; the host's adapters follow the population."""
        super().load_state_dict(state)
        self.evolution.load_state_dict(state["evolution"])
