"""Low-rank algebra on genomes that never forms a module's dense update.

Sums of updates are re-factorised with a QR-core SVD (``sum_i w_i dW_i = (Qb U) S (Qa V)^T``
from QR decompositions of the stacked factors and an SVD of a small ``kr x kr`` core) or its
Gram-matrix twin. Modules of equal shape are stacked and processed as one batch, so a 7B-shape
adapter is a handful of batched calls. Inner products and distances live in ``_distances``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import Tensor
from torch.profiler import record_function

from redqueen.genomes._genome import LoRAGenome

#: Factorisation used by :func:`lowrank_svd`: Householder QR of the stacked factors, or the
#: Cholesky/eigen-decomposition of their float64 Gram matrices (mostly matrix products), or
#: ``"auto"``: QR on the CPU, Gram on a GPU, where it measured fastest and most accurate
#: (benchmarks/README.md, "Operators").
METHODS = ("auto", "qr", "gram")


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Dtype the linear algebra runs in: float64 stays, everything else runs in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def group_by_shape(shapes: Mapping[str, tuple[int, int]]) -> dict[tuple[int, int], list[str]]:
    """Module names grouped by ``(out, in)``, so equal shapes can be stacked into one batch."""
    groups: dict[tuple[int, int], list[str]] = {}
    for name, (out_features, in_features) in shapes.items():
        groups.setdefault((out_features, in_features), []).append(name)
    return groups


def lowrank_svd(
    b: Tensor,
    a: Tensor,
    *,
    rank: int | None = None,
    method: str = "auto",
    small_on_cpu: bool | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Thin SVD of ``b @ a`` without forming it, batched over leading dimensions.

    Args:
        b: ``(..., out, k)`` left factors (any scaling already applied).
        a: ``(..., k, in)`` right factors.
        rank: Keep only the top ``rank`` triplets (default: all ``p = min(k, out, in)``).
        method: ``"qr"`` (Householder QR of the stacked factors), ``"gram"`` (Cholesky or
            eigen-decomposition of the float64 Gram matrices ``b^T b`` and ``a a^T``: mostly matrix
            products) or ``"auto"`` (QR on the CPU, Gram on a GPU).
        small_on_cpu: Run the small ``k x k`` decompositions on the CPU, split over threads,
            when the factors live on a GPU, where batched eigen/SVD solvers of matrices larger
            than 32 x 32 run one matrix at a time. Default (None): yes.

    Returns:
        ``(U, S, V)`` with ``U: (..., out, q)``, ``S: (..., q)`` descending, ``V: (..., in, q)`` and
        ``b @ a ~= U diag(S) V^T`` (exact when ``q = p``), in :func:`compute_dtype` of the inputs.

    Raises:
        ValueError: If the method is unknown or the inner dimensions differ.
    """
    return lowrank_svd_many([(b, a)], rank=rank, method=method, small_on_cpu=small_on_cpu)[0]


