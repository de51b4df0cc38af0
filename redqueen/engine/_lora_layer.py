"""A linear layer that carries the LoRA factors of many adapters at once.

:class:`MultiLoRALinear` wraps one frozen ``nn.Linear`` of the base model. Every adapter the
host holds keeps its own factors here (``A: (r, in)``, ``B: (out, r)``), and each forward runs
in one of three modes, chosen by the host before the forward:

* no adapter: ``y = W x`` (the base layer alone, no extra work);
* one adapter for every row: ``y = W x + s * B (A x)``, differentiable, used by the learner;
* inference on a batch: ``y = W x + B[idx] (A[idx] x)`` with the factors gathered per row once
  per batch (scaling folded in, cast to the model dtype) and applied with two batched matrix
  products (``bmm``, ``baddbmm``), the gather-then-batched-matmul scheme of punica and S-LoRA.
  Rows without an adapter get zero factors, so they see the base model alone; a batch with a
  single adapter shares one pair of factors (two plain products).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch import Tensor, nn
from torch.nn import functional as F

__all__ = ["MultiLoRALinear", "inject_multilora", "iter_multilora"]


class MultiLoRALinear(nn.Linear):
    """A frozen ``nn.Linear`` plus the LoRA factors of many adapters.

    It takes over the original layer's weight and bias parameters (no copy) and replaces it in
    the model, so parameter names and the model's ``state_dict`` stay exactly those of the base
    model, and a forward costs one module call, as before, plus the adapter products. The
    adapter factors are plain tensors, not registered parameters; the host hands the factors of
    one adapter to the learner explicitly.

    Args:
        base: The linear layer to take over (its weights stay frozen).
    """

    def __init__(self, base: nn.Linear) -> None:
        nn.Module.__init__(self)
        self.in_features = base.in_features
        self.out_features = base.out_features
        self.weight = base.weight
        self.bias = base.bias
        #: adapter id -> (A (r, in), B (out, r), scaling)
        self.adapters: dict[str, tuple[Tensor, Tensor, float]] = {}
        self._single: str | None = None
        self._rows: tuple[Tensor, Tensor] | None = None
        self._shared: tuple[Tensor, Tensor] | None = None

    # -- adapter storage -------------------------------------------------------------------

    def set_factors(self, adapter_id: str, a: Tensor, b: Tensor, scaling: float) -> None:
        """Store (or replace) one adapter's factors for this layer.

        Raises:
            ValueError: If the factor shapes do not fit this layer.
        """
        if a.dim() != 2 or b.dim() != 2 or a.shape[0] != b.shape[1]:
            raise ValueError(
                f"LoRA factors must be A (r, in) and B (out, r); got {tuple(a.shape)}, {tuple(b.shape)}"
            )
        if a.shape[1] != self.in_features or b.shape[0] != self.out_features:
            raise ValueError(
                f"LoRA factors A {tuple(a.shape)}, B {tuple(b.shape)} do not fit a linear layer "
                f"(out={self.out_features}, in={self.in_features})"
            )
        self.adapters[adapter_id] = (a, b, float(scaling))

    def drop(self, adapter_id: str) -> None:
        """Forget one adapter's factors (no error if this layer never had them)."""
        self.adapters.pop(adapter_id, None)

    # -- routing ---------------------------------------------------------------------------

    def route_none(self) -> None:
        """Run the base layer alone."""
        self._single, self._rows, self._shared = None, None, None

    def route_single(self, adapter_id: str) -> None:
        """Apply one adapter to every row, differentiable in its factors (the training path)."""
        self.route_none()
        self._single = adapter_id if adapter_id in self.adapters else None

    def route_rows(self, adapter_ids: Sequence[str | None], dtype: torch.dtype) -> None:
        """Prepare factors for one batch, once, to be reused at every decoding step.

        If every row uses the same adapter the factors are shared (two plain matrix products
        per forward); otherwise they are gathered per row (two batched products). Adapters of
        lower rank are zero-padded to the largest rank in the batch, rows without an adapter
        get zero factors, and the scaling is folded into ``B``. Not differentiable: this is the
        inference path.
        """
        self._single = None
        used = [a for a in dict.fromkeys(adapter_ids) if a is not None and a in self.adapters]
        if not used:
            self._rows, self._shared = None, None
            return
        with torch.no_grad():
            if len(used) == 1 and all(a == used[0] for a in adapter_ids):
                a, b, scaling = self.adapters[used[0]]
                # (in, r) and (r, out): transposed once here so the forward does no copies.
                self._shared = (
                    a.to(dtype).t().contiguous(),
                    (b * scaling).to(dtype).t().contiguous(),
                )
                self._rows = None
                return
            rank = max(self.adapters[a][0].shape[0] for a in used)
            device = self.weight.device
            # Slot 0 holds zeros for rows without an adapter (or whose adapter skips this layer).
            a_stack = torch.zeros(len(used) + 1, rank, self.in_features, device=device, dtype=dtype)
            b_stack = torch.zeros(
                len(used) + 1, self.out_features, rank, device=device, dtype=dtype
            )
            for slot, adapter_id in enumerate(used, start=1):
                a, b, scaling = self.adapters[adapter_id]
                r = a.shape[0]
                a_stack[slot, :r] = a.to(dtype)
                b_stack[slot, :, :r] = (b * scaling).to(dtype)
            slot_of = {adapter_id: slot for slot, adapter_id in enumerate(used, start=1)}
            index = torch.tensor([slot_of.get(a, 0) for a in adapter_ids], device=device)  # type: ignore[arg-type]
            # (batch, in, r) and (batch, r, out)
            a_rows = a_stack.index_select(0, index).transpose(1, 2).contiguous()
            b_rows = b_stack.index_select(0, index).transpose(1, 2).contiguous()
        self._rows, self._shared = (a_rows, b_rows), None

    # -- forward ---------------------------------------------------------------------------

    def forward(self, x: Tensor) -> Tensor:
        out = F.linear(x, self.weight, self.bias)
        if self._shared is not None:
            a_t, b_t = self._shared
            return out.add_((x @ a_t) @ b_t)
        if self._rows is not None:
            a_rows, b_rows = self._rows
            squeeze = x.dim() == 2
            if squeeze:  # (batch, in) -> (batch, 1, in)
                x, out = x.unsqueeze(1), out.unsqueeze(1)
            if x.shape[0] != a_rows.shape[0]:
                raise ValueError(
                    f"mixed-adapter batch has {a_rows.shape[0]} rows but the layer got {x.shape[0]}"
                )
            h = torch.bmm(x, a_rows)  # (batch, seq, r)
            y = torch.baddbmm(out, h, b_rows)  # (batch, seq, out)
            return y.squeeze(1) if squeeze else y
        if self._single is not None:
            a, b, scaling = self.adapters[self._single]
            # Under autocast the products run in the autocast dtype; otherwise in the input's.
            if torch.is_autocast_enabled(x.device.type):
                delta = F.linear(F.linear(x, a), b)
            else:
                delta = F.linear(F.linear(x, a.to(x.dtype)), b.to(x.dtype))
            return out + scaling * delta.to(out.dtype)
        return out


def inject_multilora(model: nn.Module, target_modules: Sequence[str]) -> dict[str, MultiLoRALinear]:
    """Replace every targeted ``nn.Linear`` of ``model`` with a :class:`MultiLoRALinear`.

    A module is targeted when the last component of its name is in ``target_modules`` (the
    PEFT convention), or when its full name is.

    Returns:
        Module name (as PEFT writes it, without the ``base_model.model.`` prefix) -> layer.

    Raises:
        ValueError: If no ``nn.Linear`` of the model matches.
    """
    targets = set(target_modules)
    chosen = [
        (name, module)
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear) and (name.rsplit(".", 1)[-1] in targets or name in targets)
    ]
    if not chosen:
        raise ValueError(
            f"no nn.Linear module of the model matches target_modules={sorted(targets)}"
        )
    layers: dict[str, MultiLoRALinear] = {}
    for name, module in chosen:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        layer = MultiLoRALinear(module)
        setattr(parent, child, layer)
        layers[name] = layer
    return layers


def iter_multilora(model: nn.Module) -> Iterator[MultiLoRALinear]:
    """Every :class:`MultiLoRALinear` inside ``model``."""
    for module in model.modules():
        if isinstance(module, MultiLoRALinear):
            yield module
