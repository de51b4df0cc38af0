"""Shared bookkeeping for outside optimisers (DEAP, pymoo) that drive our genomes."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from redqueen.evo._individual import Individual
from redqueen.evo._lineage import Lineage
from redqueen.evo._population import Population

_log = logging.getLogger(__name__)


class LineageKeeper:
    """Makes children with our operators and keeps a Population and Lineage in step with an
    optimiser that only sees individuals.

    Children get a fresh id when made, and their birth is recorded when they are first
    evaluated (optimisers throw some children away unevaluated); members the optimiser's survival
    step drops are recorded as deaths. One survival step is one generation.

    Args:
        population: Population holding the optimiser's current members (founders already added).
        lineage: Lineage with the founders' births recorded.
        role: Role of the members this optimiser evolves.
        torch_rng: Generator handed to every operator.
    """

    def __init__(self, *, population: Population, lineage: Lineage, role: str, torch_rng: torch.Generator) -> None:
        self.population, self.lineage, self.role = population, lineage, role
        self.torch_rng = torch_rng
        self.generation = 0

    def vary(self, name: str, parents: list[Individual], params: Mapping[str, Any]) -> Individual:
        """A child of ``parents`` made by operator ``name`` (mutation or crossover).

        A mutation applied to a child not yet recorded (made by a crossover in the same
        generation) extends that child's operator chain instead of adding a generation.

        Raises:
            UnknownNameError: If the name is in neither operator registry.
        """
        from redqueen.evo.operators import CROSSOVERS, MUTATIONS, crossover, mutate

        params = dict(params)
        parent_ids = [pid for p in parents for pid in (p.parents if self.is_clone(p) else (p.id,))]
        if name in MUTATIONS:
            genome = mutate(name, parents[0].genome, rng=self.torch_rng, **params)
        else:
            CROSSOVERS[name]  # a clear error for an unknown name
            genome = crossover(name, [p.genome for p in parents], rng=self.torch_rng, **params)
        first = parents[0]
        if len(parents) == 1 and self.is_pending(first) and not self.is_clone(first):
            assert first.operator is not None  # a pending child that is no clone was made by vary
            chain = first.operator_params if "+" in first.operator else {first.operator: first.operator_params}
            first.operator_params = {**chain, name: params}
            first.operator = f"{first.operator}+{name}"
            first.genome = genome
            return first
        child = type(first)(  # the caller's class, e.g. one made by ``deap.creator``
            self.population.new_id(self.role), self.role, genome, first.fitness.weights,
            parents=parent_ids, operator=name, operator_params=params, birth=self.generation + 1,
        )
        return child

    def clone(self, ind: Individual) -> Individual:
        """A new member with ``ind``'s genome (shared) and fitness, a fresh id, and ``ind`` as
        its parent (operator ``"clone"``). Varying a clone makes a child of ``ind`` itself; a
        clone that survives unchanged is recorded as a reproduction of ``ind``."""
        source = ind.parents[0] if self.is_clone(ind) else ind.id
        copy = ind.__deepcopy__({})
        copy.id = self.population.new_id(self.role)
        copy.parents, copy.operator, copy.operator_params = (source,), "clone", {}
        copy.birth, copy.death = self.generation + 1, None
        return copy

    def is_clone(self, ind: Individual) -> bool:
        """Whether ``ind`` is a clone made by :meth:`clone` whose birth is not yet recorded."""
        return ind.operator == "clone" and self.is_pending(ind)

    def is_pending(self, ind: Individual) -> bool:
        """Whether ``ind`` was made but its birth not yet recorded."""
        return ind.id not in self.lineage

    def born(self, ind: Individual) -> None:
        """Record the birth of a new child (no-op for known members)."""
        if self.is_pending(ind):
            self.lineage.record_birth(ind, self.generation + 1)

    def survive(self, survivors: Iterable[Individual]) -> None:
        """The optimiser kept ``survivors``: add new ones, kill the rest, end the generation."""
        self.generation += 1
        _log.debug("%s: generation %d ends", self.role, self.generation)
        keep: dict[str, Individual] = {}
        for ind in survivors:
            self.born(ind)
            keep.setdefault(ind.id, ind)
        for ind in self.population.members(self.role) if self.role in self.population.roles else []:
            if ind.id not in keep:
                self.population.kill(ind.id, self.generation)
                self.lineage.record_death(ind.id, self.generation, ind)
        for ind in keep.values():
            if ind.id not in self.population:
                ind.death = None
                self.population.add(ind)
        # Children that were evaluated but not kept were born and died in this generation.
        living = set(self.lineage.living())
        for member_id in living - set(keep) - {m.id for m in self.population.living}:
            self.lineage.record_death(member_id, self.generation)
