"""Models for the engine tests: the shipped tiny-coder, and a smaller random Llama.

``tiny_coder_dir`` is the default base model the engine serves. ``tiny_model_dir`` is a 2-layer
Llama with a character-level tokenizer, saved once per session, for tests that need a model
far cheaper than tiny-coder.
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    OPTConfig,
    OPTForCausalLM,
    PreTrainedTokenizerFast,
)

from redqueen.assets import tiny_coder_path

SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]


def build_tiny_model_dir(path: Path, *, seed: int = 0) -> Path:
    """Write a 2-layer Llama with random weights and a char-level tokenizer to ``path``."""
    chars = sorted(set(string.printable))
    vocab = {tok: i for i, tok in enumerate(SPECIALS + chars)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
    )
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # sharper logits than the default init, so outputs differ visibly
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.08)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def small_opt_model() -> OPTForCausalLM:
    """A 1-layer OPT with random weights: a causal LM that is not Llama-shaped."""
    config = OPTConfig(
        vocab_size=104,
        hidden_size=16,
        ffn_dim=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        word_embed_proj_dim=16,
        max_position_embeddings=64,
    )
    return OPTForCausalLM(config)


@pytest.fixture(autouse=True)
def one_thread():
    """Run each engine test on one intra-op thread (restored afterwards).

    Small matrix products gain nothing from a second thread, and on a loaded machine two
    threads that wait for each other make decoding many times slower.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_coder_dir() -> Path:
    return tiny_coder_path()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model_dir(tmp_path_factory.mktemp("tiny_llama"))
