"""The backend protocols and their registry: :class:`GenerationBackend`, :class:`BackendHost`."""

from __future__ import annotations

from collections.abc import Sequence, Set
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

import torch
from torch import nn

from redqueen._registry import Registry
from redqueen.engine._sampling import Generation, SamplingParams
from redqueen.genomes import LoRAGenome

__all__ = ["BACKENDS", "BackendHost", "GenerationBackend", "TokenDecoder"]


class TokenDecoder(Protocol):
    """The one tokenizer method a backend calls: token ids back to text."""

    def decode(self, token_ids: list[int], skip_special_tokens: bool = ...) -> str | list[str]:
        """The text of ``token_ids`` (a Hugging Face tokenizer types it as possibly a list)."""
        ...


@runtime_checkable
class BackendHost(Protocol):
    """What a generation backend reads from the host it decodes for, and nothing more.

    :class:`~redqueen.engine.AdapterHost` implements it; so can a test double holding a tiny
    torch module, which is how a backend is tested without a Hugging Face model. The ``hf``
    and ``static`` backends read the model, its routing and the decoding facts; the ``vllm``
    backend reads the adapters (it hands their current weights to its own engine).
    """

    @property
    def model(self) -> nn.Module:
        """The causal LM whose multi-LoRA layers :meth:`route_rows` routes."""
        ...

    @property
    def tokenizer(self) -> TokenDecoder:
        """Decodes sampled tokens (special tokens skipped) for the text and stop strings."""
        ...

    @property
    def device(self) -> torch.device:
        """Where the model runs."""
        ...

    @property
    def dtype(self) -> torch.dtype:
        """The model's dtype."""
        ...

    @property
    def max_batch_size(self) -> int:
        """Most rows decoded together; longer calls are chunked."""
        ...

    @property
    def pad_token_id(self) -> int:
        """Token that left-pads short prompts."""
        ...

    @property
    def eos_token_ids(self) -> Set[int]:
        """Tokens that end a completion."""
        ...

    @property
    def model_path(self) -> str:
        """The base model's id or folder."""
        ...

    @property
    def adapter_ids(self) -> list[str]:
        """Ids of the adapters held."""
        ...

    def genome(self, adapter_id: str) -> LoRAGenome:
        """An adapter's current weights (a copy)."""
        ...

    def route_rows(self, adapter_ids: Sequence[str | None]) -> AbstractContextManager[nn.Module]:
        """Run the model with one adapter per batch row (``None``: base model); yields the model."""
        ...


@runtime_checkable
class GenerationBackend(Protocol):
    """What :class:`~redqueen.engine.AdapterHost` needs from a decoder.

    Backends are built as ``backend_cls(host)`` with a :class:`BackendHost`, and read only
    what that protocol names.
    """

    def generate(
        self,
        prompt_ids: Sequence[Sequence[int]],
        adapter_ids: Sequence[str | None],
        params: Sequence[SamplingParams],
    ) -> list[Generation]:
        """Sample one completion per row.

        Args:
            prompt_ids: Token ids of each prompt (no padding).
            adapter_ids: Adapter of each row; ``None`` decodes with the base model alone.
            params: Sampling parameters of each row (``n`` is already expanded: one row, one
                completion). All rows share one seed.

        Returns:
            One :class:`Generation` per row, in order.
        """
        ...

    def adapters_changed(self, adapter_ids: Sequence[str]) -> None:
        """Called after these adapters were added, trained, replaced or removed."""
        ...


class BackendFactory(Protocol):
    """A backend class: built from the host it decodes for."""

    def __call__(self, host: BackendHost) -> GenerationBackend:
        """A backend decoding for ``host``."""
        ...


#: Registry of generation backends (name -> class taking the host).
BACKENDS: Registry[BackendFactory] = Registry("backend", callables=True)
