"""The environment that plays a registered surrogate game with LoRA genomes on a frozen MLP."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from redqueen.environments._league_view import LeagueView
from redqueen.environments._surrogate_core import (
    FrozenMLP,
    league_state,
    load_league_state,
    one_thread,
    surrogate_league,
)
from redqueen.environments.base import ENVIRONMENTS, Environment, StepRecord, check_arguments
from redqueen.environments.games._base import GAMES, Game
from redqueen.environments.games._measures import objective_measures
from redqueen.environments.games._options import GamesOptions
from redqueen.environments.games._reinforce import reinforce_step
from redqueen.evo import descriptor_matrix
from redqueen.fitness import (
    Objectives,
    PFSPMatchmaker,
    StudentReward,
    TeacherReward,
    behavioural_diversity,
    novelty_scores,
)
from redqueen.genomes import LoRAGenome, check_seed, generator_seed
from redqueen.settings import (
    MatchmakingSettings,
    MatchSettings,
    ObjectiveSettings,
    PopulationSettings,
    ReplacementConfig,
    StudentRewardSettings,
    TeacherRewardSettings,
)

ROLES = ("teacher", "student")
#: Monte Carlo draws of the played payoff (ratings' cases, the CIAO matrix); score differences
#: below ``1 / sqrt(PAYOFF_DRAWS)`` count as ties in the cycling detector.
PAYOFF_DRAWS = 512
_PROBE_WIDTH = 4


@ENVIRONMENTS.register("games")
class GamesEnv(LeagueView, Environment):
    """Teachers and students play a surrogate game; objective measures beside subjective ones.

    Each member's genome maps through a small frozen tanh MLP (one fixed probe input) to a
    point in ``R^dim``. A teacher samples ``tasks_per_teacher`` tasks around its point, its
    matched student ``answers_per_task`` answers around its own per task (std
    ``exploration``); the game's rule says which answers are correct. Rewards are PopuLoRA's
    (student per answer; teacher ``1 - rho`` inside (0, 1), the configured value at the edges,
    mixed with the student's reward by the game's ``coupling``; a game may pay teachers its own
    way, :meth:`Game.teacher_pay`). Members learn from these
    samples alone: one REINFORCE step per step, the score-function gradient of the sampled
    actions under the Gaussian policy, advantages whitened per member (no gradient of the
    game's rule). Births and deaths, ratings, PFSP with the hall of fame, the match rule,
    lineage and checkpoint state go through one :class:`redqueen.evo.League` (:attr:`league`),
    as in every environment.

    Every step logs the objective measures the game knows (``objective_skill``,
    ``objective_difficulty``, ``skill_dim_<i>``) and the pathology detectors of
    :mod:`redqueen.environments.games.detectors` (``disengagement``, ``cycling`` over the hall
    of fame's snapshots, ``focusing``, ``collapse`` over the last ``window`` steps).

    Every argument is a settings object; without one, the environment's own defaults
    (:attr:`default_population`, :attr:`default_match`) or the object's defaults apply.

    Args:
        population: Teachers, students and the founders' genomes.
        match: Tasks each teacher samples per match, answers the student samples per valid task.
        options: The game, its settings and the environment's own (:class:`GamesOptions`).
        replacement: Replacement, newborn and snapshot settings (the evolution loop's).
        matchmaking: PFSP matchmaking, including the hall-of-fame share.
        objectives: Objective names per role.
        teacher_reward: Teacher reward (default PopuLoRA's).
        student_reward: Student reward.
        seed: Seeds the frozen model, the founders and every random choice: any integer
            (taken modulo ``2**64``, :func:`redqueen.genomes.generator_seed`).
        game: A game already built, played instead of the one ``options`` names.

    Raises:
        TypeError: If an argument is not of its settings type (a mapping is not a settings
            object: ``PopulationSettings(teachers=4)`` is), or ``seed`` is not an integer.
        ValueError: Naming the setting, when a role is empty.
    """

    roles: ClassVar[tuple[str, ...]] = ROLES
    objective_names: ClassVar[Mapping[str, tuple[str, ...]] | None] = {
        "teacher": ("novelty", "solve_rate", "teacher_reward"),
        "student": ("novelty", "solve_rate", "student_reward"),
    }
    #: Population when none is given: six of each role, rank-2 gaussian genomes.
    default_population: ClassVar[PopulationSettings] = PopulationSettings(
        teachers=6, students=6, rank=2, alpha=4.0, init="gaussian", init_std=0.1
    )
    #: Per-step budget when none is given.
    default_match: ClassVar[MatchSettings] = MatchSettings(tasks_per_teacher=8, answers_per_task=4)

    def __init__(
        self,
        *,
        population: PopulationSettings | None = None,
        match: MatchSettings | None = None,
        options: GamesOptions | None = None,
        replacement: ReplacementConfig | None = None,
        matchmaking: MatchmakingSettings | None = None,
        objectives: ObjectiveSettings | None = None,
        teacher_reward: TeacherRewardSettings | None = None,
        student_reward: StudentRewardSettings | None = None,
        seed: int = 0,
        game: Game | None = None,
    ) -> None:
        check_arguments(
            type(self).__name__,
            population=(population, PopulationSettings),
            match=(match, MatchSettings),
            options=(options, GamesOptions),
            replacement=(replacement, ReplacementConfig),
            matchmaking=(matchmaking, MatchmakingSettings),
            objectives=(objectives, ObjectiveSettings),
            teacher_reward=(teacher_reward, TeacherRewardSettings),
            student_reward=(student_reward, StudentRewardSettings),
            game=(game, Game),
        )
        seed = check_seed(seed, type(self).__name__)
        population = population or self.default_population
        match = match or self.default_match
        opts = self.options = options or GamesOptions()
        self.check_settings(population, replacement)
        self.game = game if game is not None else GAMES[opts.game](**opts.game_params)
        self.game_name = next(
            (n for n, cls in GAMES.items() if type(self.game) is cls), type(self.game).__name__
        )
        self.n_tasks, self.n_answers = match.tasks_per_teacher, match.answers_per_task
        self.exploration, self.domain, self.learn = opts.exploration, opts.domain, opts.learn
        self.lr, self.max_grad_norm = opts.lr, opts.max_grad_norm
        self.window, self.seed = opts.window, seed
        self.teacher_reward = TeacherReward.from_settings(teacher_reward or TeacherRewardSettings())
        self.student_reward = StudentReward.from_settings(student_reward or StudentRewardSettings())
        wanted = objectives or ObjectiveSettings()
        self.objectives = {role: Objectives(wanted.of(role)) for role in ROLES}

        gen = torch.Generator().manual_seed(generator_seed(self.seed))
        self.mlp = FrozenMLP(inputs=_PROBE_WIDTH, hidden=opts.hidden, outputs=self.game.dim, gen=gen)
        self.probe = torch.randn(1, _PROBE_WIDTH, generator=gen)
        matchmaker = PFSPMatchmaker.from_settings(matchmaking or MatchmakingSettings())
        self.league = surrogate_league(roles=ROLES, replacement=replacement, matchmaker=matchmaker,
                                       objectives=self.objectives, seed=self.seed)
        self.torch_rng = torch.Generator().manual_seed(generator_seed(self.seed + 1))
        self.step_count = 0
        self.difficulty_history: list[float] = []
        self._frozen_points: dict[str, torch.Tensor] = {}  # hall-of-fame genomes never change
        genome = population.genome()

        def founder() -> LoRAGenome:
            return LoRAGenome.random(self.mlp.shapes, rank=genome.rank, alpha=genome.alpha, rng=gen,
                                     init=genome.init, std=genome.init_std, base_model="surrogate-games-mlp")

        for role in ROLES:
            self.league.found_many(role, population.size_of(role), founder)
        self.origin = self.points("student").mean(0)  # where the founding students stand

    # -- the model -------------------------------------------------------------------------
    def point(
        self,
        genome: LoRAGenome,
        factors: Mapping[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
    ) -> torch.Tensor:
        """Where ``genome`` stands in the game: the frozen MLP of the fixed probe, ``(dim,)``."""
        return self.mlp(self.probe, genome, factors)[0]

    def points(self, role: str) -> torch.Tensor:
        """Points of the living members of ``role``, ``(m, dim)``."""
        with torch.no_grad():
            return torch.stack([self.point(m.genome) for m in self.population.members(role)])

    def point_of(self, key: str) -> torch.Tensor:
        """The point of a living member or of a frozen one (``"<id>@<step>"``, computed once)."""
        if key in self.population:
            with torch.no_grad():
                return self.point(self.population.get(key).genome)
        if key not in self._frozen_points:
            with torch.no_grad():
                self._frozen_points[key] = self.point(self.evolution.hall.get(key).genome)
        return self._frozen_points[key]

    def played(self, students: torch.Tensor, teachers: torch.Tensor) -> torch.Tensor:
        """Expected scores ``(t, s)`` of students at ``students`` against teachers at ``teachers``
        in the game as it is played here, with the play noise ``exploration``
        (:meth:`Game.played_score`, ``PAYOFF_DRAWS`` common random draws; deterministic)."""
        return self.game.played_score(
            students, teachers, noise=self.exploration, draws=PAYOFF_DRAWS, seed=self.seed
        )

    # -- one step --------------------------------------------------------------------------
    def step(self) -> StepRecord:
        """Match, sample tasks and answers, reward, learn, rate, measure, and replace when due."""
        with one_thread():
            return self._step()

    def _step(self) -> StepRecord:
        start, step = time.perf_counter(), self.step_count
        pairs = self.league.pair()
        centres = {key: self.point_of(key) for key in {k for pair in pairs for k in pair}}
        samples: dict[str, tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
        rows: list[dict[str, Any]] = []
        rates: list[float] = []
        for tid, sid in pairs:
            rates.extend(self._match(step, tid, sid, centres, samples, rows))
        informative = self._learn(samples) if self.learn else 0.0
        points = {role: self.points(role) for role in ROLES}
        self._describe(samples, points)
        metrics = self._metrics(step, rows, rates, informative, points)
        outcome = self.league.finish_step(step)
        metrics["seconds"] = time.perf_counter() - start
        self.step_count += 1
        return StepRecord(
            step=step,
            metrics=metrics,
            tasks=rows,
            ratings=[dict(row) for row in self.league.rating_rows(step)],
            births=outcome.births,
            deaths=outcome.deaths,
        )

    def _match(
        self,
        step: int,
        tid: str,
        sid: str,
        centres: Mapping[str, torch.Tensor],
        samples: dict[str, tuple[list[torch.Tensor], list[torch.Tensor]]],
        rows: list[dict[str, Any]],
    ) -> list[float]:
        """One teacher-student match: sample tasks and answers, pay both, record the outcome in
        the league; adds each side's samples and the task rows, returns the valid tasks' rates."""
        tasks = centres[tid] + self.exploration * torch.randn(
            self.n_tasks, self.game.dim, generator=self.torch_rng
        )
        answers = centres[sid] + self.exploration * torch.randn(
            self.n_answers, self.n_tasks, self.game.dim, generator=self.torch_rng
        )
        valid = torch.isfinite(tasks).all(1) & (tasks.abs().amax(1) <= self.domain)
        correct = self.game.success(answers, tasks, self.torch_rng)  # (answers, tasks)
        paid = torch.where(correct, self.student_reward.correct, self.student_reward.wrong)
        ok_all, rho_all = valid.tolist(), correct.float().mean(0).tolist()
        student_paid = paid.mean(0).tolist()
        match_rates: list[float] = []
        teacher_paid: list[float] = []
        for j, ok in enumerate(ok_all):
            rho = rho_all[j] if ok else None
            reward = self.teacher_reward(ok, rho)
            if ok:
                reward = self.game.teacher_pay(reward, rho_all[j], student_paid[j])
                match_rates.append(rho_all[j])
            teacher_paid.append(reward)
            rows.append(
                {
                    "step": step,
                    "teacher": tid,
                    "student": sid,
                    "task_type": self.game_name,
                    "valid": ok,
                    "reason": None if ok else "out_of_domain",
                    "complexity": self.game.difficulty(tasks[j : j + 1]) if ok else None,
                    "solve_rate": rho,
                    "teacher_reward": reward,
                }
            )
        _add(samples, tid, tasks, torch.tensor(teacher_paid))
        _add(samples, sid, answers[:, valid].reshape(-1, self.game.dim), paid[:, valid].reshape(-1))
        # Invalid (out-of-domain) tasks are forfeited by the teacher: the one match rule.
        self.league.record(tid, sid, [rho_all[j] if ok else None for j, ok in enumerate(ok_all)])
        return match_rates

    def _learn(self, samples: Mapping[str, tuple[list[torch.Tensor], list[torch.Tensor]]]) -> float:
        """One REINFORCE step per living member that played; returns the informative share
        (samples whose whitened advantage is non-zero). Frozen opponents are never trained."""
        informative, total = 0, 0
        for ind in self.population.living:
            if ind.id not in samples:
                continue
            actions, rewards = (
                torch.cat(samples[ind.id][0]),
                torch.cat(samples[ind.id][1]),
            )  # (m, dim), (m,)
            total += rewards.numel()
            spread = rewards.std(unbiased=False) if rewards.numel() > 1 else torch.tensor(0.0)
            if spread < 1e-8:
                continue  # every sample paid the same: no signal (as in the code game)
            advantage = (rewards - rewards.mean()) / spread
            informative += int((advantage != 0).sum())
            ind.genome = reinforce_step(
                ind.genome,
                lambda g, f: self.point(g, f),
                actions,
                advantage,
                exploration=self.exploration,
                lr=self.lr,
                max_grad_norm=self.max_grad_norm,
            )
        return informative / total if total else 0.0

    def _describe(
        self,
        samples: Mapping[str, tuple[list[torch.Tensor], list[torch.Tensor]]],
        points: Mapping[str, torch.Tensor],
    ) -> None:
        """Objectives, lexicase cases (scores against every living opponent) and descriptors."""
        teachers, students = points["teacher"], points["student"]
        scores = self.played(students, teachers)  # (teachers, students)
        for role in ROLES:
            for i, ind in enumerate(self.population.members(role)):
                rewards = torch.cat(samples[ind.id][1]) if ind.id in samples else torch.zeros(0)
                key = f"{role}_reward"
                ind.objectives[key] = (
                    float(rewards.mean()) if rewards.numel() else ind.objectives.get(key, 0.0)
                )
                ind.cases = (
                    (1.0 - scores[i] if role == "teacher" else scores[:, i]).numpy().astype(float)
                )
                ind.objectives["solve_rate"] = float(
                    1.0 - ind.cases.mean() if role == "teacher" else ind.cases.mean()
                )
                ind.descriptor = points[role][i].numpy().astype(float)
            members = self.population.members(role)
            for ind, score in zip(
                members,
                novelty_scores(descriptor_matrix(members), k=3),
                strict=True,
            ):
                ind.objectives["novelty"] = float(score)

    def _metrics(
        self,
        step: int,
        rows: list[dict[str, Any]],
        rates: list[float],
        informative: float,
        points: Mapping[str, torch.Tensor],
    ) -> dict[str, float]:
        students, teachers = points["student"], points["teacher"]
        difficulty = self.game.difficulty(teachers)
        self.difficulty_history = [*self.difficulty_history, difficulty][-self.window :]
        progress = (students.mean(0) - self.origin).numpy()
        diversity = [
            behavioural_diversity(descriptor_matrix(self.population.members(r)))
            for r in ROLES
        ]
        return {
            "step": float(step),
            "solve_rate": float(np.mean(rates)) if rates else 0.0,
            "teacher_reward": float(np.mean([r["teacher_reward"] for r in rows])),
            "valid_share": len(rates) / max(1, len(rows)),
            "informative_share": informative,
            "best_rating": max(self.ratings.lcb(m.id) for m in self.population.living),
            "behavioural_diversity": float(np.mean(diversity)),
            **objective_measures(
                self.game,
                students,
                difficulty,
                rates=rates,
                progress=progress,
                history=self.difficulty_history,
                ciao=self.ciao()[1] if len(self.evolution.hall) >= 3 else None,
                tie_margin=PAYOFF_DRAWS**-0.5,
            ),
            "spread_to_noise": float(np.mean([_spread(points[r]) for r in ROLES]))
            / self.exploration,
        }

    # -- outside the run -------------------------------------------------------------------
    def ciao(self) -> tuple[list[int], list[list[float]]]:
        """The CIAO matrix of the hall of fame's snapshots: ``(steps, solver_score)`` where cell
        ``(i, j)`` is the mean expected score, in the game as played (:meth:`played`), of every
        student frozen at snapshot ``j`` against every teacher frozen at snapshot ``i``; the
        layout of ``solver_score`` in :func:`redqueen.experiments.ciao.ciao_matrix`."""
        hall, steps = self.evolution.hall, self.evolution.hall.steps
        at = {
            s: {
                r: torch.stack([self.point_of(m.key) for m in hall.at(s) if m.role == r])
                for r in ROLES
            }
            for s in steps
        }
        kept = {m.key for s in steps for m in hall.at(s)}
        self._frozen_points = {k: v for k, v in self._frozen_points.items() if k in kept}
        matrix = [
            [float(self.played(at[j]["student"], at[i]["teacher"]).mean()) for j in steps]
            for i in steps
        ]
        return list(steps), matrix

    def play_matches(
        self, pairs: Sequence[tuple[LoRAGenome, LoRAGenome]], *, seed: int
    ) -> list[float]:
        """Expected scores of ``(teacher genome, student genome)`` matches in the game as played
        (:meth:`played`, deterministic, so ``seed`` changes nothing); no state is touched. Used
        by ``redqueen ciao``."""
        with torch.no_grad(), one_thread():
            return [
                float(self.played(self.point(s)[None], self.point(t)[None])[0, 0])
                for t, s in pairs
            ]

    # -- checkpoints -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Genomes, lineage, ratings, hall of fame, step count, detector history and every RNG state."""
        return {
            "seed": self.seed,
            "game": self.game_name,
            "game_settings": self.game.settings(),
            "step_count": self.step_count,
            **league_state(self.league),
            "torch_rng": self.torch_rng.get_state(),
            "difficulty_history": list(self.difficulty_history),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned.

        Raises:
            ValueError: If the checkpoint was made with another seed or another game.
        """
        mine = (self.seed, self.game_name, self.game.settings())
        theirs = (state["seed"], state["game"], state["game_settings"])
        if mine != theirs:
            raise ValueError(
                f"GamesEnv: checkpoint (seed, game, settings) {theirs} != environment's {mine}"
            )
        self.step_count = int(state["step_count"])
        load_league_state(self.league, state)
        self.torch_rng.set_state(state["torch_rng"])
        self.difficulty_history = [float(v) for v in state["difficulty_history"]]


def _spread(points: torch.Tensor) -> float:
    """Mean distance between two members' points (0 with fewer than two members)."""
    n = points.shape[0]
    return float(torch.cdist(points, points).sum()) / (n * (n - 1)) if n > 1 else 0.0


def _add(
    samples: dict[str, tuple[list[torch.Tensor], list[torch.Tensor]]],
    key: str,
    actions: torch.Tensor,
    rewards: torch.Tensor,
) -> None:
    acts, paid = samples.setdefault(key, ([], []))
    acts.append(actions)
    paid.append(rewards.float())
