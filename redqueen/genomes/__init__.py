"""LoRA adapters as genomes.

:class:`LoRAGenome` holds one ``(A, B)`` factor pair per adapted linear module, with the rank,
alpha and base model they belong to. It reads and writes PEFT adapter folders, moves in and out
of a live ``PeftModel`` without touching disk, and checkpoints as a plain state dict.

The algebra works on factors only, never on a module's dense update:

- :func:`weighted_svd`: rank-r truncated SVD of ``sum_i w_i dW_i`` (QR-core, batched by shape).
- :func:`inner`, :func:`norm`: Frobenius inner product and norm from ``r x r`` Gram matrices.
- :func:`distance`, :func:`pairwise_distances`: genotypic distance ``sum_modules ||dW1 - dW2||_F``.
- :func:`genome_svd`, :func:`lowrank_svd`, :func:`lowrank_svd_many`, :func:`split_factors`,
  :func:`group_by_shape`, :func:`compute_dtype`: building blocks for operators.
- :func:`lora_shapes`: ``(out, in)`` of the linear modules of a Hugging Face model.
- :func:`check_generator`, :func:`check_seed`, :func:`generator_seed`: the one rule for the
  ``torch.Generator`` every draw takes and for integer seeds (any integer, taken mod ``2**64``).
"""

from __future__ import annotations

from redqueen.genomes._algebra import (
    compute_dtype,
    genome_svd,
    group_by_shape,
    lowrank_svd,
    lowrank_svd_many,
    split_factors,
    weighted_svd,
)
from redqueen.genomes._distances import distance, inner, norm, pairwise_distances
from redqueen.genomes._genome import GenomeMismatchError, LoRAGenome
from redqueen.genomes._peft_io import lora_shapes
from redqueen.genomes._seeds import SEED_MODULUS, check_generator, check_seed, generator_seed

__all__ = [
    "GenomeMismatchError",
    "LoRAGenome",
    "SEED_MODULUS",
    "check_generator",
    "check_seed",
    "compute_dtype",
    "distance",
    "generator_seed",
    "genome_svd",
    "group_by_shape",
    "inner",
    "lora_shapes",
    "lowrank_svd",
    "lowrank_svd_many",
    "norm",
    "pairwise_distances",
    "split_factors",
    "weighted_svd",
]
