"""The adapters' LoRA factors stacked per projection group, applied to a mixed batch at once.

Punica (SGMV) and S-LoRA keep every adapter's factors in one stacked tensor and run the rows
of each adapter together. Here the unit is a *projection group*: the projections that read the
same input (``q, k, v``; ``gate, up``; ``o``; ``down``), whose base weights the decoder runs as
one product. A group's factors are stacked over adapter slots, with its members' ``A`` side by
side (width ``R = members * rank``) and their ``B`` block-diagonal, so that one pair of
products serves the whole group. Two ways to apply them, the same arithmetic:

* **segmented**: rows grouped by slot, one batched product per factor::

      xs = x[gather]                          # rows grouped by adapter: (slots * seg, ...)
      delta = bmm(bmm(xs, A[slot]), B[slot])  # all adapters at once
      y += delta[scatter]                     # back to batch order

* **dense** (the default): every slot's ``A`` in one matrix, the columns of other slots
  masked out, then one accumulating product::

      t = (x @ A_all) * mask                  # (rows, slots * R); mask: the row's slot only
      y += t @ B_all                          # addmm, in place

  Four kernels per group whatever the number of adapters, and no gather or scatter: on a
  GPU, where a decode step is bound by its number of kernels rather than by arithmetic, this
  costs least. A row's sums are those of its own adapter alone (the other slots add exact
  zeros), whatever the batch around it; in the segmented form the shapes of the batched
  products change with the batch, and on the CPU that was seen to move a float32 sample. The
  dense form's extra arithmetic, every slot's ``A`` for every row, grows with the number of
  adapters: with many adapters on a CPU the segmented form can be faster.

* **fused** (opt-in, CUDA with Triton): the dense layout's factors read in place by the per-row
  kernel of :mod:`._lora_kernel` (Punica's BGMV), each row gathering its own slot's factors::

      y += fused_lora(x, A[slot], B[slot], index=row_slot)   # two kernels per group

  no masks and no arithmetic for other slots; rows of slot 0 are skipped.

Slot 0 holds zeros, for rows without an adapter and for the padding of short segments.
Routings are built once per batch, so a decode step does the same few kernels whatever the
number of adapters, with no Python work per adapter; with every segment padded to a fixed
length the shapes are fixed too, and the step can be captured in a CUDA graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from redqueen.engine._lora_layer import MultiLoRALinear

__all__ = ["LoRARouting", "StackedLoRA"]


@dataclass(frozen=True)
class LoRARouting:
    """Where each row of a batch goes in the stacked product.

    Args:
        gather: ``(slots * seg,)`` batch row of each segment position (padding: any row).
        scatter: ``(rows,)`` segment position of each batch row.
        slots: Slots the product runs over (slot 0, the zero slot, included).
        seg: Rows per segment.
        masks: Dense form only: per group width ``R``, ``(rows, slots * R)`` with ones on the
            columns of each row's slot.
        index: Fused form only: ``(rows,)`` int32 slot of each row, ``-1`` for slot 0 (no
            adapter).
    """

    gather: Tensor
    scatter: Tensor
    slots: int
    seg: int
    masks: dict[int, Tensor] | None = None
    index: Tensor | None = None


class StackedLoRA:
    """Stacked factors of the adapters in use, for fixed projection groups.

    Slots are kept across calls: an adapter keeps its slot while it stays in use, and its
    factors are copied again only when they changed (a new tensor, an in-place update seen by
    the tensor's version counter, or :meth:`forget`). Buffers grow (more slots, a larger rank)
    but never shrink, so their addresses stay fixed for captured graphs;
    :attr:`buffers_version` changes whenever they are reallocated.

    Args:
        groups: Projection groups, each the linear layers that read one input, in the order
            :meth:`factors` indexes them; members that are not multi-LoRA layers keep zero
            factors.
        dtype: Dtype of the stacked factors (the model's).
        device: Where the factors live.
        dense: Keep ``A`` in the dense form's layout (``(in, slots, R)``) and build masks in
            :meth:`routing`; otherwise the segmented form's (``(slots, in, R)``).
        fused: Apply the factors with the per-row kernel (:meth:`kernel_factors`; routings
            carry each row's slot instead of masks). Needs the dense layout.

    Raises:
        ValueError: If ``fused`` is asked for without the dense layout.
    """

    def __init__(
        self,
        groups: Sequence[Sequence[nn.Linear]],
        *,
        dtype: torch.dtype,
        device: torch.device,
        dense: bool = False,
        fused: bool = False,
    ) -> None:
        if fused and not dense:
            raise ValueError("the fused LoRA kernel reads the dense layout (dense=True)")
        self.groups = [list(g) for g in groups]
        self.layers = [m for g in self.groups for m in g if isinstance(m, MultiLoRALinear)]
        self.dtype = dtype
        self.device = device
        self.dense = dense
        self.fused = fused
        self.slots = 1  # slot 0: zeros
        self.rank = 0
        self.buffers_version = 0
        self._a: list[Tensor] = []  # per group: (slots, in, R), dense (in, slots, R)
        self._b: list[Tensor] = []  # per group: (slots, R, out), block-diagonal
        self._ones = torch.ones(1, dtype=torch.float32, device=device)  # the kernel's scalings
        self._slot_of: dict[str, int] = {}
        self._keys: list[tuple | None] = [None]  # what each slot holds, to skip unchanged copies

    @property
    def widths(self) -> set[int]:
        """The groups' stacked widths ``R = members * rank``."""
        return {len(g) * self.rank for g in self.groups}

    def load(self, adapter_ids: Sequence[str]) -> dict[str, int]:
        """Make these adapters' current factors available; returns adapter id -> slot (>= 1).

        Raises:
            ValueError: If an adapter is not held by any of the layers.
        """
        used = list(dict.fromkeys(adapter_ids))
        if not used:
            return {}
        rank = max(self._rank_of(a) for a in used)
        if len(used) + 1 > self.slots or rank > self.rank:
            self._allocate(max(len(used) + 1, self.slots), max(rank, self.rank))
        taken = {self._slot_of.get(a) for a in used}
        free = [s for s in range(1, self.slots) if s not in taken]
        assigned: dict[str, int] = {}
        for adapter_id in used:
            slot = self._slot_of.get(adapter_id)
            if slot is None:
                slot = free.pop(0)
                for k in [k for k, v in self._slot_of.items() if v == slot]:
                    del self._slot_of[k]
                self._slot_of[adapter_id] = slot
            self._write(slot, adapter_id)
            assigned[adapter_id] = slot
        return assigned

    def forget(self, adapter_ids: Sequence[str]) -> None:
        """Copy these adapters' factors again at their next use (they were replaced or removed)."""
        for adapter_id in adapter_ids:
            slot = self._slot_of.pop(adapter_id, None)
            if slot is not None:
                self._keys[slot] = None

    def factors(self, index: int, slots: int) -> tuple[Tensor, Tensor]:
        """Segmented form: ``A (slots, in, R)`` and ``B (slots, R, out)`` of one group."""
        a = self._a[index]
        a = a[:, :slots].transpose(0, 1) if self.dense else a[:slots]
        return a, self._b[index][:slots]

    def dense_factors(self, index: int, slots: int) -> tuple[Tensor, Tensor]:
        """Dense form: ``A (in, slots * R)`` and ``B (slots * R, out)`` of one group (views).

        Raises:
            ValueError: If the stack keeps the segmented layout.
        """
        if not self.dense:
            raise ValueError("this stack keeps the segmented layout (dense=False)")
        a, b = self._a[index][:, :slots], self._b[index][:slots]
        return a.reshape(a.shape[0], -1), b.reshape(-1, b.shape[-1])

    def kernel_factors(self, index: int, slots: int) -> tuple[Tensor, Tensor, Tensor]:
        """Fused form: ``A (slots, R, in)``, ``B (slots, out, R)`` (strided views of the dense
        layout, the scaling folded into ``B``) and ones ``(slots,)``, as
        :func:`~redqueen.engine.backends._lora_kernel.fused_lora` takes them.

        Raises:
            ValueError: If the stack keeps the segmented layout.
        """
        if not self.dense:
            raise ValueError("this stack keeps the segmented layout (dense=False)")
        a = self._a[index][:, :slots].permute(1, 2, 0)
        b = self._b[index][:slots].transpose(1, 2)
        return a, b, self._ones[:slots]

    def routing(
        self, row_slots: Sequence[int], *, seg: int | None = None, all_slots: bool = False
    ) -> LoRARouting:
        """Group the rows by slot (0: no adapter) for the stacked product.

        Args:
            row_slots: Slot of each batch row.
            seg: Rows per segment (at least the largest group); default the largest group.
            all_slots: Run over every allocated slot (fixed shapes), not just those up to the
                highest one in use.
        """
        groups: list[list[int]] = [[] for _ in range(self.slots)]
        for row, slot in enumerate(row_slots):
            groups[slot].append(row)
        longest = max(len(g) for g in groups)
        seg = longest if seg is None else seg
        if seg < longest:
            raise ValueError(f"segment length {seg} < largest group {longest}")
        slots = self.slots if all_slots else max(row_slots) + 1
        gather = [0] * (slots * seg)
        scatter = [0] * len(row_slots)
        for slot, rows in enumerate(groups[:slots]):
            for j, row in enumerate(rows):
                gather[slot * seg + j] = row
                scatter[row] = slot * seg + j
        masks = index = None
        if self.fused:
            index = torch.tensor([-1 if s == 0 else s for s in row_slots], dtype=torch.int32)
            index = index.to(self.device)
        elif self.dense:
            onehot = torch.zeros(len(row_slots), slots, dtype=self.dtype)
            onehot[torch.arange(len(row_slots)), torch.tensor(list(row_slots))] = 1
            masks = {w: onehot.repeat_interleave(w, dim=1).to(self.device) for w in self.widths}
        return LoRARouting(
            gather=torch.tensor(gather, device=self.device),
            scatter=torch.tensor(scatter, device=self.device),
            slots=slots,
            seg=seg,
            masks=masks,
            index=index,
        )

    # -- internals -------------------------------------------------------------------------

    def _rank_of(self, adapter_id: str) -> int:
        ranks = [
            layer.adapters[adapter_id][0].shape[0]
            for layer in self.layers
            if adapter_id in layer.adapters
        ]
        if not ranks:
            raise ValueError(f"adapter {adapter_id!r} has no factors in the model's layers")
        return max(ranks)

    def _allocate(self, slots: int, rank: int) -> None:
        self._a, self._b = [], []
        for group in self.groups:
            width, size_in = len(group) * rank, group[0].in_features
            out = sum(m.out_features for m in group)
            shape = (size_in, slots, width) if self.dense else (slots, size_in, width)
            self._a.append(torch.zeros(shape, dtype=self.dtype, device=self.device))
            self._b.append(torch.zeros(slots, width, out, dtype=self.dtype, device=self.device))
        self._ones = torch.ones(slots, dtype=torch.float32, device=self.device)
        # Every slot is written again at its next use (the block layout moved with the rank).
        self._keys = [None] * slots
        self.slots, self.rank = slots, rank
        self.buffers_version += 1

    def _write(self, slot: int, adapter_id: str) -> None:
        key = tuple(
            None if adapter_id not in layer.adapters else _factor_key(*layer.adapters[adapter_id])
            for layer in self.layers
        )
        if self._keys[slot] == (adapter_id, key):
            return
        rank = self.rank
        with torch.no_grad():
            for i, group in enumerate(self.groups):
                a_slot = self._a[i][:, slot] if self.dense else self._a[i][slot]  # (in, R)
                b_slot = self._b[i][slot]  # (R, out)
                a_slot.zero_()
                b_slot.zero_()
                col = 0
                for j, layer in enumerate(group):
                    out = layer.out_features
                    held = getattr(layer, "adapters", {})
                    if adapter_id in held:
                        a, b, scaling = held[adapter_id]
                        r = a.shape[0]
                        a_slot[:, j * rank : j * rank + r] = a.detach().t().to(self.dtype)
                        b_slot[j * rank : j * rank + r, col : col + out] = (
                            (b.detach() * scaling).t().to(self.dtype)
                        )
                    col += out
        self._keys[slot] = (adapter_id, key)


def _factor_key(a: Tensor, b: Tensor, scaling: float) -> tuple:
    """Identity and in-place version of a factor pair: changes whenever its values may have."""
    return (id(a), a._version, id(b), b._version, scaling)
