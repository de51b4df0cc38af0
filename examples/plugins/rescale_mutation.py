"""A mutation plug-in: rescale each module's update by a random log-normal factor."""

from __future__ import annotations

from typing import Annotated

import torch
from pydantic import Field

from redqueen.evo.operators import MUTATIONS
from redqueen.genomes import LoRAGenome


@MUTATIONS.register("rescale")
def rescale(
    genome: LoRAGenome,
    *,
    rng: torch.Generator,
    sigma: Annotated[float, Field(gt=0)] = 0.1,
) -> LoRAGenome:
    """Rescale each module's update B A by a random log-normal factor.

    B is multiplied by exp(sigma * z), z ~ N(0, 1), one draw per module: the update changes
    size, not direction. Rank and alpha are kept, as every operator must.
    """
    factors = {}
    for name, (a, b) in genome.items():
        z = torch.randn((), generator=rng, device=rng.device)
        factors[name] = (a, b * torch.exp(sigma * z).to(b.dtype))
    return genome.replace(factors)