def lowrank_svd_many(
    pairs: Sequence[tuple[Tensor, Tensor]],
    *,
    rank: int | None = None,
    method: str = "auto",
    small_on_cpu: bool | None = None,
) -> list[tuple[Tensor, Tensor, Tensor]]:
    """:func:`lowrank_svd` of several ``(b, a)`` batches of different shapes at once.

    The small ``k x k`` problems of all batches are solved in one batched call (one round trip
    when they run on the CPU), which matters when a genome has a few distinct module shapes.
    """
    if method not in METHODS:
        raise ValueError(f"lowrank_svd: method must be one of {METHODS}, got {method!r}")
    for b, a in pairs:
        if b.shape[-1] != a.shape[-2]:
            raise ValueError(
                f"lowrank_svd: inner dimensions differ: b {tuple(b.shape)}, a {tuple(a.shape)}"
            )
    on_gpu = pairs[0][0].device.type != "cpu"
    if method == "auto":
        method = "gram" if on_gpu else "qr"
    small_on_cpu = True if small_on_cpu is None else small_on_cpu
    prepared: list[tuple[Tensor, Tensor]] = []
    smalls: list[tuple[Tensor, ...]] = []  # (core,) for QR, (Gram of b, Gram of a) for Gram
    with record_function(f"lowrank_svd.{method}"):
        for b, a in pairs:
            dtype = compute_dtype(b.dtype)
            b, a = b.to(dtype), a.to(dtype)
            if method == "qr":
                qb, rb = torch.linalg.qr(b)  # (..., out, p1), (..., p1, k)
                qa, ra = torch.linalg.qr(a.mT)  # (..., in, p2), (..., p2, k)
                prepared.append((qb, qa))
                smalls.append((rb @ ra.mT,))
            else:
                b64, a64 = b.to(torch.float64), a.to(torch.float64)
                prepared.append((b, a))
                smalls.append((b64.mT @ b64, a64 @ a64.mT))
    offload = small_on_cpu and on_gpu
    with record_function("lowrank_svd.small_problems"):
        solved = _solve_small(_core_svd if method == "qr" else _gram_core, smalls, offload)
    out = []
    with record_function("lowrank_svd.vectors"):
        for (left, right), (x, s, y) in zip(prepared, solved, strict=True):
            q = s.shape[-1] if rank is None else min(rank, s.shape[-1])
            if method == "qr":  # U = Qb U_core, V = Qa V_core
                u, v = left @ x[..., :q], right @ y[..., :q, :].mT
            else:  # U = b Pb, V = a^T Pa
                dtype = left.dtype
                u, v = left @ x[..., :q].to(dtype), right.mT @ y[..., :q].to(dtype)
            out.append((*_fix_signs(u, v), s[..., :q].to(u.dtype)))
    return [(u, s, v) for u, v, s in out]


