"""Variation operators on LoRA genomes.

Two registries hold the operators, and two entry points apply them by name::

    from redqueen.evo.operators import mutate, crossover, MUTATIONS

    child = mutate("gaussian", genome, rng=torch.Generator().manual_seed(0), fraction=0.5)
    child = crossover("svd_merge", [g1, g2], weights=[0.7, 0.3], rng=gen)

    @MUTATIONS.register("my_mutation")
    def my_mutation(genome, *, rng, strength=0.1): ...

Every operator returns a child with the first parent's rank and alpha, draws all randomness from
the ``torch.Generator`` it is given (same seed, same child; the generator may live on the CPU
while the genome is on a GPU), and works on factors, never on a dense update of the whole model.

Mutations: ``gaussian`` (layer-selective, std-scaled), ``full_gaussian``, ``spectral``,
``component_mask``, ``lowrank_noise``. Crossovers: ``svd_merge``, ``task_vector``,
``svd_subspace``, ``layer_swap``, ``dare``, ``ties``.
"""

from __future__ import annotations

from redqueen.evo.operators._base import (
    CROSSOVERS,
    MUTATIONS,
    Crossover,
    Mutation,
    crossover,
    mutate,
)
from redqueen.evo.operators._crossovers import (
    dare,
    layer_swap,
    svd_merge,
    svd_subspace,
    task_vector,
    ties,
)
from redqueen.evo.operators._mutations import (
    component_mask,
    full_gaussian,
    gaussian,
    lowrank_noise,
    spectral,
)

__all__ = [
    "CROSSOVERS",
    "MUTATIONS",
    "Crossover",
    "Mutation",
    "component_mask",
    "crossover",
    "dare",
    "full_gaussian",
    "gaussian",
    "layer_swap",
    "lowrank_noise",
    "mutate",
    "spectral",
    "svd_merge",
    "svd_subspace",
    "task_vector",
    "ties",
]
