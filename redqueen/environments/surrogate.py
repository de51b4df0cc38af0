"""A cheap surrogate of teacher/student co-evolution: LoRA genomes on a small frozen MLP.

No LLM and no sandbox: the "base model" is a small frozen tanh MLP whose three linear layers
carry each member's LoRA factors, so the same genomes, operators, selection schemes, ratings and
lineage as the real environment are exercised in milliseconds per step. A teacher maps random
probe vectors ("prompts") to tasks ``x`` in ``(-1, 1)^d`` (a task is invalid when the pre-tanh
output leaves the domain); a student answers ``y`` and is right when ``|y - f*(x)|_inf < tol``
for a fixed hidden target ``f*``. Rewards have the real shapes (teacher ``1 - rho``, student
+1 / -0.5 / -1), and one gradient step per step stands in for the RL update: students fit the
tasks they saw, teachers move toward tasks their student solves half the time.

Ratings only compare members with each other, so every step also logs an objective measure:
``heldout_solve_rate``, the students' mean solve rate on a fixed held-out task set, the frozen
base model's on the same set (``base_heldout_solve_rate``) and their difference, ``heldout_lift``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from pydantic import Field

from redqueen.environments._league_view import LeagueView
from redqueen.environments._surrogate_core import (
    FrozenMLP,
    league_state,
    load_league_state,
    one_thread,
    surrogate_league,
)
from redqueen.environments.base import ENVIRONMENTS, Environment, StepRecord, check_arguments
from redqueen.evo import Individual, descriptor_matrix
from redqueen.fitness import Objectives, PFSPMatchmaker, StudentReward, TeacherReward, match_score
from redqueen.genomes import LoRAGenome, check_seed, generator_seed
from redqueen.settings import (
    ClusterSettings,
    MatchmakingSettings,
    MatchSettings,
    ObjectiveSettings,
    PopulationSettings,
    ReplacementConfig,
    Settings,
    StudentRewardSettings,
    TeacherRewardSettings,
)

ROLES = ("teacher", "student")


class SurrogateOptions(Settings):
    """The surrogate's own settings (``environment.options``).

    Attributes:
        dim: Task dimension ``d`` (input and output of the MLP).
        hidden: Hidden width of the MLP.
        tolerance: Max-norm error below which an answer is correct.
        answer_noise: Std of the answer noise (sampling temperature stand-in).
        domain: Pre-tanh bound beyond which a task is invalid.
        learn: Whether members take one gradient step per step.
        lr: Learning rate of that step.
    """

    dim: int = Field(4, ge=1, le=4096)
    hidden: int = Field(16, ge=1, le=65_536)
    tolerance: float = Field(0.5, gt=0)
    answer_noise: float = Field(0.1, ge=0)
    domain: float = Field(3.0, gt=0)
    learn: bool = True
    lr: float = Field(0.1, ge=0)


@ENVIRONMENTS.register("surrogate")
class SurrogateEnv(LeagueView, Environment):
    """Teachers propose vector tasks, students answer them; LoRA genomes on a frozen torch MLP.

    Every argument is a settings object; without one, the surrogate's own defaults
    (:attr:`default_population`, :attr:`default_match`) or the object's defaults apply.

    Args:
        population: Teachers, students and the founders' genomes.
        match: Tasks each teacher proposes per step, noisy answers the matched student gives per task.
        options: The surrogate's own settings (:class:`SurrogateOptions`).
        replacement: Replacement, newborn and snapshot settings (default: the evolution core's
            defaults); the evolution loop decides every birth and death.
        matchmaking: PFSP matchmaking, including the share of opponents drawn from the hall of
            fame (default: no hall of fame).
        objectives: Objective names per role (e.g. ``("rating", "teacher_reward")``).
        teacher_reward: Teacher reward (default PopuLoRA's).
        student_reward: Student reward.
        cluster: ``workers`` Ray actors play the matches and compute the updates, each holding a
            replica of the frozen model (``0``: this process), on ``ray_address`` (``None``: a
            local cluster). Results do not depend on it.
        seed: Seeds the frozen model, the founders and every random choice: any integer
            (taken modulo ``2**64``, :func:`redqueen.genomes.generator_seed`).

    Raises:
        TypeError: If an argument is not of its settings type (a mapping is not a settings
            object: ``PopulationSettings(teachers=4)`` is), or ``seed`` is not an integer.
        ValueError: If a role is empty.
    """

    roles: ClassVar[tuple[str, ...]] = ROLES
    objective_names: ClassVar[Mapping[str, tuple[str, ...]] | None] = {
        "teacher": ("complexity", "novelty", "solve_rate", "teacher_reward", "valid_share"),
        "student": ("error", "novelty", "solve_rate", "student_reward"),
    }
    #: Population when none is given: eight of each role, small gaussian genomes.
    default_population: ClassVar[PopulationSettings] = PopulationSettings(
        teachers=8, students=8, rank=4, alpha=8.0, init="gaussian", init_std=0.05
    )
    #: Per-step budget when none is given.
    default_match: ClassVar[MatchSettings] = MatchSettings(tasks_per_teacher=8, answers_per_task=4)

    def __init__(
        self,
        *,
        population: PopulationSettings | None = None,
        match: MatchSettings | None = None,
        options: SurrogateOptions | None = None,
        replacement: ReplacementConfig | None = None,
        matchmaking: MatchmakingSettings | None = None,
        objectives: ObjectiveSettings | None = None,
        teacher_reward: TeacherRewardSettings | None = None,
        student_reward: StudentRewardSettings | None = None,
        cluster: ClusterSettings | None = None,
        seed: int = 0,
    ) -> None:
        check_arguments(
            type(self).__name__,
            population=(population, PopulationSettings),
            match=(match, MatchSettings),
            options=(options, SurrogateOptions),
            replacement=(replacement, ReplacementConfig),
            matchmaking=(matchmaking, MatchmakingSettings),
            objectives=(objectives, ObjectiveSettings),
            teacher_reward=(teacher_reward, TeacherRewardSettings),
            student_reward=(student_reward, StudentRewardSettings),
            cluster=(cluster, ClusterSettings),
        )
        seed = check_seed(seed, type(self).__name__)
        population = population or self.default_population
        match = match or self.default_match
        opts = self.options = options or SurrogateOptions()
        self.check_settings(population, replacement)
        dim = opts.dim
        self.dim, self.n_tasks, self.n_answers = dim, match.tasks_per_teacher, match.answers_per_task
        self.tolerance, self.answer_noise, self.domain = opts.tolerance, opts.answer_noise, opts.domain
        self.learn, self.lr, self.seed = opts.learn, opts.lr, seed
        self.teacher_reward = TeacherReward.from_settings(teacher_reward or TeacherRewardSettings())
        self.student_reward = StudentReward.from_settings(student_reward or StudentRewardSettings())
        wanted = objectives or ObjectiveSettings()
        self.objectives = {role: Objectives(wanted.of(role)) for role in ROLES}

        gen = torch.Generator().manual_seed(generator_seed(self.seed))
        self.mlp = FrozenMLP(inputs=dim, hidden=opts.hidden, outputs=dim, gen=gen)
        self.shapes = self.mlp.shapes
        self.target = 2.0 * torch.randn(dim, dim, generator=gen) / dim**0.5  # f*(x) = sin(W x)
        self.benchmark = torch.rand(64, dim, generator=gen) * 2 - 1  # held-out tasks for evaluate()

        matchmaker = PFSPMatchmaker.from_settings(matchmaking or MatchmakingSettings())
        self.league = surrogate_league(roles=ROLES, replacement=replacement, matchmaker=matchmaker,
                                       objectives=self.objectives, seed=self.seed)
        self.torch_rng = torch.Generator().manual_seed(generator_seed(self.seed + 1))
        self.signatures: set[str] = set()
        self.step_count = 0
        self._skipped_updates = 0  # of the last step
        genome = population.genome()
        for role in ROLES:
            self.league.found_many(role, population.size_of(role),
                                   lambda: LoRAGenome.random(self.shapes, rank=genome.rank, alpha=genome.alpha,
                                                             rng=gen, init=genome.init, std=genome.init_std,
                                                             base_model="surrogate-mlp"))
        self._pool = None
        cluster = cluster or ClusterSettings()
        if cluster.workers > 0:  # replicas rebuild the same frozen model from the same seed
            from redqueen.engine.distributed import ActorMap

            replica = {"population": population.model_copy(update={"teachers": 1, "students": 1}),
                       "options": opts, "seed": seed}
            self._pool = ActorMap(SurrogateEnv, replica, actors=cluster.workers, address=cluster.ray_address)

    # -- the model -------------------------------------------------------------------------
    def forward(self, x: torch.Tensor, genome: LoRAGenome | None,
                factors: Mapping[str, tuple[torch.Tensor, torch.Tensor]] | None = None) -> torch.Tensor:
        """The frozen MLP with ``genome``'s LoRA updates: ``(n, d) -> (n, d)``."""
        return self.mlp(x, genome, factors)

    def solution(self, x: torch.Tensor) -> torch.Tensor:
        """The hidden target ``f*(x) = sin(W x)``."""
        return torch.sin(x @ self.target.T)

    def propose(self, genome: LoRAGenome, probes: torch.Tensor,
                factors: Mapping[str, tuple[torch.Tensor, torch.Tensor]] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """A teacher's tasks from probe vectors: ``(tasks in (-1, 1)^d, pre-tanh outputs)``."""
        pre = self.forward(probes, genome, factors)
        return torch.tanh(pre), pre

    def is_valid(self, pre: torch.Tensor) -> torch.Tensor:
        """A task is valid when every pre-tanh coordinate is finite and within the domain."""
        return torch.isfinite(pre).all(dim=1) & (pre.abs().amax(dim=1) <= self.domain)

    def error(self, genome: LoRAGenome | None, tasks: torch.Tensor) -> torch.Tensor:
        """Max-norm error of a student's (noise-free) answers, one per task (``None``: the base model's)."""
        return (self.forward(tasks, genome) - self.solution(tasks)).abs().amax(dim=1)

    def evaluate(self, genome: LoRAGenome, role: str = "student") -> dict[str, float]:
        """Score a genome without playing a match (for DEAP / pymoo drivers).

        A student is scored on a fixed held-out task set (``solve_rate``, ``error``); a teacher on
        tasks from fixed probes against the living students (``valid_share``, ``teacher_reward``).

        Raises:
            ValueError: On an unknown role.
        """
        with torch.no_grad(), one_thread():
            if role == "student":
                err = self.error(genome, self.benchmark)
                return {"solve_rate": float((err < self.tolerance).float().mean()), "error": float(err.mean())}
            if role == "teacher":
                tasks, pre = self.propose(genome, self.benchmark)
                valid = self.is_valid(pre)
                rewards = []
                for i, task in enumerate(tasks):
                    rho = None
                    if valid[i]:
                        rho = float(np.mean([float(self.error(s.genome, task[None])[0] < self.tolerance)
                                             for s in self.population.members("student")]))
                    rewards.append(self.teacher_reward(bool(valid[i]), rho))
                return {"valid_share": float(valid.float().mean()), "teacher_reward": float(np.mean(rewards))}
        raise ValueError(f"SurrogateEnv.evaluate: unknown role {role!r} (teacher, student)")

    # -- one step --------------------------------------------------------------------------
    def step(self) -> StepRecord:
        """Match, propose, answer, reward, learn, rate, and replace when due."""
        with one_thread():
            return self._step()

    def _step(self) -> StepRecord:
        start, step = time.perf_counter(), self.step_count
        pairs = self.league.pair()
        probes = torch.randn(len(pairs), self.n_tasks, self.dim, generator=self.torch_rng)
        noises = [torch.randn(self.n_answers, self.n_tasks, self.dim, generator=self.torch_rng) for _ in pairs]
        games = self._map("play", [(self.league.genome_of(tid), self.league.genome_of(sid), probe, noise)
                                   for (tid, sid), probe, noise in zip(pairs, probes, noises, strict=True)])
        rows, seen = [], {ind.id: _Seen() for ind in self.population.living}
        for key in {k for pair in pairs for k in pair if k not in seen}:
            seen[key] = _Seen()  # a frozen opponent: recorded, never trained
        for (tid, sid), probe, (tasks, valid, answers, err) in zip(pairs, probes, games, strict=True):
            seen[tid].partner = sid
            statuses = self._statuses(answers, err)
            outcomes: list[float | None] = []  # per task: its solve rate, None when invalid
            for j in range(self.n_tasks):
                ok = bool(valid[j])
                rho = float((statuses[:, j] == "correct").mean()) if ok else None
                outcomes.append(rho)
                reward = self.teacher_reward(ok, rho)
                seen[tid].add(reward, rho, tasks[j] if ok else None, probe[j])
                if rho is not None:  # the task is valid
                    seen[sid].add(float(np.mean([self.student_reward(s) for s in statuses[:, j]])), rho, tasks[j], None)
                rows.append(self._task_row(step, tid, sid, tasks[j], ok, rho))
            self.league.record(tid, sid, outcomes)  # the one match rule: invalid tasks forfeited
        if self.learn:
            self._learn(seen)
        self._describe(seen)
        metrics = self._metrics(step, rows)
        outcome = self.league.finish_step(step)
        metrics["seconds"] = time.perf_counter() - start
        self.step_count += 1
        return StepRecord(step=step, metrics=metrics, tasks=rows, ratings=[dict(row) for row in self.league.rating_rows(step)],
                          births=outcome.births, deaths=outcome.deaths)

    # -- the work of one step, per match and per member (run here or on Ray replicas) ------
    def _map(self, method: str, items: list[tuple]) -> list[Any]:
        if self._pool is None:
            return [getattr(self, method)(*item) for item in items]
        return self._pool.map(method, items)

    def play(self, teacher: LoRAGenome, student: LoRAGenome, probe: torch.Tensor,
             noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One match: the teacher's tasks from ``probe``, the student's noisy answers.

        Returns:
            ``(tasks (t, d), valid (t,), answers (n, t, d), max-norm errors (n, t))``.
        """
        with torch.no_grad(), one_thread():
            tasks, pre = self.propose(teacher, probe)
            valid = self.is_valid(pre)
            answers = self.forward(tasks, student) + self.answer_noise * noise  # (answers, tasks, d)
            err = (answers - self.solution(tasks)).abs().amax(dim=2)
        return tasks, valid, answers, err

    def _statuses(self, answers: torch.Tensor, err: torch.Tensor) -> np.ndarray:
        """Status of each answer, ``(answers, tasks)``: unparseable, correct or wrong."""
        return np.where(~torch.isfinite(answers).all(2).numpy() | (answers.abs().amax(2) > 10).numpy(),
                        "unparseable", np.where((err < self.tolerance).numpy(), "correct", "wrong"))

    def play_matches(self, pairs: Sequence[tuple[LoRAGenome, LoRAGenome]], *, seed: int) -> list[float]:
        """Play ``(teacher genome, student genome)`` matches outside the run (no learning, no
        ratings, no state touched); returns each student's score in [0, 1] as the ratings
        see it (:func:`redqueen.fitness.match_score`: an invalid task is forfeited by the teacher)."""
        gen = torch.Generator().manual_seed(
            generator_seed(check_seed(seed, "SurrogateEnv.play_matches"))
        )
        scores = []
        for teacher, student in pairs:
            probe = torch.randn(self.n_tasks, self.dim, generator=gen)
            noise = torch.randn(self.n_answers, self.n_tasks, self.dim, generator=gen)
            _, valid, answers, err = self.play(teacher, student, probe, noise)
            statuses = self._statuses(answers, err)
            rates = [float((statuses[:, j] == "correct").mean()) if bool(valid[j]) else None
                     for j in range(self.n_tasks)]
            scores.append(match_score(rates, invalid=self.league.invalid_tasks))
        return scores

    #: Largest gradient norm of one member's step; a longer gradient is scaled down to it.
    max_grad_norm = 1.0

    def update(self, role: str, genome: LoRAGenome, partner: LoRAGenome | None,
               probes: list[torch.Tensor], tasks: list[torch.Tensor]) -> LoRAGenome | None:
        """One gradient step of a member on what it met this step.

        The gradient is clipped to :attr:`max_grad_norm`: the teacher's domain penalty is
        quadratic in the pre-tanh outputs, so an unclipped step on a teacher near the domain edge
        overshoots, the next gradient is larger still, and the factors blow up within a few steps.

        Returns:
            The new genome, or ``None`` when the loss or the gradient is not finite (the update
            is skipped and the member keeps its genome).
        """
        with one_thread():
            factors = {n: (a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_())
                       for n, (a, b) in genome.items()}
            if role == "teacher":
                proposed, pre = self.propose(genome, torch.stack(probes), factors)
                err = (self.forward(proposed, partner) - self.solution(proposed)).abs().amax(dim=1)
                p = torch.sigmoid((self.tolerance - err) / (0.1 * self.tolerance))
                penalty = torch.relu(pre.abs() - self.domain).pow(2).mean()
                loss = penalty - 4.0 * (p * (1 - p)).mean()  # tasks solved half the time pay most
            else:
                stacked = torch.stack(tasks)
                loss = (self.forward(stacked, genome, factors) - self.solution(stacked)).pow(2).mean()
            if not torch.isfinite(loss):
                return None
            params = [t for pair in factors.values() for t in pair]
            grads = torch.autograd.grad(loss, params)
            norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
            if not torch.isfinite(norm):
                return None
            step = self.lr * min(1.0, self.max_grad_norm / (float(norm) + 1e-12))
            it = iter(grads)
            return genome.replace(
                {n: ((a - step * next(it)).detach(), (b - step * next(it)).detach()) for n, (a, b) in factors.items()}
            )

    def close(self) -> None:
        """Stop the Ray replicas, if any (safe to call twice)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    # -- learning, statistics, reports -----------------------------------------------------
    def _learn(self, seen: dict[str, _Seen]) -> None:
        """One gradient step per member that played; genomes are replaced, never edited."""
        members = [ind for ind in self.population.living if seen[ind.id].probes or seen[ind.id].tasks]

        def partner_genome(ind: Individual) -> LoRAGenome | None:
            if ind.role != "teacher":
                return None
            partner = seen[ind.id].partner
            assert partner is not None  # a teacher that met tasks was matched with a student
            return self.league.genome_of(partner)

        items = [(ind.role, ind.genome, partner_genome(ind), seen[ind.id].probes, seen[ind.id].tasks)
                 for ind in members]
        self._skipped_updates = 0
        for ind, genome in zip(members, self._map("update", items), strict=True):
            if genome is None:  # non-finite loss or gradient: counted in the step's metrics
                self._skipped_updates += 1
            else:
                ind.genome = genome

    def _describe(self, seen: dict[str, _Seen]) -> None:
        """Objectives, behaviour descriptors and lexicase cases of every living member."""
        from redqueen.fitness import novelty_scores

        all_tasks = [t for r in seen.values() if r.probes for t in r.tasks if t is not None]
        pool = torch.stack(all_tasks) if all_tasks else torch.zeros(1, self.dim)
        for ind in self.population.living:
            record, obj = seen[ind.id], ind.objectives
            if ind.role == "teacher" and record.rewards:
                valid = [t for t in record.tasks if t is not None]
                obj.update(teacher_reward=float(np.mean(record.rewards)), solve_rate=_mean(record.rates),
                           valid_share=len(valid) / len(record.rewards),
                           complexity=float(torch.stack(valid).abs().mean()) if valid else 0.0)
                ind.cases = np.asarray(record.rewards, dtype=float)
            elif ind.role == "student":
                with torch.no_grad():
                    err = self.error(ind.genome, pool)
                ind.cases = (err < self.tolerance).float().numpy()
                obj["error"] = float((err / (err + self.tolerance)).mean())
                if record.rewards:
                    obj.update(student_reward=float(np.mean(record.rewards)), solve_rate=_mean(record.rates))
            for key in ("teacher_reward", "valid_share", "complexity") if ind.role == "teacher" else ("student_reward",):
                obj.setdefault(key, 0.0)
            obj.setdefault("solve_rate", 0.0)
            if ind.cases is None:
                ind.cases = np.zeros(self.n_tasks)
            second = obj["complexity"] if ind.role == "teacher" else obj["error"]
            ind.descriptor = np.array([obj["solve_rate"], second])
        for role in ROLES:
            members = self.population.members(role)
            scores = novelty_scores(descriptor_matrix(members), k=3)
            for ind, score in zip(members, scores, strict=True):
                ind.objectives["novelty"] = float(score)

    def _task_row(self, step: int, tid: str, sid: str, task: torch.Tensor, valid: bool, rho: float | None) -> dict[str, Any]:
        signature = hashlib.sha1(np.round(task.numpy(), 1).tobytes()).hexdigest()[:10]
        if valid:
            self.signatures.add(signature)
        return {"step": step, "teacher": tid, "student": sid, "task_type": "vector", "valid": valid,
                "reason": None if valid else "out_of_domain",
                "complexity": float(task.abs().mean()) if valid else None, "solve_rate": rho,
                "signature": signature}

    def heldout_solve_rates(self) -> tuple[float, float]:
        """The living students' mean solve rate on the held-out task set (noise-free answers,
        as :meth:`evaluate` scores them) and the frozen base model's (no adapter) on the same set."""
        with torch.no_grad():
            base = float((self.error(None, self.benchmark) < self.tolerance).float().mean())
            rates = [float((self.error(s.genome, self.benchmark) < self.tolerance).float().mean())
                     for s in self.population.members("student")]
        return _mean(rates), base

    def _metrics(self, step: int, rows: list[dict[str, Any]]) -> dict[str, float]:
        valid = [r for r in rows if r["valid"]]
        diversity = self.league.diversity(ROLES)
        heldout, base = self.heldout_solve_rates()
        return {
            "step": float(step),
            "heldout_solve_rate": heldout,
            "base_heldout_solve_rate": base,
            "heldout_lift": heldout - base,
            "solve_rate": _mean([r["solve_rate"] for r in valid]),
            "teacher_reward": _mean([self.teacher_reward(r["valid"], r["solve_rate"]) for r in rows]),
            "valid_share": len(valid) / max(1, len(rows)),
            "best_rating": max(self.ratings.lcb(m.id) for m in self.population.living),
            "genotypic_diversity": diversity["genotypic_diversity"],
            "behavioural_diversity": diversity["behavioural_diversity"],
            "coverage": float(len(self.signatures)),
            "phylogenetic_diversity": diversity["phylogenetic_diversity"],
            **self.evolution.archive_metrics(),
            **self.league.hypervolumes(ROLES),
            "learner_skipped": float(self._skipped_updates),
        }

    # -- checkpoints -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Genomes, lineage, ratings, coverage, step count and every RNG state."""
        return {"seed": self.seed, "step_count": self.step_count, **league_state(self.league),
                "torch_rng": self.torch_rng.get_state(), "signatures": sorted(self.signatures),
                "hv_reference": dict(self.league.hv_reference)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned.

        Raises:
            ValueError: If the checkpoint was made with another seed (another frozen model).
        """
        if state["seed"] != self.seed:
            raise ValueError(f"SurrogateEnv: checkpoint seed {state['seed']} != environment seed {self.seed}")
        self.step_count = int(state["step_count"])
        load_league_state(self.league, state)
        self.torch_rng.set_state(state["torch_rng"])
        self.signatures = set(state["signatures"])
        self.league.hv_reference = {k: list(v) for k, v in state.get("hv_reference", {}).items()}


class _Seen:
    """What one member met during a step: rewards, solve rates, tasks, probes, partner."""

    def __init__(self) -> None:
        self.rewards: list[float] = []
        self.rates: list[float] = []
        self.tasks: list[torch.Tensor | None] = []  # None: a teacher's invalid task
        self.probes: list[torch.Tensor] = []
        self.partner: str | None = None

    def add(self, reward: float, rate: float | None, task: torch.Tensor | None, probe: torch.Tensor | None) -> None:
        self.rewards.append(float(reward))
        if rate is not None:
            self.rates.append(float(rate))
        if task is not None or probe is not None:
            self.tasks.append(task)
        if probe is not None:
            self.probes.append(probe)


def _mean(values: Sequence[float | None]) -> float:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else 0.0
