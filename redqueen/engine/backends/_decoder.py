"""A lean forward pass over a Llama/Qwen2-style model's own modules, with a static KV cache.

The Hugging Face forward rebuilds masks, grows its cache and dispatches through several layers
of Python at every step. :class:`StaticDecoder` runs the same arithmetic on the same weights
(it calls the model's own norms, embeddings, rotary tables and activation), but with every
tensor preallocated: the KV cache is ``(batch, kv_heads, capacity, head_dim)`` per layer,
written in place at a column held in a device tensor, so one decode step has fixed shapes and
addresses and can be captured in a CUDA graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from redqueen.engine._lora_layer import MultiLoRALinear
from redqueen.engine.backends._lora_kernel import fused_lora
from redqueen.engine.backends._lora_stack import LoRARouting, StackedLoRA
from redqueen.engine.backends._supported import (
    SUPPORTED_MODEL_TYPES,
    UnsupportedModelError,
    check_supported,
)

__all__ = [
    "SUPPORTED_MODEL_TYPES",
    "KVCache",
    "StaticDecoder",
    "UnsupportedModelError",
    "projection_groups",
]


@dataclass
class KVCache:
    """Preallocated keys and values of every layer, and which key columns each row may see.

    Args:
        keys: Per layer ``(batch, kv_heads, capacity, head_dim)``.
        values: Same shapes as ``keys``.
        valid: ``(batch, capacity)`` bool; ``True`` where a row has a real token.
    """

    keys: list[Tensor]
    values: list[Tensor]
    valid: Tensor


class _Group:
    """Projections that read the same input, run as one product over fused base weights.

    The members' weights are concatenated along their outputs once, and each member's own
    weight (and bias) becomes a view into the fused tensor: no second copy of the weights, and
    the model's modules compute exactly what they did. :meth:`current` tells whether the
    members still point into the fused tensor (a later ``model.to(...)`` would give them new
    storage).
    """

    def __init__(self, members: list[nn.Linear]) -> None:
        self.members = members
        self.sizes = [m.out_features for m in members]
        self.lora: int | None = None  # index in the LoRA stack, if any member has adapters
        self.width = 0  # stacked LoRA width, set with the stack's rank
        self.fuse()

    def fuse(self) -> None:
        """(Re)build the fused weight and bias and point the members' parameters into them.

        Decoders over the same model share one fused tensor (kept on the first member), so a
        second decoder neither copies the weights again nor moves them from under the first.
        """
        members = self.members
        kept = getattr(members[0], "_fused_projections", None)
        if kept is not None and kept[0] == [id(m) for m in members] and _views_of(kept, members):
            self.weight, self.bias = kept[1], kept[2]
        else:
            self.weight, self.bias = self._build()
            if len(members) > 1:
                kept = ([id(m) for m in members], self.weight, self.bias)
                setattr(members[0], "_fused_projections", kept)  # noqa: B010
        self._pointers = [(m.weight.data_ptr(), m.weight.shape) for m in members]

    def _build(self) -> tuple[Tensor, Tensor | None]:
        members = self.members
        if len(members) == 1:
            return members[0].weight, members[0].bias
        with torch.no_grad():
            weight = torch.cat([m.weight for m in members])
            for m, view in zip(members, weight.split(self.sizes), strict=True):
                m.weight.data = view
            biases = [m.bias for m in members]
            if all(b is None for b in biases):
                return weight, None
            if all(b is not None for b in biases):
                bias = torch.cat(biases)
                for m, view in zip(members, bias.split(self.sizes), strict=True):
                    m.bias.data = view
                return weight, bias
            # Some members without a bias: a zero one in their place, copied (not shared).
            return weight, torch.cat(
                [
                    m.bias if m.bias is not None else m.weight.new_zeros(n)
                    for m, n in zip(members, self.sizes, strict=True)
                ]
            )

    def current(self) -> bool:
        """Whether every member's weight is still the fused tensor's view."""
        return self._pointers == [(m.weight.data_ptr(), m.weight.shape) for m in self.members]


def _views_of(kept: tuple, members: list[nn.Linear]) -> bool:
    """Whether the members' weights are still the rows of the kept fused weight."""
    weight, offset = kept[1], 0
    for m in members:
        rows = m.weight.shape[0]
        if offset + rows > len(weight) or m.weight.data_ptr() != weight[offset].data_ptr():
            return False
        offset += rows
    return offset == len(weight)


