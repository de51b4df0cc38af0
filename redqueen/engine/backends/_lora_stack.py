"""The adapters' LoRA factors stacked per layer, applied to a mixed batch in segments.

Punica (SGMV) and S-LoRA keep every adapter's factors in one stacked tensor and run the rows
of each adapter as one segment. Here that is, per projection and for the whole batch::

    xs = x[gather]                          # rows grouped by adapter: (slots * seg, ...)
    delta = bmm(bmm(xs, A[slot]), B[slot])  # one batched product per factor, all adapters
    y += delta[scatter]                     # back to batch order

``A`` is ``(slots, in, r)`` and ``B`` ``(slots, r, out)`` with the scaling folded in; slot 0
holds zeros, for rows without an adapter and for the padding of short segments. ``gather`` and
``scatter`` are built once per batch, so a decode step does the same few kernels whatever the
number of adapters, with no Python work per adapter; with every segment padded to a fixed
length the shapes are fixed too, and the step can be captured in a CUDA graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from redqueen.engine._lora_layer import MultiLoRALinear

__all__ = ["LoRARouting", "StackedLoRA"]


@dataclass(frozen=True)
class LoRARouting:
    """Where each row of a batch goes in the segmented product.

    Args:
        gather: ``(slots * seg,)`` batch row of each segment position (padding: any row).
        scatter: ``(rows,)`` segment position of each batch row.
        slots: Slots the product runs over (slot 0, the zero slot, included).
        seg: Rows per segment.
    """

    gather: Tensor
    scatter: Tensor
    slots: int
    seg: int


class StackedLoRA:
    """Stacked factors of the adapters in use, for a fixed list of multi-LoRA layers.

    Slots are kept across calls: an adapter keeps its slot while it stays in use, and its
    factors are copied again only when they changed (a new tensor, an in-place update seen by
    the tensor's version counter, or :meth:`forget`). Buffers grow (more slots, a larger rank)
    but never shrink, so their addresses stay fixed for captured graphs;
    :attr:`buffers_version` changes whenever they are reallocated.

    Args:
        layers: The multi-LoRA layers, in the order :meth:`factors` indexes them.
        dtype: Dtype of the stacked factors (the model's).
        device: Where the factors live.
    """

    def __init__(
        self, layers: Sequence[MultiLoRALinear], *, dtype: torch.dtype, device: torch.device
    ) -> None:
        self.layers = list(layers)
        self.dtype = dtype
        self.device = device
        self.slots = 1  # slot 0: zeros
        self.rank = 0
        self.buffers_version = 0
        self._a: list[Tensor] = []  # per layer: (slots, in, rank)
        self._b: list[Tensor] = []  # per layer: (slots, rank, out)
        self._slot_of: dict[str, int] = {}
        self._keys: list[tuple | None] = [None]  # what each slot holds, to skip unchanged copies

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
        """``A (slots, in, r)`` and ``B (slots, r, out)`` of one layer, the first ``slots``."""
        return self._a[index][:slots], self._b[index][:slots]

    def routing(
        self, row_slots: Sequence[int], *, seg: int | None = None, all_slots: bool = False
    ) -> LoRARouting:
        """Group the rows by slot (0: no adapter) for the segmented product.

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
        return LoRARouting(
            gather=torch.tensor(gather, device=self.device),
            scatter=torch.tensor(scatter, device=self.device),
            slots=slots,
            seg=seg,
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
        old_a, old_b, old_rank, old_slots = self._a, self._b, self.rank, self.slots
        self._a = [
            torch.zeros(slots, layer.in_features, rank, dtype=self.dtype, device=self.device)
            for layer in self.layers
        ]
        self._b = [
            torch.zeros(slots, rank, layer.out_features, dtype=self.dtype, device=self.device)
            for layer in self.layers
        ]
        # Slots already filled keep their contents.
        for i in range(len(old_a)):
            self._a[i][:old_slots, :, :old_rank] = old_a[i]
            self._b[i][:old_slots, :old_rank] = old_b[i]
        self._keys += [None] * (slots - old_slots)
        self.slots, self.rank = slots, rank
        self.buffers_version += 1

    def _write(self, slot: int, adapter_id: str) -> None:
        key = tuple(
            None if adapter_id not in layer.adapters else _factor_key(*layer.adapters[adapter_id])
            for layer in self.layers
        )
        if self._keys[slot] == (adapter_id, key):
            return
        with torch.no_grad():
            for i, layer in enumerate(self.layers):
                a_slot, b_slot = self._a[i][slot], self._b[i][slot]  # (in, rank), (rank, out)
                a_slot.zero_()
                b_slot.zero_()
                if adapter_id not in layer.adapters:
                    continue
                a, b, scaling = layer.adapters[adapter_id]
                r = a.shape[0]
                a_slot[:, :r] = a.detach().t().to(self.dtype)
                b_slot[:r] = (b.detach() * scaling).t().to(self.dtype)
        self._keys[slot] = (adapter_id, key)


def _factor_key(a: Tensor, b: Tensor, scaling: float) -> tuple:
    """Identity and in-place version of a factor pair: changes whenever its values may have."""
    return (id(a), a._version, id(b), b._version, scaling)
