"""Which models the static decoder runs: :func:`check_supported`."""

from __future__ import annotations

from torch import nn

__all__ = ["SUPPORTED_MODEL_TYPES", "UnsupportedModelError", "check_supported"]

#: ``config.model_type`` values whose decoder layers the static forward reproduces exactly.
SUPPORTED_MODEL_TYPES: tuple[str, ...] = ("llama", "qwen2", "mistral")

_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class UnsupportedModelError(ValueError):
    """The model is not a Llama/Qwen2-style decoder the static backend can run."""


def check_supported(model: nn.Module) -> None:
    """Check that ``model`` is a Llama/Qwen2-style decoder with the expected layer layout.

    Raises:
        UnsupportedModelError: If it is not (the message says why and names the ``hf`` backend).
    """
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
