"""What every surrogate environment shares: the frozen MLP and the members' bookkeeping.

The surrogate environment (:mod:`redqueen.environments.surrogate`) and the surrogate games
(:mod:`redqueen.environments.games`) both carry LoRA genomes on a small frozen tanh MLP and
both hand births and deaths to one :class:`redqueen.evo.EvolutionLoop`. This module holds the
parts they share, written once: :class:`FrozenMLP` (the "base model"), :class:`SurrogateMembers`
(founding, PFSP pairing with the hall of fame, rating a match against a living or frozen
opponent, the end-of-step replacement and snapshot, rating rows, checkpoint state) and
:func:`one_thread`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from redqueen.evo import EvolutionLoop, Individual, Lineage, Population, ReplacementConfig
from redqueen.fitness import Objectives, PFSPMatchmaker, RatingSystem, conservative_rating
from redqueen.genomes import LoRAGenome

Factors = Mapping[str, tuple[torch.Tensor, torch.Tensor]]


class FrozenMLP:
    """A frozen three-layer tanh MLP whose linear layers carry LoRA factors.

    Args:
        inputs: Input width.
        hidden: Hidden width.
        outputs: Output width.
        gen: Draws the frozen weights (``layers.0``, ``layers.1``, ``layers.2``, in that order).
    """

    def __init__(self, *, inputs: int, hidden: int, outputs: int, gen: torch.Generator) -> None:
        self.shapes = {
            "layers.0": (hidden, inputs),
            "layers.1": (hidden, hidden),
            "layers.2": (outputs, hidden),
        }
        self.base = {
            n: (torch.randn(o, i, generator=gen) / i**0.5, 0.1 * torch.randn(o, generator=gen))
            for n, (o, i) in self.shapes.items()
        }

    def __call__(
        self, x: torch.Tensor, genome: LoRAGenome | None, factors: Factors | None = None
    ) -> torch.Tensor:
        """The MLP with ``genome``'s LoRA updates (or ``factors`` with its scaling): ``(n, in) -> (n, out)``."""
        factors = (
            factors if factors is not None else (dict(genome.items()) if genome is not None else {})
        )
        scaling = genome.scaling if genome is not None else 0.0
        last = len(self.shapes) - 1
        h = x
        for i, name in enumerate(self.shapes):
            w, b = self.base[name]
            out = h @ w.T + b
            if name in factors:
                a, bb = factors[name]
                out = out + scaling * (h @ a.T) @ bb.T  # (n, r) -> (n, out)
            h = torch.tanh(out) if i < last else out
        return h


