"""DEAP drives LoRA genomes: our operators as toolbox mate/mutate, lineage kept.

Example::

    bridge = DeapBridge(population=pop, lineage=lin, role="student", evaluate=fn, seed=0)
    toolbox = bridge.toolbox(mate="svd_merge", mutate="gaussian", select="nsga2")
    pop_list, log = deap.algorithms.eaMuPlusLambda(pop.members("student"), toolbox, mu=8,
                                                    lambda_=8, cxpb=0.5, mutpb=0.5, ngen=5)

The toolbox's ``clone`` gives every clone a fresh id (DEAP's default, ``copy.deepcopy``, would
keep the id, so clones of one member would be one member); clones share the (write-once) genome,
so cloning an adapter costs nothing. ``mate`` and ``mutate`` never edit a genome: they give the
individual a new one made by our operators, a new id and its parents (a clone's parent is the
member it was cloned from). The population and
lineage follow each ``select`` call; after an algorithm that ends without one (``eaSimple``
replaces the population after variation), call ``bridge.survive(final_population)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import deap.base
import numpy as np
import torch

from redqueen.evo._individual import Individual
from redqueen.evo._interop import LineageKeeper
from redqueen.evo._lineage import Lineage
from redqueen.evo._population import Population
from redqueen.evo.selection import select
from redqueen.genomes import check_seed, generator_seed


class DeapBridge(LineageKeeper):
    """DEAP-convention callables over our individuals, keeping Population and Lineage current.

    Args:
        population: Population holding the founders of ``role``.
        lineage: Lineage with the founders' births.
        role: Role evolved.
        evaluate: ``fn(individual) -> tuple of objective values`` (DEAP's evaluate).
        seed: Seeds the operators' ``torch.Generator`` and the selection ``numpy`` Generator;
            any integer (taken modulo ``2**64``).
    """

    def __init__(
        self,
        *,
        population: Population,
        lineage: Lineage,
        role: str,
        evaluate: Callable[[Individual], Sequence[float]],
        seed: int = 0,
    ) -> None:
        seed = generator_seed(check_seed(seed, type(self).__name__))
        super().__init__(population=population, lineage=lineage, role=role,
                         torch_rng=torch.Generator().manual_seed(seed))
        self._evaluate = evaluate
        self.rng = np.random.default_rng(seed)

    def mate(self, name: str, **params: float) -> Callable[[Individual, Individual], tuple[Individual, Individual]]:
        """``mate(ind1, ind2) -> (child1, child2)``: our crossover ``name``, parents in both orders."""

        def mate(ind1: Individual, ind2: Individual) -> tuple[Individual, Individual]:
            first = self.vary(name, [ind1, ind2], params)
            second = self.vary(name, [ind2, ind1], params)
            return first, second

        mate.__name__ = f"mate_{name}"
        return mate

    def mutate(self, name: str, **params: float) -> Callable[[Individual], tuple[Individual]]:
        """``mutate(ind) -> (child,)``: our mutation ``name``."""

        def mutate(ind: Individual) -> tuple[Individual]:
            return (self.vary(name, [ind], params),)

        mutate.__name__ = f"mutate_{name}"
        return mutate

    def evaluate(self, ind: Individual) -> tuple[float, ...]:
        """Record the birth of a new child, then return ``evaluate(ind)`` as a tuple."""
        self.born(ind)
        return tuple(float(v) for v in self._evaluate(ind))

    def select(self, name: str, **params: object) -> Callable[[list[Individual], int], list[Individual]]:
        """``select(individuals, k) -> chosen``: our scheme ``name``; the chosen survive, the rest die."""

        def select_fn(individuals: list[Individual], k: int) -> list[Individual]:
            chosen = [individuals[i] for i in select(name, individuals, k, rng=self.rng, **params)]
            self.survive(chosen)
            return chosen

        select_fn.__name__ = f"select_{name}"
        return select_fn

    def toolbox(
        self,
        *,
        mate: str = "svd_merge",
        mutate: str = "gaussian",
        select: str = "nsga2",
        mate_params: dict[str, float] | None = None,
        mutate_params: dict[str, float] | None = None,
        select_params: dict[str, object] | None = None,
    ) -> deap.base.Toolbox:
        """A toolbox with ``clone``, ``mate``, ``mutate``, ``select`` and ``evaluate`` registered."""
        toolbox = deap.base.Toolbox()
        toolbox.register("clone", self.clone)
        toolbox.register("mate", self.mate(mate, **(mate_params or {})))
        toolbox.register("mutate", self.mutate(mutate, **(mutate_params or {})))
        toolbox.register("select", self.select(select, **(select_params or {})))
        toolbox.register("evaluate", self.evaluate)
        return toolbox
