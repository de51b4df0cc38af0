"""Inner products, norms and distances between genomes from ``r x r`` Gram matrices.

``<B1 A1, B2 A2>_F = sum((B1^T B2) * (A1 A2^T))``: no module's dense update is ever formed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from redqueen.genomes._algebra import _resolve, group_by_shape
from redqueen.genomes._genome import LoRAGenome


def _stacked(genomes: Sequence[LoRAGenome], names: list[str]) -> tuple[list[Tensor], list[Tensor]]:
    """Per genome, ``(M, out, r)`` scaled B stacks and ``(M, r, in)`` A stacks, float64."""
    device = genomes[0].device
    bs = [
        torch.stack([g.factors(n)[1] for n in names]).to(device, torch.float64) * g.scaling
        for g in genomes
    ]
    as_ = [torch.stack([g.factors(n)[0] for n in names]).to(device, torch.float64) for g in genomes]
    return bs, as_


def _gram_block(bs: list[Tensor], as_: list[Tensor]) -> Tensor:
    """``(M, k, k)`` Frobenius inner products ``<dW_i, dW_j>`` of k genomes, per module."""
    b, a = torch.cat(bs, -1), torch.cat(as_, -2)
    prod = (b.mT @ b) * (a @ a.mT)  # (M, K, K): elementwise product of the two Gram matrices
    k, ranks = len(bs), [t.shape[-1] for t in bs]
    if len(set(ranks)) == 1:
        return prod.view(-1, k, ranks[0], k, ranks[0]).sum((2, 4))
    edges = np.cumsum([0, *ranks])
    block = torch.empty(prod.shape[0], k, k, dtype=torch.float64, device=prod.device)
    for i in range(k):
        for j in range(k):
            block[:, i, j] = prod[:, edges[i] : edges[i + 1], edges[j] : edges[j + 1]].sum((-1, -2))
    return block


def _gram_inner(genomes: Sequence[LoRAGenome]) -> Tensor:
    """``(M, k, k)`` matrix of per-module Frobenius inner products between k genomes, float64."""
    groups = group_by_shape(genomes[0].shapes).values()
    return torch.cat([_gram_block(*_stacked(genomes, names)) for names in groups])


def inner(g1: LoRAGenome, g2: LoRAGenome) -> float:
    """Frobenius inner product ``sum_modules <dW1, dW2>_F`` from ``r x r`` Gram matrices.

    Raises:
        GenomeMismatchError: If the genomes differ in modules, shapes or base model.
    """
    g1.check_compatible(g2)
    return float(_gram_inner([g1, g2])[:, 0, 1].sum())


def norm(genome: LoRAGenome) -> float:
    """Frobenius norm of the whole update, ``sqrt(sum_modules ||dW||_F^2)``."""
    return float(_gram_inner([genome])[:, 0, 0].sum().clamp_min(0).sqrt())


def distance(g1: LoRAGenome, g2: LoRAGenome) -> float:
    """Genotypic distance ``sum_modules ||dW1 - dW2||_F``, computed from factors in float64.

    Raises:
        GenomeMismatchError: If the genomes differ in modules, shapes or base model.
    """
    return float(pairwise_distances([g1, g2])[0, 1])


#: Below this squared relative distance the Gram formula loses digits to cancellation.
_REFINE_BELOW = 1e-6


def pairwise_distances(genomes: Sequence[LoRAGenome]) -> np.ndarray:
    """Symmetric ``(n, n)`` matrix of :func:`distance` between all genomes (zero diagonal).

    ``||dW_i - dW_j||^2 = <i, i> + <j, j> - 2 <i, j>`` from Gram matrices is exact but cancels
    when two updates nearly coincide (a child and its parent); such module pairs are recomputed
    as ``||Rb Ra^T||_F`` from QR factors of the stacked difference, which keeps full precision.

    Raises:
        GenomeMismatchError: If the genomes differ in modules, shapes or base model.
    """
    _resolve(genomes, None)
    n = len(genomes)
    total = torch.zeros(n, n, dtype=torch.float64)
    for names in group_by_shape(genomes[0].shapes).values():
        bs, as_ = _stacked(genomes, names)
        ip = _gram_block(bs, as_)  # (M, n, n)
        diag = torch.diagonal(ip, dim1=-2, dim2=-1)
        scale = diag.unsqueeze(-1) + diag.unsqueeze(-2)
        sq = (scale - 2 * ip).clamp_min(0)
        close = (sq <= _REFINE_BELOW * scale) & torch.ones(
            n, n, dtype=torch.bool, device=sq.device
        ).triu(1)
        for m, i, j in close.nonzero().tolist():
            _, rb = torch.linalg.qr(torch.cat([bs[i][m], -bs[j][m]], -1))
            _, ra = torch.linalg.qr(torch.cat([as_[i][m], as_[j][m]], -2).mT)
            sq[m, i, j] = sq[m, j, i] = (rb @ ra.mT).pow(2).sum()
        total += sq.sqrt().sum(0).cpu()
    total.fill_diagonal_(0.0)
    return total.numpy()
