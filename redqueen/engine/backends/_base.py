"""The backend protocol and its registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from redqueen._registry import Registry
from redqueen.engine._sampling import Generation, SamplingParams

__all__ = ["BACKENDS", "GenerationBackend"]


@runtime_checkable
class GenerationBackend(Protocol):
    """What :class:`~redqueen.engine.AdapterHost` needs from a decoder.

    Backends are built as ``backend_cls(host)`` and may read the host's model, tokenizer,
    adapters and device.
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


#: Registry of generation backends (name -> class taking the host).
BACKENDS: Registry[type] = Registry("backend")
