"""A per-row LoRA product in Triton: each row of a batch through its own adapter's factors.

Punica's BGMV (``bgmv_shrink`` / ``bgmv_expand``), S-LoRA and vLLM's ``lora/ops/triton_ops``
apply many adapters to one batch by gathering each row's factors by its adapter index inside
the kernel, so the batch needs no grouping by adapter, no masks and no per-adapter launches.
:func:`fused_lora` does the same in two kernels, whatever the number of adapters::

    t[r] = x[r] @ A[index[r]].T                        # shrink: (rows, rank), float32
    y[r] += scaling[index[r]] * t[r] @ B[index[r]].T   # expand: (rows, out)

A row with index ``-1`` has no adapter: the kernels skip it and its output is left as it was.
Each row is computed by its own programs, which read nothing of the other rows, with a fixed
order of summation: a row's result does not depend on the batch around it, and no atomics are
used. Sums run in float32 whatever the inputs' dtype.

:func:`lora_reference` is the same product in plain PyTorch (each row's factors gathered, then
two batched products): the tests' reference, and the stand-in where Triton cannot run
(:func:`available`).

Wired in as an option, off by default: ``StaticBackend(host, fused_lora=True)`` builds the stack
with ``fused=True`` and ``StaticDecoder._project`` calls ``fused_lora(x.view(-1, in), A, B,
ones, index, out=y.view(-1, out))`` with the dense layout's own buffers as strided views, ``A
(slots, R, in)`` and ``B (slots, out, R)`` (``R = members * rank``: the block-diagonal ``B`` of
a group is a plain ``R x out`` matrix here, and the scaling is already folded into it), each
row's slot as the index (``-1`` for slot 0, no adapter). The CPU tests decode a mixed batch
through it with Triton's interpreter and get the ``hf`` backend's tokens
(``tests/engine/test_fused_lora_backend.py``); the default stays the dense form until a GPU has
timed the two (``benchmarks/rollout.py`` times ``static_fused_mixed_8`` beside
``static_mixed_8`` when the kernel can run). The kernel alone: ``benchmarks/lora_kernel.py``
times, at the 0.5B shape (hidden 896, intermediate 4864, rank 32, 64 rows, 8 adapters, bf16) and
per projection group: this kernel on contiguous factors and on the stack's dense layout (strided
views), the stack's dense masked product, and :func:`lora_reference`, eager and replayed from a
CUDA graph, over a few block sizes. Make it the default on CUDA only if it beats the dense form
inside a captured graph. The shrink runs ``rows x R / 16`` programs, each looping over the whole
input: if ``down`` (input 4864) is slow, split the input across programs too (partial sums added
by a third small kernel, which keeps rows independent of one another, rather than by atomics,
which would not).
"""

from __future__ import annotations

import torch
from torch import Tensor

try:
    import triton  # type: ignore[import-untyped, import-not-found, unused-ignore]
    import triton.language as tl  # type: ignore[import-untyped, import-not-found, unused-ignore]
except ImportError:  # the kernel is optional (the ``gpu`` extra); lora_reference stands in
    _HAVE_TRITON = False
else:
    _HAVE_TRITON = True

__all__ = ["MAX_RANK", "available", "fused_lora", "lora_reference"]

#: Widest rank the expand kernel holds in one tile (a group's ``members * rank``).
MAX_RANK = 256

