"""Individuals: one population member, its genome and everything selection reads."""

from __future__ import annotations

import copy as _copy
from collections.abc import Sequence
from typing import Any

import deap.base
import numpy as np

from redqueen.fitness._deap_fitness import Fitness


class Individual:
    """One member of a population: a genome plus what selection and lineage need to know.

    Genomes are write-once (operators always return a new genome), so copies of an individual
    share the genome object; ``copy.copy`` and ``copy.deepcopy`` copy everything else and keep
    the id: a copy is the same member (a DEAP ``HallOfFame`` stores such copies). A clone that
    is a new member, with its own id, comes from the DEAP bridge's ``toolbox.clone``.

    Two individuals are equal when they are the same member (same id and role), so DEAP's
    ``HallOfFame`` keeps each member once; ``len(ind)`` is the genome's parameter count (the
    size DEAP's parsimony selection ``selDoubleTournament`` compares). A ``fitness`` set before
    ``__init__`` runs, as ``deap.creator.create("Ind", Individual, fitness=FitnessMax)`` does,
    is kept.

    Args:
        id: Unique member id, e.g. ``"teacher-0003"``.
        role: Sub-population the member belongs to (``"teacher"``, ``"student"``, ...).
        genome: The member's genome (usually a :class:`redqueen.genomes.LoRAGenome`).
        fitness_weights: DEAP-style weights of :attr:`fitness`; one per objective.
        parents: Ids of the parents; empty for founders.
        operator: Name of the variation operator that made the genome (``None`` for founders).
        operator_params: Parameters the operator was called with.
        birth: Step at which the member was born.

    Attributes:
        death: Step at which the member died, ``None`` while alive.
        objectives: Named objective values, e.g. ``{"rating_lcb": 3.1, "novelty": 0.4}``.
        descriptor: Behaviour descriptor (for novelty search and MAP-Elites), or ``None``.
        cases: Per-case outcomes, higher is better (for lexicase selection), or ``None``.
        rating: ``(mu, sigma)`` skill estimate, or ``None`` until rated.
        fitness: DEAP-compatible :class:`Fitness`.
    """

    def __init__(
        self,
        id: str,  # noqa: A002 - the natural name for a member id
        role: str,
        genome: Any = None,
        fitness_weights: Sequence[float] = (1.0,),
        *,
        parents: Sequence[str] = (),
        operator: str | None = None,
        operator_params: dict[str, Any] | None = None,
        birth: int = 0,
    ) -> None:
        if not isinstance(id, str) or not id:
            raise ValueError(f"Individual.id must be a non-empty string, got {id!r}")
        if not isinstance(role, str) or not role:
            raise ValueError(f"Individual.role must be a non-empty string, got {role!r}")
        self.id = id
        self.role = role
        self.genome = genome
        self.parents: tuple[str, ...] = tuple(parents)
        self.operator = operator
        self.operator_params: dict[str, Any] = dict(operator_params or {})
        self.birth = int(birth)
        self.death: int | None = None
        self.objectives: dict[str, float] = {}
        self.descriptor: np.ndarray | None = None
        self.cases: np.ndarray | None = None
        self.rating: tuple[float, float] | None = None
        if not isinstance(self.__dict__.get("fitness"), deap.base.Fitness):
            self.fitness = Fitness(fitness_weights)

    @property
    def alive(self) -> bool:
        """Whether the member has not died yet."""
        return self.death is None

    def __copy__(self) -> Individual:
        return self.__deepcopy__({})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Individual):
            return NotImplemented
        return self.id == other.id and self.role == other.role

    def __hash__(self) -> int:
        return hash((self.id, self.role))

    def __len__(self) -> int:
        count = getattr(self.genome, "num_parameters", None)
        return int(count()) if callable(count) else 0

    def __bool__(self) -> bool:
        return True

    def __deepcopy__(self, memo: dict[int, object]) -> Individual:
        clone = type(self).__new__(type(self))
        for key, value in self.__dict__.items():
            clone.__dict__[key] = value if key == "genome" else _copy.deepcopy(value, memo)
        return clone

    def __repr__(self) -> str:
        fit = self.fitness.values if self.fitness.valid else ()
        return f"Individual(id={self.id!r}, role={self.role!r}, fitness={fit!r}, rating={self.rating!r})"


def descriptor_matrix(members: Sequence[Individual]) -> np.ndarray:
    """``(n, d)`` behaviour descriptors of ``members``, one row each, for novelty and diversity.

    Raises:
        ValueError: If a member has no descriptor yet, or there are no members.
    """
    rows = []
    for ind in members:
        if ind.descriptor is None:
            raise ValueError(f"member {ind.id!r} has no behaviour descriptor")
        rows.append(ind.descriptor)
    return np.vstack(rows)
