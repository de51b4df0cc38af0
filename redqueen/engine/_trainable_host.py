"""What the learner needs from the host whose adapters it trains: :class:`TrainableHost`."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor, nn

__all__ = ["TrainableHost"]


@runtime_checkable
class TrainableHost(Protocol):
    """A base model whose adapters' factors a learner trains in place.

    :class:`~redqueen.engine.AdapterHost` implements it. The learner and its probes
    (:mod:`redqueen.engine._learner_probes`) read nothing else of the host.
    """

    @property
    def model(self) -> nn.Module:
        """The causal LM; a forward runs under the routing of :meth:`use_adapter`."""
        ...

    @property
    def device(self) -> torch.device:
        """Where the model and the factors live."""
        ...

    @property
    def pad_token_id(self) -> int:
        """Token that pads rollouts into a batch."""
        ...

    @property
    def adapter_ids(self) -> list[str]:
        """Ids of the adapters held."""
        ...

    def adapter_parameters(self, adapter_id: str) -> list[Tensor]:
        """The adapter's trainable factor tensors, the same objects from call to call."""
        ...

    def use_adapter(self, adapter_id: str | None) -> AbstractContextManager[nn.Module]:
        """Run the model with one adapter (or none) on every row, differentiably."""
        ...

    def adapters_changed(self, adapter_ids: Sequence[str]) -> None:
        """These adapters' factors were trained in place (a decoder holding copies refreshes)."""
        ...
