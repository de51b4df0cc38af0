"""Single-objective and case-based selection schemes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import numpy as np
from pydantic import Field

from redqueen._registry import Needs
from redqueen.evo.selection._base import (
    SELECTIONS,
    Candidate,
    RatedCandidate,
    attribute_matrix,
    best_first,
    cycle,
    weighted_values,
)
from redqueen.fitness import CONSERVATIVE_K, conservative_rating


@SELECTIONS.register("tournament")
def tournament(
    individuals: Sequence[Candidate],
    k: int,
    *,
    rng: np.random.Generator,
    tournsize: Annotated[int, Field(ge=1)] = 3,
) -> list[int]:
    """Tournament selection: the best of ``tournsize`` random members, ``k`` times.

    Miller & Goldberg, "Genetic algorithms, tournament selection, and the effects of noise",
    Complex Systems 1995. Fitness vectors compare lexicographically, as in DEAP.
    """
    keys = weighted_values(individuals)
    chosen = []
    for _ in range(k):
        aspirants = rng.integers(0, len(individuals), size=tournsize)
        chosen.append(int(aspirants[best_first(keys[aspirants])[0]]))
    return chosen


@SELECTIONS.register("truncation")
def truncation(individuals: Sequence[Candidate], k: int, *, rng: np.random.Generator) -> list[int]:
    """Truncation selection: the ``k`` best by fitness (cycling when ``k`` exceeds the population).

    Mühlenbein & Schlierkamp-Voosen, "Predictive models for the breeder genetic algorithm",
    Evol. Comput. 1993.
    """
    return cycle(best_first(weighted_values(individuals)), k)


@SELECTIONS.register("rating_lcb", needs=Needs(member_fields=("rating",)))
def rating_lcb(
    individuals: Sequence[RatedCandidate],
    k: int,
    *,
    rng: np.random.Generator,
    c: Annotated[float, Field(ge=0)] = CONSERVATIVE_K,
) -> list[int]:
    """The ``k`` best by conservative skill mu - c sigma (PopuLoRA's default, c = 3).

    Herbrich, Minka & Graepel, "TrueSkill: A Bayesian skill rating system", NeurIPS 2006.
    """
    lcb = []
    for ind in individuals:
        rating = getattr(ind, "rating", None)  # a member that is not a candidate has none
        if rating is None:
            raise ValueError(
                f"rating_lcb selection: member {getattr(ind, 'id', ind)!r} has no rating"
            )
        lcb.append(conservative_rating(rating[0], rating[1], c))
    return cycle(best_first(np.asarray(lcb)[:, None]), k)


@SELECTIONS.register("lexicase", needs=Needs(member_fields=("cases",)))
def lexicase(individuals: Sequence[Candidate], k: int, *, rng: np.random.Generator) -> list[int]:
    """Lexicase selection over per-case outcomes (``ind.cases``, higher is better).

    Spector, "Assessment of problem modality by differential performance of lexicase
    selection in genetic programming", GECCO 2012. Cases are shuffled per choice; only the
    best on each case in turn survive; ties at the end are broken at random.
    """
    return _lexicase(attribute_matrix(individuals, "cases"), k, rng, np.zeros(0))


@SELECTIONS.register("epsilon_lexicase", needs=Needs(member_fields=("cases",)))
def epsilon_lexicase(
    individuals: Sequence[Candidate],
    k: int,
    *,
    rng: np.random.Generator,
    epsilon: Annotated[float, Field(ge=0)] | None = None,
) -> list[int]:
    """Epsilon-lexicase: lexicase where members within epsilon of the case's best pass.

    La Cava, Spector & Danai, "Epsilon-lexicase selection for regression", GECCO 2016. By
    default epsilon is each case's median absolute deviation over the population.
    """
    cases = attribute_matrix(individuals, "cases")
    if epsilon is None:
        eps = np.median(np.abs(cases - np.median(cases, axis=0)), axis=0)
    else:
        eps = np.full(cases.shape[1], float(epsilon))
    return _lexicase(cases, k, rng, eps)


def _lexicase(cases: np.ndarray, k: int, rng: np.random.Generator, eps: np.ndarray) -> list[int]:
    n, n_cases = cases.shape
    chosen = []
    for _ in range(k):
        pool = np.arange(n)
        for case in rng.permutation(n_cases):
            values = cases[pool, case]
            tol = eps[case] if eps.size else 0.0
            pool = pool[values >= values.max() - tol]
            if len(pool) == 1:
                break
        chosen.append(int(pool[rng.integers(len(pool))]))
    return chosen
