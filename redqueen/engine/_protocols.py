"""The engine's seams as protocols: :class:`HostProtocol`, :class:`LearnerProtocol`, :class:`StepStats`.

An environment talks to its model through these two interfaces only, so it runs unchanged on
one process (:class:`~redqueen.engine.AdapterHost`, :class:`~redqueen.engine.Learner`) or on a
cluster (:class:`~redqueen.engine.distributed.RayAdapterHost`,
:class:`~redqueen.engine.distributed.RayLearner`), and a new host or learner (another serving
engine, a different policy-gradient rule) is a class with these methods, no subclassing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from redqueen.engine._learner_stats import LearnerState, LearnerStats
from redqueen.engine._rollout import Rollout
from redqueen.engine._sampling import Generation, SamplingParams
from redqueen.genomes import LoRAGenome

__all__ = ["HostProtocol", "LearnerProtocol", "StepStats"]


@runtime_checkable
class HostProtocol(Protocol):
    """A base model serving many LoRA adapters addressed by id.

    Adapters enter and leave as :class:`~redqueen.genomes.LoRAGenome` objects; in between the
    host owns their weights (a learner may train them in place) and :meth:`genome` exports the
    current ones.
    """

    @property
    def model_path(self) -> str:
        """The base model's id or folder (recorded in every exported genome)."""
        ...

    @property
    def module_shapes(self) -> Mapping[str, tuple[int, int]]:
        """Shape ``(out, in)`` of every module that can carry LoRA factors."""
        ...

    @property
    def adapter_ids(self) -> list[str]:
        """Ids of the adapters held, in insertion order."""
        ...

    def add_adapter(self, adapter_id: str, genome: LoRAGenome) -> None:
        """Add a new adapter.

        Raises:
            ValueError: If the id is taken or the genome does not fit the model.
        """
        ...

    def set_adapter(self, adapter_id: str, genome: LoRAGenome) -> None:
        """Add an adapter or replace its weights."""
        ...

    def remove_adapter(self, adapter_id: str) -> None:
        """Remove an adapter.

        Raises:
            KeyError: If it is not held.
        """
        ...

    def genome(self, adapter_id: str) -> LoRAGenome:
        """The adapter's current (possibly trained) weights, as a new genome.

        Raises:
            KeyError: If it is not held.
        """
        ...

    def genomes(self, adapter_ids: Sequence[str]) -> dict[str, LoRAGenome]:
        """Several adapters' current weights, as new genomes, in one call.

        Raises:
            KeyError: If one is not held.
        """
        ...

    def generate(
        self,
        prompts: Sequence[str],
        adapter_ids: Sequence[str | None],
        sampling: SamplingParams | Sequence[SamplingParams] | None = None,
    ) -> list[Generation]:
        """Sample completions, each prompt with its own adapter (``None``: the base model).

        Returns:
            ``len(prompts) * n`` generations, the ``n`` samples of each prompt side by side.
        """
        ...


@runtime_checkable
class StepStats(Protocol):
    """One learner step's outcome: :class:`~redqueen.engine.LearnerStats` itself, or a step
    still in flight on a worker (:class:`~redqueen.engine.distributed.PendingStats`), whose
    :meth:`result` waits for it. The fields are :class:`~redqueen.engine.LearnerStats`'s,
    written once there."""

    def result(self) -> LearnerStats:
        """The step's statistics (waits for a step in flight)."""
        ...


@runtime_checkable
class LearnerProtocol(Protocol):
    """Updates a host's adapters on their own rollouts, keeping per-adapter optimizer state."""

    def step(self, adapter_id: str, rollouts: Sequence[Rollout]) -> StepStats:
        """One update of ``adapter_id`` on ``rollouts``.

        Raises:
            KeyError: If the host does not hold the adapter.
        """
        ...

    def forget(self, adapter_id: str) -> None:
        """Drop an adapter's optimizer state."""
        ...

    def state_dict(self) -> LearnerState:
        """The optimizer states and configuration, for a checkpoint."""
        ...

    def load_state_dict(self, state: LearnerState) -> None:
        """Restore what :meth:`state_dict` returned; the host must hold those adapters."""
        ...
