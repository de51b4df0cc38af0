"""Bookkeeping of population members shared by the task-domain environments.

:class:`MemberBook` keeps the population, its lineage, its ratings, the adapter host and the
learner in step: founders get an adapter and a rating; each step's statistics are smoothed
into every member's objectives, behaviour descriptor and lexicase cases; replacement adds an
adapter for every child and removes the dead ones; and one ``state_dict`` holds it all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from redqueen.environments._codegame import PlayedTask
from redqueen.environments._game_stats import member_stats
from redqueen.evo import EvolutionLoop, Individual, Lineage, Population, descriptor_matrix
from redqueen.fitness import (
    Objectives,
    RatingSystem,
    behavioural_diversity,
    conservative_rating,
    genotypic_diversity,
    hypervolumes,
    novelty_scores,
)
from redqueen.genomes import LoRAGenome

if TYPE_CHECKING:  # annotations only: the engine loads transformers when imported
    from redqueen.engine import HostProtocol, LearnerProtocol

#: Weight of the newest step in a member's smoothed statistics (exponential moving average).
SMOOTHING = 0.5

#: Which side(s) of the game each role plays; a solo member proposes and solves.
SIDES: dict[str, tuple[str, ...]] = {
    "teacher": ("teacher",),
    "student": ("student",),
    "solo": ("teacher", "student"),
}


def initial_stats(role: str, n_types: int) -> dict[str, Any]:
    """Statistics a member starts with, before it has played."""
    stats: dict[str, Any] = {}
    sides = SIDES.get(role, (role,))
    if "teacher" in sides:
        stats.update(
            teacher_reward=0.0, valid_share=0.0, complexity=0.0, reward_per_type=[0.0] * n_types
        )
    if "student" in sides:
        stats.update(solve_rate=0.0, student_reward=0.0, solve_per_type=[0.0] * n_types)
    return stats


_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def make_host(
    *,
    model: str | Path | None,
    host: Any,
    backend: str,
    device: str,
    dtype: str | None,
    target_modules: Sequence[str] | None,
    learner: Any,
    executor: Mapping[str, Any] | None,
) -> tuple[Any, Any, Any]:
    """The adapter host (loaded unless given), its learner and a sandbox executor.

    Raises:
        OSError: If the base model cannot be loaded.
        ValueError: If ``dtype`` is unknown or a given host already holds adapters.
    """
    from redqueen.engine import AdapterHost, Learner, LearnerConfig
    from redqueen.verifiers import Executor

    if host is None:
        if dtype is not None and dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        path = model  # None or a shipped name: AdapterHost resolves it
        try:
            host = AdapterHost(
                path,
                device=device,
                dtype=_DTYPES[dtype] if dtype else None,
                target_modules=target_modules,
                backend=backend,
            )
        except (OSError, ValueError) as error:
            # Loading is I/O: say so, so that callers can name the model as the culprit.
            message = str(error)
            if str(model) not in message:
                message = f"cannot load model {str(model)!r}: {message}"
            raise OSError(message) from error
    elif host.adapter_ids:
        raise ValueError(f"the host must hold no adapters, it holds {host.adapter_ids}")
    config = learner if learner is not None else LearnerConfig()
    if hasattr(host, "make_learner"):  # a cluster host: learner steps and sandbox on its workers
        return host, host.make_learner(config), host.make_executor(executor)
    trainer = Learner(host, config)
    return host, trainer, Executor(**dict(executor or {}))


def objectives_for(
    objectives: Mapping[str, Sequence[str]] | None, roles: Sequence[str]
) -> dict[str, Objectives]:
    """Objective vectors per role (default: the conservative rating ``mu - 3 sigma``)."""
    given = dict(objectives or {})
    return {role: Objectives(tuple(given.get(role, ("rating_lcb",)))) for role in roles}


class MemberBook:
    """Keeps population, lineage, ratings, adapters and learner states consistent.

    Args:
        population: The environment's population.
        lineage: Its lineage.
        ratings: Rating system (one rating per living member).
        host: Adapter host; member ids are adapter ids.
        learner: The learner (per-adapter optimizer states).
        objectives: Objective vector per role.
        task_types: Task types, in descriptor order.
        evolution: The evolution loop, which decides every birth and death; the book
            listens to it to add and remove adapters, learner states and statistics.
        rated: Whether members carry ratings (the self-play baseline plays no matches).
    """

    def __init__(
        self,
        *,
        population: Population,
        lineage: Lineage,
        ratings: RatingSystem,
        host: HostProtocol,
        learner: LearnerProtocol,
        objectives: Mapping[str, Objectives],
        task_types: Sequence[str],
        evolution: EvolutionLoop,
        rated: bool = True,
    ) -> None:
        self.population, self.lineage, self.ratings = population, lineage, ratings
        self.host, self.learner = host, learner
        self.objectives = dict(objectives)
        self.task_types = tuple(task_types)
        self.rated = rated
        self.evolution = evolution
        evolution.listeners.append(self)
        self.stats: dict[str, dict[str, Any]] = {}
        self.hv_reference: dict[str, list[float]] = {}

    # -- members ----------------------------------------------------------------------------

    def found(
        self, role: str, *, rank: int, alpha: float, init: str, std: float, rng: torch.Generator
    ) -> Individual:
        """Create a founder with a random genome, its adapter, rating and lineage record."""
        genome = LoRAGenome.random(
            self.host.module_shapes,
            rank=rank,
            alpha=alpha,
            rng=rng,
            init=init,
            std=std,
            base_model=str(self.host.model_path),
        )
        weights = self.objectives[role].weights
        assert weights is not None  # Objectives fills its default weights when made
        ind = Individual(self.population.new_id(role), role, genome, weights)
        self.evolution.found(ind, self.ratings if self.rated else None)
        self.refresh()
        return ind

    def member_born(self, ind: Individual) -> None:
        """A founder or child joined: load its adapter and give it fresh statistics."""
        self.host.add_adapter(ind.id, ind.genome)
        self.stats[ind.id] = initial_stats(ind.role, len(self.task_types))

    def member_died(self, ind: Individual) -> None:
        """A member left: drop its adapter, optimizer state and statistics."""
        self.host.remove_adapter(ind.id)
        self.learner.forget(ind.id)
        self.stats.pop(ind.id, None)

    def lend_frozen(self, pairs: Sequence[tuple[str, str]]) -> dict[str, tuple[float, float]]:
        """Load the adapters of the hall-of-fame members that ``pairs`` name (frozen copies,
        keyed ``"<id>@<step>"``) for one step; returns their frozen ratings by key."""
        hall = self.evolution.hall
        frozen: dict[str, tuple[float, float]] = {}
        for key in dict.fromkeys(k for pair in pairs for k in pair):
            if key in self.population:
                continue
            member = hall.get(key)
            self.host.add_adapter(key, member.genome)
            frozen[key] = member.rating or (self.ratings.mu, self.ratings.sigma)
        return frozen

    def return_frozen(self, frozen: Mapping[str, Any]) -> None:
        """Unload what :meth:`lend_frozen` loaded (frozen members are never trained)."""
        for key in frozen:
            self.host.remove_adapter(key)
            self.learner.forget(key)

    def snapshot(self, step: int) -> None:
        """Freeze the living members (trained genomes, current ratings) into the hall of fame."""
        self.sync_genomes()
        self.evolution.snapshot(step)

    def snapshots(self) -> dict[int, list[Any]]:
        """The hall of fame's kept snapshots (step -> frozen members), for the run directory."""
        hall = self.evolution.hall
        return {step: hall.at(step) for step in hall.steps}

    def sync_genomes(self) -> None:
        """Copy every living member's trained weights from the host into its genome."""
        for ind in self.population.living:
            ind.genome = self.host.genome(ind.id)

    # -- statistics -------------------------------------------------------------------------

    def observe(self, played: Sequence[PlayedTask]) -> None:
        """Fold one step's results into each member's smoothed statistics (an exponential
        moving average with weight :data:`SMOOTHING` on the newest step); members that did not
        play keep theirs."""
        fresh = member_stats(played, self.task_types)
        for ind in self.population.living:
            mine = fresh.get(ind.id, {})
            old = self.stats.setdefault(ind.id, initial_stats(ind.role, len(self.task_types)))
            for side in SIDES.get(ind.role, (ind.role,)):
                for key, value in mine.get(side, {}).items():
                    previous = old.get(key)
                    if previous is None:
                        old[key] = value
                    elif isinstance(value, list):
                        old[key] = [
                            (1 - SMOOTHING) * p + SMOOTHING * v
                            for p, v in zip(previous, value, strict=True)
                        ]
                    else:
                        old[key] = (1 - SMOOTHING) * previous + SMOOTHING * value

    def refresh(self) -> None:
        """Write ratings, objectives, descriptors, cases and fitness onto every living member."""
        for role in self.population.roles:
            members = self.population.members(role)
            if not members:
                continue
            for ind in members:
                stats = self.stats.get(ind.id, {})
                ind.objectives = {k: float(v) for k, v in stats.items() if not isinstance(v, list)}
                if self.rated:
                    ind.rating = mu, sigma = self.ratings.get(ind.id)
                    ind.objectives.update(rating_mu=mu, rating_lcb=conservative_rating(mu, sigma))
                # Per-task-type outcomes: lexicase cases and behaviour descriptor alike.
                per_type = [
                    v for key in ("reward_per_type", "solve_per_type") for v in stats.get(key, [])
                ]
                cases = np.asarray(per_type or [0.0] * len(self.task_types), dtype=float)
                ind.cases = cases
                ind.descriptor = cases.copy()
            descriptors = descriptor_matrix(members)
            for ind, score in zip(members, novelty_scores(descriptors, k=3), strict=True):
                ind.objectives["novelty"] = float(score)
            if role in self.objectives:
                self.objectives[role].assign(members)

    def replace(self, step: int) -> tuple[list[str], list[str]]:
        """Run the evolution loop's replacement on trained genomes; the host follows it
        through :meth:`member_born` and :meth:`member_died`."""
        self.sync_genomes()
        self.refresh()
        births, deaths = self.evolution.replace(step, self.ratings if self.rated else None)
        self.refresh()
        return [child.id for child in births], list(deaths)

    # -- reports ----------------------------------------------------------------------------

    def population_metrics(self, roles: Sequence[str]) -> dict[str, float]:
        """best_rating, genotypic and behavioural diversity (mean over roles), hypervolume per role."""
        self.sync_genomes()
        metrics: dict[str, float] = {}
        if self.rated:
            metrics["best_rating"] = max(self.ratings.lcb(ind.id) for ind in self.population.living)
        geno, beha = [], []
        for role in roles:
            members = self.population.members(role)
            geno.append(genotypic_diversity([ind.genome for ind in members]))
            beha.append(behavioural_diversity(descriptor_matrix(members)))
            objectives = self.objectives.get(role)
            if objectives is not None and len(objectives.names) > 1:
                metrics[f"hypervolume/{role}"] = self._hypervolume(role, members, objectives)
        metrics["genotypic_diversity"] = float(np.mean(geno))
        metrics["behavioural_diversity"] = float(np.mean(beha))
        metrics["phylogenetic_diversity"] = self.lineage.phylogenetic_diversity()
        return metrics

    def _hypervolume(
        self, role: str, members: Sequence[Individual], objectives: Objectives
    ) -> float:
        """Hypervolume of the role's weighted objective vectors (pymoo), against a reference
        point fixed the first time it is computed so that values compare across steps."""
        return hypervolumes({role: members}, {role: objectives}, self.hv_reference)[
            f"hypervolume/{role}"
        ]

    def rating_rows(self, step: int) -> list[dict[str, Any]]:
        """Rows of ``ratings.jsonl`` for every living member (mu, sigma, lcb ``None`` when unrated)."""
        rows = []
        for ind in self.population.living:
            rating = self.ratings.get(ind.id) if self.rated else None
            mu, sigma = rating if rating is not None else (None, None)
            rows.append(
                {
                    "step": step,
                    "id": ind.id,
                    "role": ind.role,
                    "mu": mu,
                    "sigma": sigma,
                    "lcb": None if rating is None else conservative_rating(*rating),
                    "objectives": dict(ind.objectives),
                }
            )
        return rows

    # -- checkpoints ------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Population (trained genomes), lineage, ratings, learner states and statistics."""
        self.sync_genomes()
        return {
            "population": self.population.state_dict(),
            "lineage": self.lineage.state_dict(),
            "ratings": self.ratings.state_dict(),
            "learner": self.learner.state_dict(),
            "stats": {k: dict(v) for k, v in self.stats.items()},
            "hv_reference": {k: list(v) for k, v in self.hv_reference.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore members; the host's adapters are replaced by the checkpoint's genomes."""
        self.population.load_state_dict(state["population"])
        self.lineage.load_state_dict(state["lineage"])
        self.ratings.load_state_dict(state["ratings"])
        living = {ind.id: ind for ind in self.population.living}
        for adapter_id in list(self.host.adapter_ids):
            if adapter_id not in living:
                self.host.remove_adapter(adapter_id)
        for member_id, ind in living.items():
            self.host.set_adapter(member_id, ind.genome)
        self.learner.load_state_dict(state["learner"])
        self.stats = {k: dict(v) for k, v in state["stats"].items()}
        self.hv_reference = {k: list(v) for k, v in state["hv_reference"].items()}
        self.refresh()