class _Layer:
    """One decoder layer's modules, its projections in four fused groups."""

    def __init__(self, layer: nn.Module) -> None:
        attn, mlp = layer.self_attn, layer.mlp
        self.in_norm = layer.input_layernorm
        self.post_norm = layer.post_attention_layernorm
        self.act = mlp.act_fn
        self.qkv = _Group(_linears(attn.q_proj, attn.k_proj, attn.v_proj))
        self.o = _Group(_linears(attn.o_proj))
        self.gate_up = _Group(_linears(mlp.gate_proj, mlp.up_proj))
        self.down = _Group(_linears(mlp.down_proj))
        self.groups = (self.qkv, self.o, self.gate_up, self.down)
        self.scaling = float(getattr(attn, "scaling", attn.head_dim**-0.5))


def projection_groups(model: nn.Module) -> list[list[nn.Linear]]:
    """The linear layers of a Llama-style model grouped by input, in :class:`StaticDecoder`
    order: per decoder layer ``[q, k, v], [o], [gate, up], [down]``.

    Raises:
        UnsupportedModelError: If the model is not a Llama/Qwen2-style decoder.
    """
    check_supported(model)
    groups = []
    for layer in model.model.layers:
        attn, mlp = layer.self_attn, layer.mlp
        groups += [
            _linears(attn.q_proj, attn.k_proj, attn.v_proj),
            _linears(attn.o_proj),
            _linears(mlp.gate_proj, mlp.up_proj),
            _linears(mlp.down_proj),
        ]
    return groups


def _linears(*modules: object) -> list[nn.Linear]:
    """The projections of one group, each checked to be a linear layer.

    Raises:
        UnsupportedModelError: If one is not (a quantised or otherwise replaced projection).
    """
    for module in modules:
        if not isinstance(module, nn.Linear):
            raise UnsupportedModelError(
                f"backend 'static': a projection is a {type(module).__name__}, not a linear "
                "layer; use backend 'hf', which runs any causal LM"
            )
    return [m for m in modules if isinstance(m, nn.Linear)]


