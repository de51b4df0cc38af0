"""The tiny-coder architecture: a small Llama configuration.

About 3M parameters with tied input/output embeddings, so the fp32 weights stay near 12 MB
and ship inside the package; six narrow layers rather than two wide ones, because the corpus
is about following program structure more than about memorising tokens.
"""

from __future__ import annotations

from transformers import LlamaConfig

__all__ = ["tiny_coder_config"]


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