if _HAVE_TRITON:

    @triton.jit
    def _shrink_kernel(
        x_ptr,
        a_ptr,
        index_ptr,
        t_ptr,
        size_in,
        rank,
        stride_xm,
        stride_xk,
        stride_aa,
        stride_ar,
        stride_ak,
        stride_tm,
        BLOCK_R: tl.constexpr,
        BLOCK_K: tl.constexpr,
    ):
        """``t[row, block] = x[row] @ A[index[row], block].T``, one program per row and rank block."""
        row = tl.program_id(0).to(tl.int64)
        offs_r = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)
        adapter = tl.load(index_ptr + row)
        # A row without an adapter (-1) masks everything out: bounds of zero, not a branch.
        in_bound = tl.where(adapter >= 0, size_in, 0)
        r_ok = offs_r < tl.where(adapter >= 0, rank, 0)
        a_rows = (
            a_ptr + tl.maximum(adapter, 0).to(tl.int64) * stride_aa + offs_r[:, None] * stride_ar
        )
        acc = tl.zeros((BLOCK_R,), dtype=tl.float32)
        for k0 in range(0, size_in, BLOCK_K):
            offs_k = k0 + tl.arange(0, BLOCK_K)
            k_ok = offs_k < in_bound
            xk = tl.load(x_ptr + row * stride_xm + offs_k * stride_xk, mask=k_ok, other=0.0)
            a = tl.load(
                a_rows + offs_k[None, :] * stride_ak,
                mask=r_ok[:, None] & k_ok[None, :],
                other=0.0,
            )  # (BLOCK_R, BLOCK_K)
            acc += tl.sum(a.to(tl.float32) * xk.to(tl.float32)[None, :], axis=1)
        tl.store(t_ptr + row * stride_tm + offs_r, acc, mask=r_ok)

    @triton.jit
    def _expand_kernel(
        t_ptr,
        b_ptr,
        scaling_ptr,
        index_ptr,
        y_ptr,
        size_out,
        rank,
        stride_tm,
        stride_ba,
        stride_bn,
        stride_br,
        stride_ym,
        stride_yn,
        BLOCK_N: tl.constexpr,
        BLOCK_R: tl.constexpr,
    ):
        """``y[row, block] += scaling * t[row] @ B[index[row], block].T``, one program per row and
        output block; rows without an adapter are left untouched."""
        row = tl.program_id(0).to(tl.int64)
        offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_r = tl.arange(0, BLOCK_R)
        adapter = tl.load(index_ptr + row)
        slot = tl.maximum(adapter, 0).to(tl.int64)
        r_ok = offs_r < tl.where(adapter >= 0, rank, 0)
        n_ok = offs_n < tl.where(adapter >= 0, size_out, 0)
        t = tl.load(t_ptr + row * stride_tm + offs_r, mask=r_ok, other=0.0)  # (BLOCK_R,)
        b = tl.load(
            b_ptr + slot * stride_ba + offs_n[:, None] * stride_bn + offs_r[None, :] * stride_br,
            mask=n_ok[:, None] & r_ok[None, :],
            other=0.0,
        )  # (BLOCK_N, BLOCK_R)
        scale = tl.load(scaling_ptr + slot).to(tl.float32)
        delta = tl.sum(b.to(tl.float32) * t[None, :], axis=1) * scale
        y_ptrs = y_ptr + row * stride_ym + offs_n * stride_yn
        y = tl.load(y_ptrs, mask=n_ok, other=0.0)
        tl.store(y_ptrs, (y.to(tl.float32) + delta).to(y_ptr.dtype.element_ty), mask=n_ok)

    from triton.runtime.interpreter import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
        InterpretedFunction,
    )

    # ``triton.jit`` decides at decoration time, when this module is imported, whether it
    # builds for the CPU interpreter (``TRITON_INTERPRET=1``) or for the device.
    _INTERPRETED = isinstance(_shrink_kernel, InterpretedFunction)
else:
    _INTERPRETED = False


def available() -> bool:
    """Whether :func:`fused_lora` can run here: Triton is importable and either a CUDA device
    is present or the kernels were built for the interpreter."""
    return _HAVE_TRITON and (_INTERPRETED or torch.cuda.is_available())


def _check(x: Tensor, a_stack: Tensor, b_stack: Tensor, scaling: Tensor, index: Tensor) -> None:
    """Raise ``ValueError`` unless the shapes fit one another."""
    if x.dim() != 2 or a_stack.dim() != 3 or b_stack.dim() != 3:
        raise ValueError(
            f"expected x (rows, in), A (adapters, rank, in), B (adapters, out, rank); got "
            f"{tuple(x.shape)}, {tuple(a_stack.shape)}, {tuple(b_stack.shape)}"
        )
    adapters, rank, size_in = a_stack.shape
    if size_in != x.shape[1] or b_stack.shape[0] != adapters or b_stack.shape[2] != rank:
        raise ValueError(
            f"factors do not fit: x {tuple(x.shape)}, A {tuple(a_stack.shape)}, B {tuple(b_stack.shape)}"
        )
    if scaling.shape != (adapters,) or index.shape != (x.shape[0],):
        raise ValueError(
            f"expected scaling ({adapters},) and index ({x.shape[0]},); got "
            f"{tuple(scaling.shape)}, {tuple(index.shape)}"
        )


