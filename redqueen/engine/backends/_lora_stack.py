"""The adapters' LoRA factors stacked per layer, for one product per layer for the whole batch.

Punica's BGMV/SGMV kernels and S-LoRA keep every adapter's factors in one stacked tensor and
index it by each row's adapter. Without a custom kernel the same effect comes from two dense
products over the concatenated factors and a row mask:

    y = W x + ((x @ A_cat) * mask[row]) @ B_cat

where ``A_cat`` (in, slots * r) holds each slot's ``A^T`` side by side, ``B_cat`` (slots * r,
out) each slot's ``s * B^T`` stacked, and ``mask[row]`` keeps the ``r`` columns of the row's own
slot (all zero for a row without an adapter). Every factor is read once per step, as in BGMV,
and the shapes do not depend on which rows use which adapter, so the step can be captured in a
CUDA graph. The extra arithmetic (``slots`` times that of one adapter) is small next to the
base weights at decode time, when reading memory is the cost.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from redqueen.engine._lora_layer import MultiLoRALinear

__all__ = ["StackedLoRA"]


class StackedLoRA:
    """Stacked factors of the adapters in use, for a fixed list of multi-LoRA layers.

    Slots are kept across calls: an adapter keeps its slot while it stays in use, and its
    factors are copied again only when they changed (a new tensor, an in-place update seen by
    the tensor's version counter, or a new scaling). Buffers grow (new slots, a larger rank)
    but never shrink, so their addresses stay fixed for captured graphs; :attr:`buffers_version`
    changes whenever they are reallocated.

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
        self.slots = 0
        self.rank = 0
        self.buffers_version = 0
        self._a: list[Tensor] = []  # per layer: (in, slots * rank)
        self._b: list[Tensor] = []  # per layer: (slots * rank, out)
        self._slot_of: dict[str, int] = {}
        self._keys: list[tuple | None] = []  # what each slot holds, to skip unchanged copies
        self.width = 0  # columns in use this call (eager paths slice to it)

    def load(self, adapter_ids: Sequence[str]) -> dict[str, int]:
        """Make these adapters' current factors available; returns adapter id -> slot.

        Raises:
            ValueError: If an adapter is not held by any of the layers.
        """
        used = list(dict.fromkeys(adapter_ids))
        if not used:
            self.width = 0
            return {}
        rank = max(self._rank_of(a) for a in used)
        if len(used) > self.slots or rank > self.rank:
            self._allocate(max(len(used), self.slots), max(rank, self.rank))
        free = [s for s in range(self.slots) if s not in {self._slot_of.get(a) for a in used}]
        assigned: dict[str, int] = {}
        for adapter_id in used:
            slot = self._slot_of.get(adapter_id)
            if slot is None:
                slot = free.pop(0)
                stale = [k for k, v in self._slot_of.items() if v == slot]
                for k in stale:
                    del self._slot_of[k]
                self._slot_of[adapter_id] = slot
            self._write(slot, adapter_id)
            assigned[adapter_id] = slot
        self.width = (max(assigned.values()) + 1) * self.rank
        return assigned

    def forget(self, adapter_ids: Sequence[str]) -> None:
        """Copy these adapters' factors again at their next use (they were replaced or removed)."""
        for adapter_id in adapter_ids:
            slot = self._slot_of.pop(adapter_id, None)
            if slot is not None:
                self._keys[slot] = None

    def factors(self, index: int, *, full: bool) -> tuple[Tensor, Tensor]:
        """``(A_cat, B_cat)`` of one layer: all slots (``full``), or the columns in use."""
        if full:
            return self._a[index], self._b[index]
        return self._a[index][:, : self.width], self._b[index][: self.width]

    def row_mask(self, slots: Sequence[int | None], *, full: bool) -> Tensor:
        """``(rows, width)`` mask keeping each row's own slot columns (``None``: no adapter)."""
        width = self.slots * self.rank if full else self.width
        mask = torch.zeros(len(slots), width, dtype=self.dtype)
        for row, slot in enumerate(slots):
            if slot is not None:
                mask[row, slot * self.rank : (slot + 1) * self.rank] = 1
        return mask.to(self.device)

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
        old_a, old_b, old_rank = self._a, self._b, self.rank
        self._a = [
            torch.zeros(layer.in_features, slots * rank, dtype=self.dtype, device=self.device)
            for layer in self.layers
        ]
        self._b = [
            torch.zeros(slots * rank, layer.out_features, dtype=self.dtype, device=self.device)
            for layer in self.layers
        ]
        # Slots already filled keep their contents (moved to the new layout).
        for i in range(len(self.layers)):
            for slot in range(self.slots):
                src = slice(slot * old_rank, (slot + 1) * old_rank)
                dst = slice(slot * rank, slot * rank + old_rank)
                self._a[i][:, dst] = old_a[i][:, src]
                self._b[i][dst] = old_b[i][src]
        self._keys += [None] * (slots - self.slots)
        self.slots, self.rank = slots, rank
        self.buffers_version += 1

    def _write(self, slot: int, adapter_id: str) -> None:
        key = tuple(
            None
            if adapter_id not in layer.adapters
            else _factor_key(*layer.adapters[adapter_id])
            for layer in self.layers
        )
        if self._keys[slot] == (adapter_id, key):
            return
        cols = slice(slot * self.rank, (slot + 1) * self.rank)
        with torch.no_grad():
            for i, layer in enumerate(self.layers):
                a_cat, b_cat = self._a[i], self._b[i]
                a_cat[:, cols] = 0
                b_cat[cols] = 0
                if adapter_id not in layer.adapters:
                    continue
                a, b, scaling = layer.adapters[adapter_id]
                r = a.shape[0]
                start = slot * self.rank
                a_cat[:, start : start + r] = a.detach().t().to(self.dtype)
                b_cat[start : start + r] = (b.detach() * scaling).t().to(self.dtype)
        self._keys[slot] = (adapter_id, key)


def _factor_key(a: Tensor, b: Tensor, scaling: float) -> tuple:
    """Identity and in-place version of a factor pair: changes whenever its values may have."""
    return (id(a), a._version, id(b), b._version, scaling)
