"""A selection plug-in: linear ranking selection, as a plain seeded function."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import numpy as np
from pydantic import Field

from redqueen.evo import Individual
from redqueen.evo.selection import SELECTIONS


@SELECTIONS.register("linear_rank")
def linear_rank(
    individuals: Sequence[Individual],
    k: int,
    *,
    rng: np.random.Generator,
    pressure: Annotated[float, Field(ge=1, le=2)] = 1.5,
) -> list[int]:
    """Linear ranking selection on the first weighted objective.

    The best member is drawn with probability pressure / n, the worst with (2 - pressure) / n,
    linearly in between (with replacement).

    Baker, "Adaptive selection methods for genetic algorithms", ICGA 1985.
    """
    n = len(individuals)
    order = np.argsort([-ind.fitness.wvalues[0] for ind in individuals], kind="stable")
    ranks = np.empty(n)
    ranks[order] = np.arange(n)  # 0 for the best
    p = (pressure - (2 * pressure - 2) * ranks / max(n - 1, 1)) / n
    return [int(i) for i in rng.choice(n, size=k, p=p / p.sum())]
