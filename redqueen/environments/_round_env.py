"""What the task-domain environments share: one round of play, the step record, checkpoints.

:class:`~redqueen.environments.CoevolutionEnv` and :class:`~redqueen.environments.SelfPlayEnv`
differ only in who proposes to whom and in what happens around the round (ratings and
replacement for co-evolution); the round itself on their :class:`~redqueen.environments.TaskDomain`,
the metrics, the checkpoint state and shutdown are the same code, kept here once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection, Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from redqueen.engine import HostProtocol, LearnerProtocol, StepStats
from redqueen.environments._accounting import learning_metrics, member_accounting
from redqueen.environments._adapters import AdapterSync, open_engine
from redqueen.environments._domain import (
    TaskDomain,
    domain_name,
    load_domain_state,
    save_domain_state,
    summary_column,
)
from redqueen.environments._game_stats import base_lift, match_outcomes, step_metrics, task_rows
from redqueen.environments._heldout import HeldOutProbe
from redqueen.environments._league_view import LeagueView
from redqueen.environments._member_stats import MemberStats
from redqueen.environments._round import (
    PlayedTask,
    grade,
    grade_base,
    learn,
    propose,
    solve,
    verify,
)
from redqueen.environments.base import Environment, StepRecord, check_arguments
from redqueen.environments.task_buffer import TaskBuffer, TaskBuffers, buffer_size
from redqueen.evo import League, ReplacementConfig
from redqueen.fitness import Objectives, PFSPMatchmaker, StudentReward, TeacherReward, match_score
from redqueen.genomes import LoRAGenome, check_seed, generator_seed
from redqueen.settings import (
    ClusterSettings,
    EngineSettings,
    GameSettings,
    LearnerSettings,
    MatchmakingSettings,
    ObjectiveSettings,
    PopulationSettings,
    SamplingSettings,
)
from redqueen.verifiers import Sandbox


class RoundEnv(LeagueView, Environment):
    """Base of the environments that play the propose / verify / solve / learn round.

    The constructor takes settings objects (each configuration section whole) and builds the
    parts (domain, settings, rewards, RNGs, the :class:`League`, the task buffer, the engine with
    its :class:`AdapterSync`, the :class:`MemberStats`), then founds the members. A subclass
    declares its :attr:`roles` (each sized by ``population``), whether members are
    :attr:`rated` and keep :attr:`per_member_buffers`, may refuse settings in
    :meth:`check_settings`, and writes :meth:`step` around :meth:`_play` and :meth:`_record`.

    Coverage of task space is counted in the domain's behaviour cells
    (:meth:`~redqueen.environments.TaskDomain.behaviour_cell`): ``coverage_cells`` is the
    number of distinct cells the valid tasks of the run have filled so far, ``new_cells`` the
    number first filled this step.
    """

    #: The task domain the game is played on.
    domain: TaskDomain[Any, Any, Any]
    host: HostProtocol
    learner: LearnerProtocol
    #: The sandbox executor (local, or a cluster host's); ``None`` once closed.
    executor: Sandbox | None
    #: One task buffer shared by the proposers, or one per proposer.
    buffer: TaskBuffer | TaskBuffers
    settings: GameSettings
    #: Population, lineage, ratings, matchmaking, replacement and hall of fame.
    league: League
    #: The host's adapters, following the league's births and deaths.
    adapters: AdapterSync
    #: Members' smoothed statistics, written onto them as objectives, cases and descriptors.
    stats: MemberStats
    #: The solvers and the base model on the domain's held-out tasks (``heldout_every``).
    heldout: HeldOutProbe
    #: Signatures of the valid tasks proposed so far.
    signatures: set[str]
    py_rng: random.Random
    np_rng: np.random.Generator
    teacher_reward: TeacherReward
    student_reward: StudentReward

    #: Whether small whitening groups pool across adapters of a role (see ``learn``); a
    #: baseline of independent agents sets it to ``False``.
    pool_across_adapters: ClassVar[bool] = True
    #: Whether members carry ratings.
    rated: ClassVar[bool] = True
    #: The role whose members answer the held-out tasks (:attr:`heldout`).
    solver_role: ClassVar[str] = "student"
    #: One task buffer per proposer (independent agents) instead of one shared buffer.
    per_member_buffers: ClassVar[bool] = False
    #: PFSP matchmaking of the league (``None``: the league's pairing of its roles).
    matchmaking: MatchmakingSettings | None = None
    #: Temperature and nucleus mass of proposals and answers.
    sampling: SamplingSettings
    #: Behaviour cells filled so far (plain strings, kept in the checkpoint).
    cells: set[str]
    #: Tokens the base-model probe generated in the last step.
    probe_tokens: int = 0
    #: Seconds of the last step's phases (``propose``, ``verify``, ``solve``, ``grade``, ``learn``).
    phase_seconds: dict[str, float] = {}  # noqa: RUF012 (replaced, never mutated, per step)

    def __init__(
        self,
        *,
        engine: EngineSettings | None = None,
        cluster: ClusterSettings | None = None,
        population: PopulationSettings | None = None,
        game: GameSettings | None = None,
        sampling: SamplingSettings | None = None,
        learner: LearnerSettings | None = None,
        replacement: ReplacementConfig | None = None,
        objectives: ObjectiveSettings | None = None,
        domain: TaskDomain[Any, Any, Any] | None = None,
        host: HostProtocol | None = None,
        seed: int = 0,
    ) -> None:
        """Build the parts every round needs, then found the members of each role.

        The settings are checked first (:meth:`check_settings`), the league next (it checks
        operator names before any model loads), the engine (host, learner, sandbox) after it,
        founders last, their genomes drawn from a generator seeded with ``seed``. The sandbox is
        shut down if founding fails. Every settings object defaults to its own defaults.

        Args:
            engine: The base model and where it runs (``model:``).
            cluster: Ray workers (``engine:``); ``workers: 0`` runs in this process.
            population: Role sizes (:attr:`roles` read theirs) and the founders' genomes.
            game: Per-step budgets, rewards and the sandbox; its task types must be the
                domain's (empty: all of them).
            sampling: Temperature and nucleus mass of proposals and answers.
            learner: The REINFORCE++ update.
            replacement: The league's replacement (default: :meth:`default_replacement`).
            objectives: Objective names per role.
            domain: The task domain (default: the code domain with its default settings).
            host: An already built :class:`redqueen.engine.AdapterHost` to use instead of
                loading ``engine.name`` (it must hold no adapters; the environment owns the
                ones it adds).
            seed: Seeds every random choice: ``random`` and numpy generators (pairing draws from
                the numpy one), the evolution loop (``seed + 1``) and the founders' genomes.
                Any integer (taken modulo ``2**64``, :func:`redqueen.genomes.generator_seed`).

        Raises:
            TypeError: If a settings argument is not of its settings type (a mapping is not
                a settings object: ``PopulationSettings(teachers=4)`` is), or ``seed`` is not
                an integer.
            ValueError: ``"<config key>: ..."`` for settings this environment cannot play with.
            OSError: If the base model cannot be loaded.
        """
        owner = type(self).__name__
        check_arguments(
            owner,
            engine=(engine, EngineSettings),
            cluster=(cluster, ClusterSettings),
            population=(population, PopulationSettings),
            game=(game, GameSettings),
            sampling=(sampling, SamplingSettings),
            learner=(learner, LearnerSettings),
            replacement=(replacement, ReplacementConfig),
            objectives=(objectives, ObjectiveSettings),
        )
        seed = check_seed(seed, owner)
        population = population or PopulationSettings()
        replacement = replacement or self.default_replacement()
        self.check_settings(population, replacement)
        self.domain = domain if domain is not None else _default_domain()
        self.settings = (game or GameSettings()).for_domain(self.domain)
        self.sampling = sampling or SamplingSettings()
        self.teacher_reward = TeacherReward.from_settings(self.settings.teacher_reward)
        self.student_reward = StudentReward.from_settings(self.settings.student_reward)
        self.seed = seed
        self.step_count = 0
        self.py_rng = random.Random(generator_seed(self.seed))
        self.np_rng = np.random.default_rng(generator_seed(self.seed))
        objectives = objectives or ObjectiveSettings()
        self.league = League(  # checks operator names before any model loads
            roles=self.roles,
            objectives={role: Objectives(objectives.of(role)) for role in self.roles},
            pairing_rng=self.np_rng,
            evolution_rng=np.random.default_rng(generator_seed(self.seed + 1)),
            replacement=replacement,
            matchmaker=None if self.matchmaking is None else PFSPMatchmaker.from_settings(self.matchmaking),
            rated=self.rated,
        )
        buffers = TaskBuffers if self.per_member_buffers else TaskBuffer
        self.buffer = buffers(capacity=self.settings.buffer_size, seed=self.domain.seed_examples())
        self.signatures = set()
        self.cells = set()
        self.executor = None
        self.host, self.learner, self.executor = open_engine(
            engine or EngineSettings(),
            cluster=cluster or ClusterSettings(),
            learner=learner or LearnerSettings(),
            executor=self.settings.executor,
            host=host,
        )
        self.base_model_path = str(self.host.model_path)
        self.adapters = AdapterSync(self.host, self.learner)
        self.stats = MemberStats(self.settings.task_types)
        self.heldout = HeldOutProbe(self.domain, self.settings)
        self.league.add_listener(self.adapters)
        self.league.add_listener(self.stats)
        self.league.trained, self.league.describer = self.adapters, self.stats
        try:
            self._found(population)
        except BaseException:
            self.close()  # no sandbox processes outlive a failed construction
            raise

    def default_replacement(self) -> ReplacementConfig:
        """The replacement settings when none are given: the evolution core's defaults."""
        return ReplacementConfig()

    def _found(self, genome: PopulationSettings) -> None:
        """Found the members of every role, their genomes drawn from one seeded generator."""
        init_rng = torch.Generator().manual_seed(generator_seed(self.seed))
        for role in self.roles:
            for _ in range(genome.size_of(role)):
                founder = LoRAGenome.random(
                    self.host.module_shapes,
                    rank=genome.rank,
                    alpha=genome.alpha,
                    rng=init_rng,
                    init=genome.init,
                    std=genome.init_std,
                    base_model=str(self.host.model_path),
                )
                self.league.found(role, founder)

    def _play(
        self,
        pairs: Sequence[tuple[str, str]],
        step: int,
        *,
        proposer_role: str,
        solver_role: str,
        frozen: Collection[str] = (),
    ) -> tuple[list[PlayedTask], dict[str, StepStats]]:
        """Propose, verify, solve, grade and learn for ``(proposer, solver)`` pairs; the
        ``frozen`` adapters (hall-of-fame members) play but do not learn."""
        propose_seed, solve_seed = (int(x) for x in self.np_rng.integers(0, 2**31 - 1, size=2))
        clock = time.perf_counter()
        phases: dict[str, float] = {}

        def lap(name: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            phases[name] = now - clock
            clock = now

        played = propose(
            self.host,
            pairs,
            self.buffer,
            self.settings,
            self.sampling,
            domain=self.domain,
            step=step,
            py_rng=self.py_rng,
            seed=propose_seed,
        )
        lap("propose")
        verify(played, self.domain, self._sandbox(), self.buffer)
        lap("verify")
        solve(self.host, played, self.settings, self.sampling, domain=self.domain, seed=solve_seed)
        lap("solve")
        grade(played, self.domain, self._sandbox(), self.teacher_reward, self.student_reward)
        self.probe_tokens = grade_base(self.domain, self._sandbox(), played)
        lap("grade")
        stats = learn(
            self.learner,
            played,
            proposer_role=proposer_role,
            solver_role=solver_role,
            frozen=frozen,
            pool_across_adapters=self.pool_across_adapters,
        )
        lap("learn")
        self.phase_seconds = phases
        return played, stats

    def _record(
        self,
        step: int,
        start: float,
        played: Sequence[PlayedTask],
        learner_stats: dict[str, StepStats],
        roles: Sequence[str],
        *,
        births: Sequence[str] = (),
        deaths: Sequence[str] = (),
    ) -> StepRecord:
        """Close the step: metrics and rows as the run directory expects, step count advanced."""
        metrics: dict[str, float] = {"step": step}
        metrics.update(step_metrics(played, self.settings.task_types))
        best = self.league.best_rating()
        if best is not None:
            metrics["best_rating"] = best
        metrics.update(self.league.diversity(roles))
        metrics.update(self.league.hypervolumes(roles))
        metrics["coverage"] = float(len(self.signatures))
        metrics["buffer_size"] = buffer_size(self.buffer)
        settled = {adapter: s.result() for adapter, s in learner_stats.items()}
        metrics["learner_skipped"] = float(sum(s.skipped for s in settled.values()))
        metrics.update(learning_metrics(played, settled))
        metrics.update(self._task_space_metrics(played))
        if self.heldout.due(step):
            solvers = [ind.id for ind in self.population.members(self.solver_role)]
            metrics.update(self.heldout.measure(self.host, self._sandbox(), solvers))
        self.step_count += 1
        metrics["seconds"] = time.perf_counter() - start
        for phase, seconds in self.phase_seconds.items():
            metrics[f"seconds_{phase}"] = seconds
        # the rest: matchmaking, ratings, replacement, snapshots and this bookkeeping
        metrics["seconds_other"] = metrics["seconds"] - sum(self.phase_seconds.values())
        rows = self.league.rating_rows(step)
        accounts = member_accounting(played, settled, [row["id"] for row in rows])
        ratings = [{**row, **accounts[row["id"]]} for row in rows]
        return StepRecord(
            step=step,
            metrics=metrics,
            tasks=task_rows(played, step, self.domain.measure_keys),
            ratings=ratings,
            births=list(births),
            deaths=list(deaths),
        )

    def _task_space_metrics(self, played: Sequence[PlayedTask]) -> dict[str, float]:
        """Coverage cells (cumulative and new), the base model's mean solve rate on this step's
        valid tasks and the students' lift over it (``base_lift``), the probe's tokens, and the
        mean of the domain's summary measures over valid tasks (``domain/<name>/<key>``)."""
        cells = (self.domain.behaviour_cell(item) for item in played if item.valid)
        fresh = {cell for cell in cells if cell is not None}
        new = fresh - self.cells
        self.cells |= fresh
        probed = [i.base_solve_rate for i in played if i.base_solve_rate is not None]
        metrics = {
            "coverage_cells": float(len(self.cells)),
            "new_cells": float(len(new)),
            "probe_tokens": float(self.probe_tokens),
        }
        if probed:
            metrics["base_solve_rate"] = float(np.mean(probed))
        lift = base_lift(played)
        if lift is not None:
            metrics["base_lift"] = lift
        name = domain_name(self.domain)
        for key in self.domain.summary_keys:
            values = [i.measures[key] for i in played if i.measures]
            if values:
                metrics[summary_column(name, key)] = float(np.mean(values))
        return metrics

    def state_dict(self) -> dict[str, Any]:
        """Genomes (trained weights from the host), optimizer states, task buffer, population,
        lineage, coverage (signatures and behaviour cells), step count, every RNG state, the
        evolution loop's state, and the domain's own state when it keeps one (its optional
        ``state_dict``)."""
        domain = save_domain_state(self.domain)
        league = self.league.state_dict()
        members = {
            "population": league["population"],
            "lineage": league["lineage"],
            "ratings": league["ratings"],
            "learner": self.learner.state_dict(),
            "stats": self.stats.state_dict(),
            "hv_reference": league["hv_reference"],
        }
        return {
            **({} if domain is None else {"domain": domain}),
            "step_count": self.step_count,
            "members": members,
            "buffer": self.buffer.state_dict(),
            "signatures": sorted(self.signatures),
            "cells": sorted(self.cells),
            "rng": {
                "python": self.py_rng.getstate(),
                "numpy": self.np_rng.bit_generator.state,
                "torch": torch.get_rng_state(),
            },
            "evolution": league["evolution"],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned; the host's adapters follow the population."""
        self.step_count = int(state["step_count"])
        members = state["members"]
        self.stats.load_state_dict(members["stats"])  # before the league describes its members
        self.league.load_state_dict({**members, "evolution": state["evolution"]})
        self.adapters.restore(self.population.living)
        self.learner.load_state_dict(members["learner"])
        self.buffer.load_state_dict(state["buffer"])
        self.signatures = set(state["signatures"])
        self.cells = set(state.get("cells", ()))  # checkpoints from before cells were kept
        self.py_rng.setstate(state["rng"]["python"])
        self.np_rng.bit_generator.state = state["rng"]["numpy"]
        torch.set_rng_state(state["rng"]["torch"])
        if "domain" in state:
            load_domain_state(self.domain, state["domain"])

    def play_matches(
        self, pairs: Sequence[tuple[LoRAGenome, LoRAGenome]], *, seed: int
    ) -> list[float]:
        """Play ``(proposer genome, solver genome)`` matches outside the run: the proposer
        writes its batch of tasks from a fresh task buffer, the solver answers; nothing learns
        and no state of the run changes. Returns each solver's score in [0, 1] as the ratings
        see it (:func:`redqueen.fitness.match_score` under the league's invalid-task policy)."""
        seed = generator_seed(check_seed(seed, f"{type(self).__name__}.play_matches"))
        keys = [(f"match-{i}-proposer", f"match-{i}-solver") for i in range(len(pairs))]
        for (proposer, solver), (genome_p, genome_s) in zip(keys, pairs, strict=True):
            self.host.add_adapter(proposer, genome_p)
            self.host.add_adapter(solver, genome_s)
        try:
            buffer = TaskBuffer(
                capacity=self.settings.buffer_size, seed=self.domain.seed_examples()
            )
            played = propose(
                self.host,
                keys,
                buffer,
                self.settings,
                self.sampling,
                domain=self.domain,
                step=0,
                py_rng=random.Random(seed),
                seed=seed,
            )
            verify(played, self.domain, self._sandbox(), buffer)
            solve(
                self.host,
                played,
                self.settings,
                self.sampling,
                domain=self.domain,
                seed=generator_seed(seed + 1),
            )
            grade(played, self.domain, self._sandbox(), self.teacher_reward, self.student_reward)
        finally:
            for proposer, solver in keys:
                self.host.remove_adapter(proposer)
                self.host.remove_adapter(solver)
        scores = {
            (t, s): match_score(rates, invalid=self.league.invalid_tasks)
            for t, s, rates in match_outcomes(played, keys)
        }
        return [scores.get(key, 1.0) for key in keys]

    def _sandbox(self) -> Sandbox:
        """The sandbox, while the environment is open.

        Raises:
            RuntimeError: If :meth:`close` was called.
        """
        if self.executor is None:
            raise RuntimeError(f"{type(self).__name__} is closed")
        return self.executor

    def close(self) -> None:
        """Shut the sandbox executor down (safe to call twice)."""
        executor, self.executor = self.executor, None
        if executor is not None:
            executor.close()


def _default_domain() -> TaskDomain[Any, Any, Any]:
    """The code domain with its default settings (asking the package registers it)."""
    from redqueen.environments import make_domain

    return make_domain("code")
