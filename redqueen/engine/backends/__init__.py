"""Generation backends: the part of :class:`~redqueen.engine.AdapterHost` that decodes.

A backend is a class registered in :data:`BACKENDS` and built as ``BACKENDS[name](host)``. It
samples completions for a batch of token-id prompts, each row with its own adapter (or none),
and is told when adapter weights change, so that a backend which keeps its own copy of the
weights (a vLLM engine, say) can refresh it. ``"hf"`` decodes with the host's own PyTorch model;
``"static"`` runs the same weights through a compiled decode path (static KV cache, stacked
multi-LoRA factors, device sampling, CUDA graphs on a GPU) for Llama/Qwen2-style models,
and ``"static_compiled"`` the same with its decode step compiled by ``torch.compile``;
``"vllm"`` (the ``vllm`` extra) decodes with a multi-LoRA vLLM engine.

A backend reads the host only through :class:`BackendHost` (model, tokenizer, device, dtype,
batch size, padding and end tokens, row routing, adapters), so it is tested against a small
fake host as well as :class:`~redqueen.engine.AdapterHost`. What the backends share (seeds per
row, chunking, padding, sampling steps, stop strings, results) lives in ``_common``.

A new backend::

    from redqueen.engine import BACKENDS

    @BACKENDS.register("my_backend")
    class MyBackend:
        def __init__(self, host): ...
        def generate(self, prompt_ids, adapter_ids, params): ...
        def adapters_changed(self, adapter_ids): ...
"""

from __future__ import annotations

from redqueen.engine.backends._base import BACKENDS, BackendHost, GenerationBackend, TokenDecoder
from redqueen.engine.backends._hf import HFBackend
from redqueen.engine.backends._static import CompiledStaticBackend, StaticBackend
from redqueen.engine.backends.vllm_backend import VLLMBackend  # imports vllm only when built

__all__ = [
    "BACKENDS",
    "BackendHost",
    "CompiledStaticBackend",
    "GenerationBackend",
    "HFBackend",
    "StaticBackend",
    "TokenDecoder",
    "VLLMBackend",
]
