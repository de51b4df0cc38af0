"""An objective plug-in: prefer members whose update stays close to the base model."""

from __future__ import annotations

from redqueen.evo import Individual
from redqueen.fitness import OBJECTIVES
from redqueen.genomes import norm


@OBJECTIVES.register("small_update")
def small_update(ind: Individual) -> float:
    """Minus the norm of the member's update: prefers adapters near the base model.

    The Frobenius norm of the whole update, sqrt(sum over modules of ||s B A||^2), computed
    from the factors; larger is better, as for every objective.
    """
    return -norm(ind.genome)
