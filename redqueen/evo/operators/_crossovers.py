"""Crossover operators on LoRA genomes: merges, task-vector moves, subspace mixing, layer swaps, DARE, TIES."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Literal

import torch
from pydantic import Field
from torch import Tensor

from redqueen._registry import Needs
from redqueen.evo.operators._base import CROSSOVERS, better_parent, check_range, rand, randn, refit
from redqueen.genomes import (
    LoRAGenome,
    compute_dtype,
    group_by_shape,
    lowrank_svd,
    split_factors,
    weighted_svd,
)


def _two(parents: Sequence[LoRAGenome], where: str) -> None:
    if len(parents) != 2:
        raise ValueError(f"{where} needs exactly 2 parents, got {len(parents)}")


@CROSSOVERS.register("svd_merge")
def svd_merge(
    parents: Sequence[LoRAGenome],
    *,
    weights: Sequence[float] | None = None,
    rng: torch.Generator | None = None,
    method: Literal["auto", "qr", "gram"] = "auto",
    small_on_cpu: bool | None = None,
) -> LoRAGenome:
    """Weighted merge of k parents, truncated to rank r: ``svd_r(sum_i w_i dW_i)``.

    The best rank-r approximation of the weighted sum of updates (exact when the parents' ranks
    add up to at most r), computed with the QR-core SVD on factors only, batched by module shape.
    Deterministic; ``rng`` is accepted for a uniform signature.

    Args:
        parents: Parents; the child has the first one's rank and alpha.
        weights: One weight per parent (default: the mean, ``1/k`` each).
        rng: Unused.
        method: ``"auto"``, ``"qr"`` or ``"gram"`` (see :func:`redqueen.genomes.lowrank_svd`).
        small_on_cpu: Solve the small core problems on the CPU for GPU genomes (same reference).
    """
    return weighted_svd(parents, weights, method=method, small_on_cpu=small_on_cpu)


@CROSSOVERS.register("task_vector", needs=Needs(arity=(2, 2)))
def task_vector(
    parents: Sequence[LoRAGenome],
    *,
    weights: Sequence[float] | None = None,
    rng: torch.Generator,
    t: float | None = None,
    t_range: tuple[float, float] = (1.0, 1.5),
) -> LoRAGenome:
    """Move along the line from the worse parent toward (and past) the better one.

    ``dW = dW_worse + t (dW_better - dW_worse)``: ``t`` in [0, 1] interpolates, ``t > 1``
    extrapolates in the direction that made the better parent better (task-vector arithmetic on
    true updates, not on separately scaled factors). The better parent is the one with the larger
    weight (weights act as fitness here), the first one by default.

    Args:
        parents: Exactly two parents; the child has the first one's rank and alpha.
        weights: Fitness-like scores that pick the better parent.
        rng: Draws ``t`` uniformly from ``t_range`` when ``t`` is not given.
        t: Fixed step (overrides ``t_range``).
        t_range: ``(low, high)`` for the random step.
    """
    _two(parents, "crossover 'task_vector'")
    if t is None:
        low, high = (float(x) for x in t_range)
        if not (math.isfinite(low) and math.isfinite(high) and low <= high):
            raise ValueError(
                f"crossover 'task_vector': t_range must be finite (low, high) with low <= high, got {t_range!r}"
            )
        t = low + (high - low) * float(rand((1,), rng, torch.device("cpu")))
    t = float(t)
    best = better_parent(weights, 2)
    step = [t, 1.0 - t] if best == 0 else [1.0 - t, t]
    first = parents[0]
    return weighted_svd(parents, step, rank=first.rank, alpha=first.alpha)


@CROSSOVERS.register("svd_subspace", needs=Needs(arity=(2, 2)))
def svd_subspace(
    parents: Sequence[LoRAGenome],
    *,
    weights: Sequence[float] | None = None,
    rng: torch.Generator,
    j: Annotated[int, Field(ge=0)] | None = None,
) -> LoRAGenome:
    """Top ``j`` singular triplets of each module from the first parent, the top ``r - j`` from the second.

    Recombines whole directions of the update, the spectral analogue of one-point crossover.

    Args:
        parents: Exactly two parents; the child has the first one's rank and alpha.
        weights: Unused (the order of the parents decides who gives the leading triplets).
        rng: Draws ``j`` uniformly from ``1..r-1`` (``0..1`` at rank 1) when not given.
        j: Triplets taken from the first parent, in [0, r].
    """
    _two(parents, "crossover 'svd_subspace'")
    first, second = parents
    r = first.rank
    if j is None:
        low, high = (1, r - 1) if r > 1 else (0, 1)
        j = int(torch.randint(low, high + 1, (1,), generator=rng, device=rng.device))
    j = int(check_range("crossover 'svd_subspace'", "j", j, 0, r))
    factors: dict[str, tuple[Tensor, Tensor]] = {}
    for names in group_by_shape(first.shapes).values():
        parts = []
        for g, take in ((first, j), (second, r - j)):
            cd = compute_dtype(g.dtype)
            b = torch.stack([g.factors(n)[1] for n in names]).to(first.device, cd) * g.scaling
            a = torch.stack([g.factors(n)[0] for n in names]).to(first.device, cd)
            u, s, v = lowrank_svd(b, a, rank=max(take, 1))
            pad = take - s.shape[-1]
            if pad > 0:
                u, v = torch.nn.functional.pad(u, (0, pad)), torch.nn.functional.pad(v, (0, pad))
                s = torch.nn.functional.pad(s, (0, pad))
            parts.append((u[..., :take], s[..., :take], v[..., :take]))
        u, s, v = (torch.cat([p[i] for p in parts], -1) for i in range(3))
        a, b = split_factors(u, s, v, rank=r, scaling=first.scaling, dtype=first.dtype)
        factors.update({n: (a[i], b[i]) for i, n in enumerate(names)})
    return first.replace({n: factors[n] for n in first.modules})


@CROSSOVERS.register("layer_swap")
def layer_swap(
    parents: Sequence[LoRAGenome], *, weights: Sequence[float] | None = None, rng: torch.Generator
) -> LoRAGenome:
    """Per-module (uniform-style) crossover: each module's update comes whole from one parent.

    Modules are the genes; a parent is drawn per module with probability proportional to its
    weight (uniform by default). Updates are rescaled (or re-truncated) to the child's rank and alpha,
    so each inherited module keeps its exact ``dW``.

    Args:
        parents: Parents; the child has the first one's rank and alpha.
        weights: Non-negative inheritance probabilities (normalised).
        rng: Generator for the per-module draws.
    """
    probs = torch.tensor(
        [1.0] * len(parents) if weights is None else list(weights), dtype=torch.float64
    )
    if (probs < 0).any() or probs.sum() <= 0 or not torch.isfinite(probs).all():
        raise ValueError(
            f"crossover 'layer_swap': weights must be non-negative with a positive sum, got {probs.tolist()}"
        )
    first = parents[0]
    picks = torch.multinomial(
        (probs / probs.sum()).to(rng.device), len(first.modules), replacement=True, generator=rng
    ).tolist()
    factors = {}
    for name, k in zip(first.modules, picks, strict=True):
        donor = parents[k]
        a, b = donor.factors(name)
        a, b = a.to(first.device), b.to(first.device)
        factors[name] = refit(
            a,
            b,
            scaling=donor.scaling,
            rank=first.rank,
            new_scaling=first.scaling,
            dtype=first.dtype,
        )
    return first.replace(factors)


@CROSSOVERS.register("dare")
def dare(
    parents: Sequence[LoRAGenome],
    *,
    weights: Sequence[float] | None = None,
    rng: torch.Generator,
    drop: Annotated[float, Field(ge=0, lt=1)] = 0.5,
) -> LoRAGenome:
    """DARE (drop and rescale, Yu et al. 2024) on the factors, then a truncated merge.

    Each entry of every parent's A and B is dropped with probability ``drop`` and the survivors
    are rescaled by ``1 / (1 - drop)``. The masks are independent, so each parent's update is
    unbiased (``E[B' A'] = B A``), and it stays low-rank: no dense update is formed. The masked
    parents are then merged with ``svd_merge``.

    Args:
        parents: Parents; the child has the first one's rank and alpha.
        weights: Merge weights (default: the mean).
        rng: Generator for the masks.
        drop: Drop probability, in [0, 1).
    """
    drop = check_range("crossover 'dare'", "drop", drop, 0.0, 1.0)
    if drop >= 1.0:
        raise ValueError("crossover 'dare': drop must be < 1, got 1")
    keep = 1.0 - drop
    masked = []
    for g in parents:
        factors = {}
        for name, (a, b) in g.items():
            ma = rand(a.shape, rng, a.device) < keep
            mb = rand(b.shape, rng, b.device) < keep
            factors[name] = (a * ma / keep, b * mb / keep)
        masked.append(g.replace(factors))
    return weighted_svd(masked, weights)


#: Dense modules up to this size get an exact SVD; larger ones a randomised one.
_EXACT_SVD_MAX = 512


def _truncate_dense(m: Tensor, rank: int, rng: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """Top-``rank`` SVD of a dense matrix: exact when small, seeded randomised range finder when large."""
    if min(m.shape) <= _EXACT_SVD_MAX:
        u, s, vh = torch.linalg.svd(m, full_matrices=False)
        return u[:, :rank], s[:rank], vh[:rank].mT
    width = min(rank + 10, min(m.shape))
    y = m @ randn((m.shape[1], width), rng, m)
    for _ in range(4):  # power iterations sharpen the spectrum; QR keeps them stable
        q, _r = torch.linalg.qr(y)
        q, _r = torch.linalg.qr(m.mT @ q)
        y = m @ q
    q, _r = torch.linalg.qr(y)
    u, s, vh = torch.linalg.svd(q.mT @ m, full_matrices=False)
    return (q @ u)[:, :rank], s[:rank], vh[:rank].mT


@CROSSOVERS.register("ties")
def ties(
    parents: Sequence[LoRAGenome],
    *,
    weights: Sequence[float] | None = None,
    rng: torch.Generator,
    density: Annotated[float, Field(gt=0, le=1)] = 0.2,
) -> LoRAGenome:
    """TIES merging (Yadav et al. 2023): trim, elect sign, disjoint mean; then truncate to rank r.

    Per module, each parent's weighted update keeps its top ``density`` fraction of entries by
    magnitude; the elected sign of each entry is the sign of the sum; the child entry is the mean
    of the kept values that agree with it. Sign election is entry-wise, so this operator forms
    each module's dense update on the device, one module at a time, and truncates the result back
    to rank r (exact SVD for small modules, a seeded randomised SVD for large ones).

    Args:
        parents: Parents; the child has the first one's rank and alpha.
        weights: Per-parent weights applied before trimming (default: 1 each).
        rng: Generator for the randomised SVD of large modules.
        density: Share of entries each parent keeps, in (0, 1].
    """
    density = check_range("crossover 'ties'", "density", density, 0.0, 1.0, low_open=True)
    ws = [1.0] * len(parents) if weights is None else list(weights)
    first = parents[0]
    cd = compute_dtype(first.dtype)
    factors = {}
    for name in first.modules:
        total = None
        stack = []
        for g, w in zip(parents, ws, strict=True):
            dw = g.delta_weight(name).to(first.device, cd) * w
            keep = max(1, math.ceil(density * dw.numel()))
            thresh = dw.abs().flatten().kthvalue(dw.numel() - keep + 1).values
            dw = torch.where(dw.abs() >= thresh, dw, torch.zeros_like(dw))
            stack.append(dw)
            total = dw if total is None else total + dw
        assert total is not None  # parents[0] exists, so the loop ran
        sign = torch.sign(total)
        count = torch.zeros_like(total)
        agree_sum = torch.zeros_like(total)
        for dw in stack:
            agree = (torch.sign(dw) == sign) & (dw != 0)
            agree_sum += torch.where(agree, dw, torch.zeros_like(dw))
            count += agree
        merged = agree_sum / count.clamp_min(1)
        u, s, v = _truncate_dense(merged, first.rank, rng)
        factors[name] = split_factors(
            u, s, v, rank=first.rank, scaling=first.scaling, dtype=first.dtype
        )
    return first.replace(factors)