def lora_reference(
    x: Tensor, a_stack: Tensor, b_stack: Tensor, scaling: Tensor, index: Tensor
) -> Tensor:
    """The per-row LoRA delta in plain PyTorch: each row's factors gathered, two batched products.

    Args:
        x: ``(rows, in)`` inputs.
        a_stack: ``(adapters, rank, in)`` every adapter's ``A``.
        b_stack: ``(adapters, out, rank)`` every adapter's ``B``.
        scaling: ``(adapters,)`` every adapter's scaling (``alpha / rank``).
        index: ``(rows,)`` integer adapter of each row; ``-1``: none (a zero delta).

    Returns:
        ``(rows, out)`` the deltas, in ``x``'s dtype.

    Raises:
        ValueError: If the shapes do not fit one another.
    """
    _check(x, a_stack, b_stack, scaling, index)
    has = index >= 0
    slot = index.clamp(min=0).long()
    a = a_stack.index_select(0, slot)  # (rows, rank, in)
    b = b_stack.index_select(0, slot)  # (rows, out, rank)
    t = torch.bmm(a, x.unsqueeze(-1))  # (rows, rank, 1)
    delta = torch.bmm(b, t).squeeze(-1)  # (rows, out)
    scale = torch.where(has, scaling.index_select(0, slot), torch.zeros_like(scaling[:1]))
    return delta * scale.to(delta.dtype).unsqueeze(-1)


def fused_lora(
    x: Tensor,
    a_stack: Tensor,
    b_stack: Tensor,
    scaling: Tensor,
    index: Tensor,
    *,
    out: Tensor | None = None,
    block_k: int = 128,
    block_n: int = 64,
) -> Tensor:
    """Add each row's LoRA delta, through its own adapter, in two Triton kernels.

    Any strides are accepted (the factors may be views of a larger stack); sums run in float32.

    Args:
        x: ``(rows, in)`` inputs.
        a_stack: ``(adapters, rank, in)`` every adapter's ``A``.
        b_stack: ``(adapters, out, rank)`` every adapter's ``B``.
        scaling: ``(adapters,)`` every adapter's scaling.
        index: ``(rows,)`` integer adapter of each row, in ``[-1, adapters)`` (not checked:
            that would wait for the device); ``-1``: none (left unchanged).
        out: ``(rows, out)`` where the deltas are added, in place (the base product, say);
            default a new zero tensor in ``x``'s dtype.
        block_k: Input columns per step of the shrink kernel (a power of two).
        block_n: Output columns per program of the expand kernel (a power of two).

    Returns:
        ``out`` with the deltas added.

    Raises:
        RuntimeError: If the kernel cannot run here (see :func:`available`).
        ValueError: If the shapes do not fit, the rank exceeds :data:`MAX_RANK`, or the
            tensors are not on a CUDA device while the kernels are compiled for one.
    """
    if not available():
        raise RuntimeError("fused_lora needs triton and a CUDA device (or TRITON_INTERPRET=1)")
    _check(x, a_stack, b_stack, scaling, index)
    rows, size_in = x.shape
    adapters, rank, _ = a_stack.shape
    size_out = b_stack.shape[1]
    if rank > MAX_RANK:
        raise ValueError(f"rank {rank} > {MAX_RANK}, the widest the expand kernel holds")
    if not _INTERPRETED and x.device.type != "cuda":
        raise ValueError(f"the compiled kernel runs on CUDA tensors; x is on {x.device}")
    if out is None:
        out = torch.zeros(rows, size_out, dtype=x.dtype, device=x.device)
    elif out.shape != (rows, size_out):
        raise ValueError(f"out must be ({rows}, {size_out}); got {tuple(out.shape)}")
    if rows == 0 or rank == 0 or adapters == 0:
        return out
    full_r = triton.next_power_of_2(rank)
    shrink_r = min(full_r, 16)
    t = torch.empty(rows, rank, dtype=torch.float32, device=x.device)  # (rows, rank)
    _shrink_kernel[(rows, triton.cdiv(rank, shrink_r))](
        x, a_stack, index, t,
        size_in, rank,
        x.stride(0), x.stride(1),
        a_stack.stride(0), a_stack.stride(1), a_stack.stride(2),
        t.stride(0),
        BLOCK_R=shrink_r, BLOCK_K=block_k,
    )  # fmt: skip
    _expand_kernel[(rows, triton.cdiv(size_out, block_n))](
        t, b_stack, scaling, index, out,
        size_out, rank,
        t.stride(0),
        b_stack.stride(0), b_stack.stride(1), b_stack.stride(2),
        out.stride(0), out.stride(1),
        BLOCK_N=block_n, BLOCK_R=full_r,
    )  # fmt: skip
    return out