class SurrogateMembers:
    """Members' bookkeeping of a surrogate environment; the evolution loop owns births and deaths.

    A mixin: :meth:`setup_members` creates :attr:`population`, :attr:`lineage`, :attr:`ratings`,
    :attr:`matchmaker`, :attr:`evolution` and :attr:`rng` on the environment; the other methods
    are the steps every surrogate environment takes in the same way.
    """

    population: Population
    lineage: Lineage
    ratings: RatingSystem
    matchmaker: PFSPMatchmaker
    evolution: EvolutionLoop
    replacement: ReplacementConfig
    rng: np.random.Generator

    def setup_members(
        self,
        *,
        roles: Sequence[str],
        replacement: ReplacementConfig | None,
        matchmaker: PFSPMatchmaker | None,
        objectives: Mapping[str, Objectives],
        seed: int,
    ) -> None:
        """Empty population, lineage, ratings, matchmaker and evolution loop, seeded from ``seed``."""
        self.replacement = replacement or ReplacementConfig()
        self.population, self.lineage, self.ratings = (
            Population(roles=tuple(roles)),
            Lineage(),
            RatingSystem(),
        )
        self.matchmaker = matchmaker or PFSPMatchmaker()
        self.rng = np.random.default_rng(seed)
        self.evolution = EvolutionLoop(
            self.population,
            self.lineage,
            self.replacement,
            np.random.default_rng(seed + 2),
            objectives=objectives,
        )

    def found_members(
        self, role: str, size: int, weights: tuple[float, ...], make_genome: Any
    ) -> None:
        """Found ``size`` members of ``role``; ``make_genome()`` returns each founder's genome."""
        for _ in range(size):
            ind = Individual(self.population.new_id(role), role, make_genome(), weights)
            self.evolution.found(ind, self.ratings)

    def pair(self) -> list[tuple[str, str]]:
        """This step's ``(teacher, student)`` matches by PFSP, past opponents from the hall of fame."""
        hall = self.evolution.hall
        teachers, students = self.population.members("teacher"), self.population.members("student")
        return self.matchmaker.pair(
            [t.id for t in teachers],
            [s.id for s in students],
            self.ratings,
            self.rng,
            past_teachers={m.key: m.rating for m in hall.members("teacher")},
            past_students={m.key: m.rating for m in hall.members("student")},
        )

    def record_match(self, teacher: str, student: str, solved: float) -> None:
        """Rate a match the student scored ``solved`` in; a frozen opponent's rating does not move."""
        if teacher in self.population and student in self.population:
            self.ratings.record_score(teacher, student, 1.0 - solved, solved)
        elif teacher in self.population:
            self.ratings.record_against(teacher, self.frozen_rating(student), 1.0 - solved, solved)
        elif student in self.population:
            self.ratings.record_against(student, self.frozen_rating(teacher), solved, 1.0 - solved)

    def finish_step(self, step: int) -> tuple[list[str], list[str]]:
        """Replacement when due, ratings synced, snapshot when due, lineage fitness; ``(births, deaths)``."""
        births: list[str] = []
        deaths: list[str] = []
        if self.replacement.due(step):
            born, deaths = self.evolution.replace(step + 1, self.ratings)
            births = [b.id for b in born]
        self.evolution.sync_ratings(self.ratings)
        if self.replacement.snapshot_due(step):
            self.evolution.snapshot(step + 1)
        self.lineage.update_fitness(self.population.living)
        return births, deaths

    def rating_rows(self, step: int) -> list[dict[str, Any]]:
        """One ``ratings.jsonl`` row per living member."""
        rows = []
        for ind in self.population.living:
            mu, sigma = self.ratings.get(ind.id)
            rows.append(
                {
                    "step": step,
                    "id": ind.id,
                    "role": ind.role,
                    "mu": mu,
                    "sigma": sigma,
                    "lcb": conservative_rating(mu, sigma),
                    "objectives": dict(ind.objectives),
                }
            )
        return rows

    def genome_of(self, key: str) -> LoRAGenome:
        """A living member's genome, or a frozen hall-of-fame member's (``"<id>@<step>"``)."""
        if key in self.population:
            return self.population.get(key).genome
        return self.evolution.hall.get(key).genome

    def frozen_rating(self, key: str) -> tuple[float, float]:
        """A hall-of-fame member's rating when frozen (the initial rating when it had none)."""
        rating = self.evolution.hall.get(key).rating
        return rating if rating is not None else (self.ratings.mu, self.ratings.sigma)

    def snapshots(self) -> dict[int, list[Any]]:
        """The hall of fame's kept snapshots (step -> frozen members), for the run directory."""
        return {step: self.evolution.hall.at(step) for step in self.evolution.hall.steps}

    def members_state(self) -> dict[str, Any]:
        """Population, lineage, ratings, evolution loop and matchmaking RNG as plain data."""
        return {
            "population": self.population.state_dict(),
            "lineage": self.lineage.state_dict(),
            "ratings": self.ratings.state_dict(),
            "evolution": self.evolution.state_dict(),
            "rng": self.rng.bit_generator.state,
        }

    def load_members_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`members_state` returned (extra keys are ignored)."""
        self.population.load_state_dict(state["population"])
        self.lineage.load_state_dict(state["lineage"])
        self.ratings.load_state_dict(state["ratings"])
        self.evolution.load_state_dict(state["evolution"])
        self.rng.bit_generator.state = state["rng"]


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread: the tensors are tiny, so thread hand-offs cost more than they save."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
