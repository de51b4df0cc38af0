"""The tiny-coder architecture: a small Llama configuration, in named sizes.

Input and output embeddings are tied. ``mini`` (about 1.5M parameters), ``tiny`` (3.05M, 12 MB
in fp32) and ``base`` (about 7M) are the sizes a two-core CPU can pretrain in a couple of hours;
``small`` (about 14M, under 30 MB in bf16) is for a GPU; ``micro`` is for tests. Narrow, deeper stacks rather than wide shallow ones, because
the corpus is about following program structure more than about memorising tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import LlamaConfig

__all__ = ["SIZES", "STORAGE_DTYPES", "save_model", "tiny_coder_config"]

#: Weight storage precisions :func:`save_model` accepts.
STORAGE_DTYPES: tuple[str, ...] = ("bfloat16", "float16", "float32")

#: Named sizes: hidden_size, num_hidden_layers, num_attention_heads, intermediate_size.
SIZES: dict[str, dict[str, int]] = {
    "micro": {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
    },
    "mini": {
        "hidden_size": 128,
        "num_hidden_layers": 6,
        "num_attention_heads": 4,
        "intermediate_size": 352,
    },
    "tiny": {
        "hidden_size": 192,
        "num_hidden_layers": 6,
        "num_attention_heads": 6,
        "intermediate_size": 512,
    },
    "base": {
        "hidden_size": 256,
        "num_hidden_layers": 8,
        "num_attention_heads": 8,
        "intermediate_size": 704,
    },
    "small": {
        "hidden_size": 384,
        "num_hidden_layers": 8,
        "num_attention_heads": 6,
        "intermediate_size": 960,
    },
}


def tiny_coder_config(
    *,
    vocab_size: int,
    bos_token_id: int,
    eos_token_id: int,
    pad_token_id: int,
    hidden_size: int = 192,
    num_hidden_layers: int = 6,
    num_attention_heads: int = 6,
    intermediate_size: int = 512,
    max_position_embeddings: int = 1024,
) -> LlamaConfig:
    """A ``LlamaConfig`` for tiny-coder.

    Args:
        vocab_size: Tokenizer vocabulary size.
        bos_token_id: Id of ``<s>``.
        eos_token_id: Id of ``</s>``.
        pad_token_id: Id of ``<pad>``.
        hidden_size: Model width.
        num_hidden_layers: Number of decoder layers.
        num_attention_heads: Attention heads (``hidden_size`` must divide evenly).
        intermediate_size: MLP width.
        max_position_embeddings: Longest context.

    Raises:
        ValueError: If the heads do not divide the width.
    """
    if hidden_size % num_attention_heads:
        raise ValueError(
            f"tiny_coder_config: hidden_size {hidden_size} is not divisible by "
            f"num_attention_heads {num_attention_heads}"
        )
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_attention_heads,
        max_position_embeddings=max_position_embeddings,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
        pad_token_id=pad_token_id,
        attention_bias=False,
        mlp_bias=False,
    )


def save_model(
    model: torch.nn.Module, folder: str | Path, *, storage_dtype: str = "bfloat16"
) -> Path:
    """Save ``model`` as safetensors in ``storage_dtype``, marked to load as float32.

    Half-precision storage halves the package size; ``config.json`` records ``float32``, so
    ``AutoModelForCausalLM.from_pretrained`` (whose default dtype follows the config in recent
    transformers, and is float32 in older ones) upcasts the weights on load and CPU inference
    runs in float32 as before.

    Args:
        model: The trained model (left in float32 afterwards).
        folder: Where to write ``config.json`` and ``model.safetensors``.
        storage_dtype: ``bfloat16``, ``float16`` or ``float32``.

    Raises:
        ValueError: If ``storage_dtype`` is not one of those.
    """
    if storage_dtype not in STORAGE_DTYPES:
        raise ValueError(
            f"save_model: storage_dtype must be one of {', '.join(STORAGE_DTYPES)}, got {storage_dtype!r}"
        )
    folder = Path(folder)
    model.to(getattr(torch, storage_dtype)).save_pretrained(folder, safe_serialization=True)
    model.to(torch.float32)
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["dtype"] = "float32"
    config.pop("torch_dtype", None)
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return folder
