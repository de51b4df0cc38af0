"""Fixtures for genome tests: a tiny Llama built from a config (no hub) and random genomes."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def tiny_llama(seed: int = 0) -> LlamaForCausalLM:
    """A 2-layer Llama with random weights, small enough to build in milliseconds."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=64,
        max_position_embeddings=64,
    )
    return LlamaForCausalLM(config).eval()


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small tensors: one thread avoids OpenMP hand-offs that dominate on a busy 2-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def llama() -> LlamaForCausalLM:
    return tiny_llama()
