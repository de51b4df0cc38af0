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
from redqueen.engine.backends._lora_stack import LoRARouting, StackedLoRA

__all__ = ["SUPPORTED_MODEL_TYPES", "KVCache", "StaticDecoder", "UnsupportedModelError"]

#: ``config.model_type`` values whose decoder layers this forward reproduces exactly.
SUPPORTED_MODEL_TYPES: tuple[str, ...] = ("llama", "qwen2", "mistral")

_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class UnsupportedModelError(ValueError):
    """The model is not a Llama/Qwen2-style decoder the static backend can run."""


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


class _Layer:
    """One decoder layer's modules and where its projections sit in the LoRA stack."""

    def __init__(self, layer: nn.Module, lora_index: dict[int, int]) -> None:
        attn, mlp = layer.self_attn, layer.mlp
        self.in_norm = layer.input_layernorm
        self.post_norm = layer.post_attention_layernorm
        self.act = mlp.act_fn
        self.proj = {
            name: getattr(attn if name in _PROJECTIONS[:4] else mlp, name) for name in _PROJECTIONS
        }
        self.lora = {name: lora_index.get(id(m)) for name, m in self.proj.items()}
        self.scaling = float(getattr(attn, "scaling", attn.head_dim**-0.5))


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
        _check_supported(model)
        config = model.config
        inner = model.model
        self.embed = inner.embed_tokens
        self.norm = inner.norm
        self.rotary = inner.rotary_emb
        self.lm_head = model.lm_head
        self.lora = lora
        index = {id(layer): i for i, layer in enumerate(lora.layers)}
        self.layers = [_Layer(layer, index) for layer in inner.layers]
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = inner.layers[0].self_attn.head_dim
        self.gqa = self.kv_heads != self.heads

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

    def _linear(self, layer: _Layer, name: str, x: Tensor, route: LoRARouting | None) -> Tensor:
        module = layer.proj[name]
        y = F.linear(x, module.weight, module.bias)
        index = layer.lora[name]
        if route is None or index is None:
            return y
        a, b = self.lora.factors(index, route.slots)  # (slots, in, r), (slots, r, out)
        xs = x.index_select(0, route.gather).view(route.slots, -1, x.shape[-1])
        delta = torch.bmm(torch.bmm(xs, a), b)  # (slots, seg * seq, out)
        delta = delta.view(route.slots * route.seg, x.shape[1], -1)
        return y.add_(delta.index_select(0, route.scatter))

    def _qkv(
        self, layer: _Layer, x: Tensor, cos: Tensor, sin: Tensor, route: LoRARouting | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        batch, seq = x.shape[:2]
        h = layer.in_norm(x)
        q = (
            self._linear(layer, "q_proj", h, route)
            .view(batch, seq, -1, self.head_dim)
            .transpose(1, 2)
        )
        k = (
            self._linear(layer, "k_proj", h, route)
            .view(batch, seq, -1, self.head_dim)
            .transpose(1, 2)
        )
        v = (
            self._linear(layer, "v_proj", h, route)
            .view(batch, seq, -1, self.head_dim)
            .transpose(1, 2)
        )
        return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin, v

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
        x = x + self._linear(layer, "o_proj", attn, route)
        h = layer.post_norm(x)
        gate = self._linear(layer, "gate_proj", h, route)
        up = self._linear(layer, "up_proj", h, route)
        return x + self._linear(layer, "down_proj", layer.act(gate) * up, route)


def _rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _check_supported(model: nn.Module) -> None:
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", type(model).__name__)
    hint = "use backend 'hf', which runs any causal LM"
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise UnsupportedModelError(
            f"backend 'static' runs Llama/Qwen2-style decoders (model_type in "
            f"{list(SUPPORTED_MODEL_TYPES)}), not {model_type!r}; {hint}"
        )
    if getattr(config, "use_sliding_window", False) or getattr(config, "sliding_window", None):
        raise UnsupportedModelError(f"backend 'static' has no sliding-window attention; {hint}")
    layers = getattr(getattr(model, "model", None), "layers", None)
    if not layers:
        raise UnsupportedModelError(f"backend 'static': model.model.layers not found; {hint}")
    attn = layers[0].self_attn
    if hasattr(attn, "q_norm") or not all(
        isinstance(getattr(attn, n, None), nn.Linear) for n in _PROJECTIONS[:4]
    ):
        raise UnsupportedModelError(f"backend 'static': unexpected attention layout; {hint}")
    mlp = layers[0].mlp
    if not all(isinstance(getattr(mlp, n, None), nn.Linear) for n in _PROJECTIONS[4:]):
        raise UnsupportedModelError(f"backend 'static': unexpected MLP layout; {hint}")


def lora_layers(model: nn.Module) -> list[MultiLoRALinear]:
    """The model's multi-LoRA layers, in module order (the stack's layer order)."""
    return [m for m in model.modules() if isinstance(m, MultiLoRALinear)]