class StaticDecoder:
    """Prefill and single-token decode steps over a static KV cache, multi-LoRA included.

    Args:
        model: A Hugging Face ``LlamaForCausalLM``-style model (``model.model.layers``).
        lora: The stacked factors of the model's multi-LoRA layers.

    Raises:
        UnsupportedModelError: If the architecture is not one of :data:`SUPPORTED_MODEL_TYPES`
            or its layers differ from the Llama layout (extra norms, a sliding window in use).
    """

    def __init__(self, model: nn.Module, lora: StackedLoRA) -> None:
        check_supported(model)
        config = model.config
        inner = model.model
        self.embed = inner.embed_tokens
        self.norm = inner.norm
        self.rotary = inner.rotary_emb
        self.lm_head = model.lm_head
        self.lora = lora
        self.layers = [_Layer(layer) for layer in inner.layers]
        index = {tuple(map(id, g)): i for i, g in enumerate(lora.groups)}
        for layer in self.layers:
            for group in layer.groups:
                if any(isinstance(m, MultiLoRALinear) for m in group.members):
                    group.lora = index[tuple(map(id, group.members))]
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = inner.layers[0].self_attn.head_dim
        self.gqa = self.kv_heads != self.heads

    def check_weights(self) -> bool:
        """Fuse the projections' weights again where the model's parameters moved (a
        ``model.to(...)`` after construction); cheap when nothing moved.

        Returns:
            Whether any group was fused again (graphs captured before read the old weights).
        """
        moved = False
        for layer in self.layers:
            for group in layer.groups:
                if not group.current():
                    group.fuse()
                    moved = True
        return moved

    # -- storage ---------------------------------------------------------------------------

    def new_cache(
        self, batch: int, capacity: int, *, dtype: torch.dtype, device: torch.device
    ) -> KVCache:
        """Zeroed keys and values for ``batch`` rows of up to ``capacity`` tokens each."""
        shape = (batch, self.kv_heads, capacity, self.head_dim)
        return KVCache(
            keys=[torch.zeros(shape, dtype=dtype, device=device) for _ in self.layers],
            values=[torch.zeros(shape, dtype=dtype, device=device) for _ in self.layers],
            valid=torch.zeros(batch, capacity, dtype=torch.bool, device=device),
        )

    def rotary_table(
        self, capacity: int, *, dtype: torch.dtype, device: torch.device
    ) -> tuple[Tensor, Tensor]:
        """``cos, sin`` of every position below ``capacity``, ``(capacity, head_dim)`` each.

        Computed by the model's own rotary module, so the values equal those of its forward.
        """
        positions = torch.arange(capacity, device=device)[None]
        probe = torch.zeros(1, dtype=dtype, device=device)
        cos, sin = self.rotary(probe, positions)
        return cos[0], sin[0]

    # -- forward ---------------------------------------------------------------------------

    def prefill(
        self,
        input_ids: Tensor,
        positions: Tensor,
        cache: KVCache,
        rope: tuple[Tensor, Tensor],
        route: LoRARouting | None,
        *,
        distinct: Tensor | None = None,
        expand: Tensor | None = None,
    ) -> Tensor:
        """Run left-padded prompts ``(batch, width)``, fill the cache's first ``width`` columns.

        ``cache.valid[:, :width]`` must already mark the real prompt tokens. Returns the last
        position's logits ``(cache rows, vocab)``. With ``distinct`` and ``expand``,
        ``input_ids``, ``positions`` and ``route`` hold only the cache rows ``distinct`` (a
        prompt with its adapter, run once however many samples it has), and cache row ``i``
        receives the result of row ``expand[i]`` of them.
        """
        width = input_ids.shape[1]
        valid = cache.valid[:, :width]
        if distinct is not None:
            valid = valid.index_select(0, distinct)
        causal = torch.ones(width, width, dtype=torch.bool, device=input_ids.device).tril()
        # A padding query sees itself, so that no row of the softmax is empty (no NaN).
        attend = (causal & valid[:, None, :]) | torch.eye(
            width, dtype=torch.bool, device=input_ids.device
        )
        cos, sin = (
            rope[0][positions][:, None],
            rope[1][positions][:, None],
        )  # (batch, 1, width, dim)
        x = self.embed(input_ids)
        for i, layer in enumerate(self.layers):
            q, k, v = self._qkv(layer, x, cos, sin, route)
            if expand is None:
                cache.keys[i][:, :, :width] = k
                cache.values[i][:, :, :width] = v
            else:
                cache.keys[i][:, :, :width] = k.index_select(0, expand)
                cache.values[i][:, :, :width] = v.index_select(0, expand)
            x = self._finish_layer(layer, x, q, k, v, attend[:, None], route)
        logits = self.lm_head(self.norm(x[:, -1:]))[:, 0]
        return logits if expand is None else logits.index_select(0, expand)

    def step(
        self,
        tokens: Tensor,
        positions: Tensor,
        column: Tensor,
        cache: KVCache,
        rope: tuple[Tensor, Tensor],
        route: LoRARouting | None,
        *,
        kv_len: int | None = None,
    ) -> Tensor:
        """Decode one token per row: ``tokens`` and ``positions`` are ``(batch,)``.

        Writes the new keys and values at cache column ``column`` (a ``(1,)`` device tensor) and
        marks it valid. ``kv_len`` limits attention to the first columns (eager decoding); with
        ``None`` every step attends over the whole capacity, masked, so shapes never change.
        Returns logits ``(batch, vocab)``.
        """
        cache.valid.index_fill_(1, column, True)
        valid = cache.valid if kv_len is None else cache.valid[:, :kv_len]
        attend = valid[:, None, None, :]  # (batch, 1, 1, keys)
        cos, sin = rope[0][positions][:, None, None], rope[1][positions][:, None, None]
        x = self.embed(tokens[:, None])  # (batch, 1, hidden)
        for i, layer in enumerate(self.layers):
            q, k, v = self._qkv(layer, x, cos, sin, route)
            keys, values = cache.keys[i], cache.values[i]
            keys.index_copy_(2, column, k)
            values.index_copy_(2, column, v)
            if kv_len is not None:
                keys, values = keys[:, :, :kv_len], values[:, :, :kv_len]
            x = self._finish_layer(layer, x, q, keys, values, attend, route)
        return self.lm_head(self.norm(x))[:, 0]

    # -- one layer -------------------------------------------------------------------------

    def _project(self, group: _Group, x: Tensor, route: LoRARouting | None) -> Tensor:
        """One group's fused product, its adapters' deltas added (fused, dense or segmented)."""
        y = F.linear(x, group.weight, group.bias)
        if route is None or group.lora is None:
            return y
        if route.index is not None:  # the per-row kernel, each row through its own slot
            a, b, ones = self.lora.kernel_factors(group.lora, route.slots)
            index = route.index
            if x.shape[1] != 1:  # a prefill: every position of a row goes through its slot
                index = index[:, None].expand(x.shape[0], x.shape[1]).reshape(-1)
            fused_lora(x.reshape(-1, x.shape[-1]), a, b, ones, index, out=y.view(-1, y.shape[-1]))
            return y
        if route.masks is not None:
            a, b = self.lora.dense_factors(group.lora, route.slots)  # (in, S*R), (S*R, out)
            t = (x.reshape(-1, x.shape[-1]) @ a).view(x.shape[0], -1, a.shape[1])
            t.mul_(route.masks[b.shape[0] // route.slots][:, None])
            y.view(-1, y.shape[-1]).addmm_(t.view(-1, a.shape[1]), b)
            return y
        a, b = self.lora.factors(group.lora, route.slots)  # (slots, in, R), (slots, R, out)
        xs = x.index_select(0, route.gather).view(route.slots, -1, x.shape[-1])
        t = torch.bmm(xs, a)  # (slots, seg * seq, R)
        # Each member's own block of B: a sum over its rank alone, as its layer computes it.
        rank, col, parts = self.lora.rank, 0, []
        for j, size in enumerate(group.sizes):
            block = slice(j * rank, (j + 1) * rank)
            parts.append(torch.bmm(t[..., block], b[:, block, col : col + size]))
            col += size
        delta = parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)
        delta = delta.view(route.slots * route.seg, x.shape[1], -1)
        return y.add_(delta.index_select(0, route.scatter))

    def _qkv(
        self, layer: _Layer, x: Tensor, cos: Tensor, sin: Tensor, route: LoRARouting | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        batch, seq = x.shape[:2]
        h = layer.in_norm(x)
        qkv = self._project(layer.qkv, h, route).view(batch, seq, -1, self.head_dim)
        qkv = qkv.transpose(1, 2)  # (batch, heads + 2 * kv_heads, seq, head_dim)
        rotated = self.heads + self.kv_heads  # q and k, rotated together
        qk = qkv[:, :rotated]
        qk = qk * cos + _rotate_half(qk) * sin
        return qk[:, : self.heads], qk[:, self.heads :], qkv[:, rotated:]

    def _finish_layer(
        self,
        layer: _Layer,
        x: Tensor,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        attend: Tensor,
        route: LoRARouting | None,
    ) -> Tensor:
        batch, seq = x.shape[:2]
        attn = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attend, scale=layer.scaling, enable_gqa=self.gqa
        )  # (batch, heads, seq, head_dim)
        attn = attn.transpose(1, 2).reshape(batch, seq, -1)
        x = x + self._project(layer.o, attn, route)
        h = layer.post_norm(x)
        gate, up = self._project(layer.gate_up, h, route).split(layer.gate_up.sizes, dim=-1)
        return x + self._project(layer.down, layer.act(gate) * up, route)


def _rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)
