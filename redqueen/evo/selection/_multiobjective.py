"""Pareto-based selection schemes (NSGA-II, NSGA-III, SPEA2) over DEAP-style fitness vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

import deap.tools
import numpy as np
from pydantic import Field
from pymoo.algorithms.moo.nsga3 import ReferenceDirectionSurvival
from pymoo.core.population import Population as PymooPopulation
from pymoo.core.problem import Problem
from pymoo.core.survival import Survival
from pymoo.operators.survival.rank_and_crowding import RankAndCrowding
from pymoo.util.ref_dirs import get_reference_directions

from redqueen._registry import Needs
from redqueen.evo.selection._base import SELECTIONS, Candidate, cycle, weighted_values


def survival_order(survival: Survival, wvalues: np.ndarray, k: int, rng: np.random.Generator) -> list[int]:
    """Run a pymoo survival on weighted values (maximised); indices of the survivors in order."""
    n, m = wvalues.shape
    pop = PymooPopulation.new(F=-wvalues, index=np.arange(n))  # pymoo minimises
    survivors = survival.do(Problem(n_var=1, n_obj=m), pop, n_survive=min(k, n), random_state=rng)
    return [int(i) for i in survivors.get("index")]


#: Crowding measures of pymoo's RankAndCrowding.
Crowding = Literal["cd", "pcd", "pruning-cd", "ce", "mnn", "2nn"]


@SELECTIONS.register("nsga2", needs=Needs(min_objectives=2))
def nsga2(individuals: Sequence[Candidate], k: int, *, rng: np.random.Generator, crowding: Crowding = "cd") -> list[int]:
    """NSGA-II survival: non-dominated rank, then crowding distance (pymoo's RankAndCrowding).

    Deb, Pratap, Agarwal & Meyarivan, "A fast and elitist multiobjective genetic algorithm:
    NSGA-II", IEEE TEVC 2002. Returns distinct members best-front first, cycling if ``k``
    exceeds the population.
    """
    return cycle(survival_order(RankAndCrowding(crowding_func=crowding), weighted_values(individuals), k, rng), k)


@SELECTIONS.register("nsga3", needs=Needs(min_objectives=2))
def nsga3(
    individuals: Sequence[Candidate],
    k: int,
    *,
    rng: np.random.Generator,
    n_partitions: Annotated[int, Field(ge=1)] = 12,
) -> list[int]:
    """NSGA-III survival: non-dominated rank, then niching around Das-Dennis reference directions.

    Deb & Jain, "An evolutionary many-objective optimization algorithm using reference-point-based
    nondominated sorting approach", IEEE TEVC 2014.

    Raises:
        ValueError: With fewer than two objectives.
    """
    wvalues = weighted_values(individuals)
    if wvalues.shape[1] < 2:
        raise ValueError("nsga3 selection needs at least two objectives")
    ref_dirs = get_reference_directions("das-dennis", wvalues.shape[1], n_partitions=n_partitions)
    return cycle(survival_order(ReferenceDirectionSurvival(ref_dirs), wvalues, k, rng), k)


@SELECTIONS.register("spea2", needs=Needs(min_objectives=2))
def spea2(individuals: Sequence[Candidate], k: int, *, rng: np.random.Generator) -> list[int]:
    """SPEA2 environmental selection (DEAP's ``selSPEA2`` on our individuals).

    Zitzler, Laumanns & Thiele, "SPEA2: Improving the strength Pareto evolutionary algorithm",
    TIK report 103, 2001. Deterministic; ``rng`` is unused.
    """
    weighted_values(individuals)  # validates fitness
    chosen = deap.tools.selSPEA2(list(individuals), min(k, len(individuals)))
    position = {id(ind): i for i, ind in enumerate(individuals)}
    return cycle([position[id(ind)] for ind in chosen], k)
