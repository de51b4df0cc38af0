"""A crossover plug-in: an SVD merge of two parents at a random mixing weight."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import torch
from pydantic import Field

from redqueen.evo.operators import CROSSOVERS, crossover
from redqueen.genomes import LoRAGenome

Share = Annotated[float, Field(ge=0, le=1)]


@CROSSOVERS.register("random_blend")
def random_blend(
    parents: Sequence[LoRAGenome],
    *,
    weights: Sequence[float] | None = None,
    rng: torch.Generator,
    low: Share = 0.25,
    high: Share = 0.75,
) -> LoRAGenome:
    """SVD merge of two parents at a mixing weight drawn from [low, high].

    The child is the rank-r truncated SVD of t dW_1 + (1 - t) dW_2, t ~ U(low, high); the
    shipped ``svd_merge`` does the algebra. ``weights`` is part of the crossover signature and
    unused here.
    """
    if len(parents) != 2 or low > high:
        raise ValueError(
            f"random_blend: needs 2 parents and low <= high, got {len(parents)}, {low}, {high}"
        )
    t = low + (high - low) * float(torch.rand((), generator=rng, device=rng.device))
    return crossover("svd_merge", parents, weights=[t, 1.0 - t], rng=rng)