def _fix_signs(u: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """Flip each singular pair so the largest-magnitude entry of ``u`` is positive.

    Solvers on different devices return singular vectors with arbitrary signs; operators that
    act in the singular basis (rotations, masks) then give device-dependent children.
    """
    idx = u.abs().argmax(-2, keepdim=True)
    sign = torch.sign(torch.gather(u, -2, idx))
    sign = torch.where(sign == 0, torch.ones_like(sign), sign)
    return u * sign, v * sign


def _solve_small(
    fn: Callable[..., tuple[Tensor, ...]], inputs: list[tuple[Tensor, ...]], offload: bool
) -> list[tuple[Tensor, ...]]:
    """Apply ``fn`` to every batch of small matrices, concatenating batches of equal shape."""
    results: list[tuple[Tensor, ...] | None] = [None] * len(inputs)
    by_shape: dict[tuple, list[int]] = {}
    for i, xs in enumerate(inputs):
        by_shape.setdefault(tuple(tuple(x.shape[-2:]) for x in xs) + (xs[0].dtype,), []).append(i)
    for members in by_shape.values():
        leads = [inputs[i][0].shape[:-2] for i in members]
        flat = [
            torch.cat([inputs[i][j].reshape(-1, *inputs[i][j].shape[-2:]) for i in members])
            for j in range(len(inputs[members[0]]))
        ]
        outs = _on_cpu(fn, *flat) if offload else fn(*flat)
        start = 0
        for i, lead in zip(members, leads, strict=True):
            n = int(torch.Size(lead).numel())
            results[i] = tuple(o[start : start + n].reshape(*lead, *o.shape[1:]) for o in outs)
            start += n
    return results  # type: ignore[return-value]


_POOL: ThreadPoolExecutor | None = None


def _on_cpu(fn: Callable[..., tuple[Tensor, ...]], *xs: Tensor) -> tuple[Tensor, ...]:
    """Apply a batched small-matrix ``fn`` on the CPU, chunks in parallel threads, results back."""
    global _POOL
    device, lead = xs[0].device, xs[0].shape[:-2]
    with record_function("small_problems.to_host"):  # waits for the device work queued before
        flat = [x.reshape(-1, *x.shape[-2:]).to("cpu") for x in xs]
    workers = max(1, min(os.cpu_count() or 1, 16, flat[0].shape[0]))
    with record_function("small_problems.host_solve"):
        if workers == 1:
            parts = [fn(*flat)]
        else:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(max_workers=16)
            chunks = list(zip(*(x.chunk(workers) for x in flat), strict=True))
            parts = list(_POOL.map(lambda args: fn(*args), chunks))  # torch releases the GIL
        outs = [torch.cat(pieces) for pieces in zip(*parts, strict=True)]
    with record_function("small_problems.to_device"):
        return tuple(o.reshape(*lead, *o.shape[1:]).to(device) for o in outs)


def _core_svd(core: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    return tuple(torch.linalg.svd(core, full_matrices=False))


#: Largest ratio of Cholesky diagonal entries (a condition estimate of the factor) for which the
#: Cholesky route is used; beyond it the eigen-decomposition handles (near) rank deficiency.
_CHOLESKY_MAX_RATIO = 1e4


def _gram_core(gb: Tensor, ga: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """From Gram matrices ``b^T b`` and ``a a^T``, maps ``Pb, Pa`` with ``U = b Pb``, ``V = a^T Pa``.

    Well-conditioned batches take the Cholesky route (``b = Qb Rb`` with ``Rb^T Rb = b^T b``,
    cheap triangular work); any (near) rank-deficient member sends the batch to the
    eigen-decomposition route, which drops directions without energy.
    """
    lb, info_b = torch.linalg.cholesky_ex(gb)
    la, info_a = torch.linalg.cholesky_ex(ga)
    if bool((info_b == 0).all() & (info_a == 0).all()):
        db = torch.diagonal(lb, dim1=-2, dim2=-1).abs()
        da = torch.diagonal(la, dim1=-2, dim2=-1).abs()
        ratio = torch.maximum(db.amax(-1) / db.amin(-1), da.amax(-1) / da.amin(-1))
        if bool((ratio < _CHOLESKY_MAX_RATIO).all()):
            u, s, wh = torch.linalg.svd(lb.mT @ la, full_matrices=False)  # Rb Ra^T
            pb = torch.linalg.solve_triangular(lb.mT, u, upper=True)
            pa = torch.linalg.solve_triangular(la.mT, wh.mT, upper=True)
            return pb, s, pa
    return _gram_eigen_core(gb, ga)


def _gram_eigen_core(gb: Tensor, ga: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`_gram_core` through eigen-decompositions; robust to rank deficiency."""
    lb, vb = torch.linalg.eigh(gb)
    la, va = torch.linalg.eigh(ga)
    lb, la = lb.clamp_min(0), la.clamp_min(0)
    # Directions with (numerically) zero energy carry no signal; drop them instead of dividing by ~0.
    tol_b = lb.amax(-1, keepdim=True) * 1e-13
    tol_a = la.amax(-1, keepdim=True) * 1e-13
    sb, sa = lb.sqrt(), la.sqrt()
    ib = torch.where(lb > tol_b, 1.0 / sb.clamp_min(1e-300), torch.zeros_like(sb))
    ia = torch.where(la > tol_a, 1.0 / sa.clamp_min(1e-300), torch.zeros_like(sa))
    core = (sb.unsqueeze(-1) * vb.mT) @ (va * sa.unsqueeze(-2))  # Rb Ra^T, (..., k, k)
    u, s, wh = torch.linalg.svd(core, full_matrices=False)
    return vb @ (ib.unsqueeze(-1) * u), s, va @ (ia.unsqueeze(-1) * wh.mT)


def split_factors(
    u: Tensor, s: Tensor, v: Tensor, *, rank: int, scaling: float, dtype: torch.dtype
) -> tuple[Tensor, Tensor]:
    """LoRA factors ``(A, B)`` of ``U diag(S) V^T`` at ``rank`` and ``scaling``, batched.

    ``sqrt(S / scaling)`` goes to both factors so they stay balanced; missing triplets (when the
    update has lower rank than ``rank``) are zero-padded, so the child always has ``rank`` columns.
    """
    q = s.shape[-1]
    if q < rank:
        pad = rank - q
        u = torch.nn.functional.pad(u, (0, pad))
        v = torch.nn.functional.pad(v, (0, pad))
        s = torch.nn.functional.pad(s, (0, pad))
    u, s, v = u[..., :rank], s[..., :rank], v[..., :rank]
    root = (s.clamp_min(0) / scaling).sqrt()
    b = u * root.unsqueeze(-2)
    a = (v * root.unsqueeze(-2)).mT
    return a.to(dtype).contiguous(), b.to(dtype).contiguous()


def _resolve(genomes: Sequence[LoRAGenome], weights: Sequence[float] | None) -> list[float]:
    if not genomes:
        raise ValueError("need at least one genome")
    for other in genomes[1:]:
        genomes[0].check_compatible(other)
    if weights is None:
        return [1.0 / len(genomes)] * len(genomes)
    weights = [float(w) for w in weights]
    if len(weights) != len(genomes):
        raise ValueError(f"got {len(weights)} weights for {len(genomes)} genomes")
    return weights


def weighted_svd(
    genomes: Sequence[LoRAGenome],
    weights: Sequence[float] | None = None,
    *,
    rank: int | None = None,
    alpha: float | None = None,
    method: str = "auto",
    small_on_cpu: bool | None = None,
) -> LoRAGenome:
    """Rank-``r`` truncated SVD of ``sum_i w_i dW_i``, per module, without forming any ``dW``.

    This is the workhorse of merging crossovers: the result is the best rank-``r`` approximation
    (Eckart-Young) of the weighted sum, and exact when the summed ranks fit in ``r``.

    Args:
        genomes: Genomes over the same modules and shapes (ranks and alphas may differ).
        weights: One weight per genome (default: uniform ``1/k``).
        rank: Rank of the result (default: the first genome's).
        alpha: Alpha of the result (default: the first genome's), so ``dW`` is matched exactly.
        method: See :func:`lowrank_svd`.
        small_on_cpu: See :func:`lowrank_svd`.

    Raises:
        GenomeMismatchError: If the genomes differ in modules, shapes or base model.
        ValueError: If the number of weights differs from the number of genomes.
    """
    ws = _resolve(genomes, weights)
    first = genomes[0]
    rank = first.rank if rank is None else int(rank)
    alpha = first.alpha if alpha is None else float(alpha)
    dtype, device = first.dtype, first.device
    groups = list(group_by_shape(first.shapes).values())
    pairs = []
    with record_function("weighted_svd.stack"):
        for names in groups:
            bs, as_ = [], []
            for g, w in zip(genomes, ws, strict=True):
                cd = compute_dtype(g.dtype)
                b = torch.stack([g.factors(n)[1] for n in names]).to(device, cd)
                bs.append(b * (w * g.scaling))
                as_.append(torch.stack([g.factors(n)[0] for n in names]).to(device, cd))
            pairs.append((torch.cat(bs, -1), torch.cat(as_, -2)))
    solved = lowrank_svd_many(pairs, rank=rank, method=method, small_on_cpu=small_on_cpu)
    factors: dict[str, tuple[Tensor, Tensor]] = {}
    with record_function("weighted_svd.split"):
        for names, (u, s, v) in zip(groups, solved, strict=True):
            a, b = split_factors(u, s, v, rank=rank, scaling=alpha / rank, dtype=dtype)
            factors.update({n: (a[i], b[i]) for i, n in enumerate(names)})
    return LoRAGenome(
        {n: factors[n] for n in first.modules}, rank=rank, alpha=alpha, base_model=first.base_model
    )


def genome_svd(
    genome: LoRAGenome, *, method: str = "auto"
) -> dict[str, tuple[Tensor, Tensor, Tensor]]:
    """Per-module thin SVD ``(U, S, V)`` of ``dW`` (scaling applied), from the factors only."""
    out: dict[str, tuple[Tensor, Tensor, Tensor]] = {}
    for names in group_by_shape(genome.shapes).values():
        b = torch.stack([genome.factors(n)[1] for n in names]) * genome.scaling
        a = torch.stack([genome.factors(n)[0] for n in names])
        u, s, v = lowrank_svd(b, a, method=method)
        out.update({n: (u[i], s[i], v[i]) for i, n in enumerate(names)})
    return {n: out[n] for n in genome.modules}
