"""Learner steps on the workers holding the adapters: :class:`RayLearner`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from redqueen.engine._learner import LearnerConfig, LearnerState, LearnerStats
from redqueen.engine._rollout import Rollout

__all__ = ["PendingStats", "RayLearner", "WorkerHost"]


@runtime_checkable
class WorkerHost(Protocol):
    """What :class:`RayLearner` needs from a host whose adapters live on worker actors.

    :class:`~redqueen.engine.distributed.RayAdapterHost` implements it. Each worker actor has
    the learner methods of :class:`~redqueen.engine.distributed.HostWorker`
    (``configure_learner``, ``learner_step``, ``learner_forget``, ``learner_state``,
    ``learner_load``).
    """

    @property
    def actors(self) -> list[Any]:
        """The worker actor handles, in index order."""
        ...

    def placement(self) -> dict[str, int]:
        """Which worker holds each adapter (adapter id -> worker index)."""
        ...

    def worker_of(self, adapter_id: str) -> int:
        """Index of the worker holding ``adapter_id`` (``KeyError`` if none)."""
        ...

    def gather(
        self, refs: Sequence[Any], what: str, owners: Sequence[int] | None = None
    ) -> list[Any]:
        """Wait for calls on the workers and return their results, in order."""
        ...

    def track(self, worker: int, ref: Any) -> None:
        """Leave a call on ``worker`` in flight until the next :meth:`settle`."""
        ...

    def settle(self) -> None:
        """Wait for tracked calls still in flight."""
        ...


class RayLearner:
    """The :class:`~redqueen.engine.Learner` interface, each step run on the adapter's worker.

    :meth:`step` returns at once with a :class:`PendingStats`; steps on different workers run
    at the same time, and each worker runs its calls in order, so the next generation on that
    worker sees the updated adapter. Errors surface at the host's next call or when the stats
    are read.

    Args:
        host: The :class:`~redqueen.engine.distributed.RayAdapterHost` (or another
            :class:`WorkerHost`) whose workers hold the adapters.
        config: A :class:`~redqueen.engine.LearnerConfig` (``None``: defaults), sent to every
            worker.
    """

    def __init__(self, host: WorkerHost, config: LearnerConfig | None = None) -> None:
        self.host = host
        self.config = config if config is not None else LearnerConfig()
        refs = [w.configure_learner.remote(self.config) for w in host.actors]
        host.gather(refs, "learner setup")

    def step(self, adapter_id: str, rollouts: Sequence[Rollout]) -> PendingStats:
        """Start one update of ``adapter_id`` on its worker.

        Raises:
            KeyError: If no worker holds the adapter.
        """
        index = self.host.worker_of(adapter_id)
        ref = self.host.actors[index].learner_step.remote(adapter_id, list(rollouts))
        self.host.track(index, ref)
        return PendingStats(self.host, index, ref)

    def forget(self, adapter_id: str) -> None:
        """Drop an adapter's optimizer state (nothing to do once the host removed it)."""
        index = self.host.placement().get(adapter_id)
        if index is not None:
            self.host.gather(
                [self.host.actors[index].learner_forget.remote(adapter_id)], "forget", [index]
            )

    def state_dict(self) -> LearnerState:
        """Every worker's optimizer states merged into one ``Learner.state_dict``."""
        self.host.settle()
        parts = self.host.gather([w.learner_state.remote() for w in self.host.actors], "state")
        optimizers: dict[str, dict[str, object]] = {}
        for part in parts:
            optimizers.update(part["optimizers"])
        return {"config": parts[0]["config"], "optimizers": optimizers}

    def load_state_dict(self, state: LearnerState) -> None:
        """Send each worker the optimizer states of its adapters.

        Raises:
            KeyError: If the state lacks ``optimizers`` or names an adapter no worker holds.
        """
        if "optimizers" not in state:
            raise KeyError("RayLearner.load_state_dict: state has no 'optimizers' entry")
        actors = self.host.actors
        split: list[dict[str, dict[str, object]]] = [{} for _ in actors]
        for adapter_id, optimizer_state in state["optimizers"].items():
            split[self.host.worker_of(adapter_id)][adapter_id] = optimizer_state
        config = state.get("config")
        refs = [
            w.learner_load.remote({"config": config, "optimizers": part})
            for w, part in zip(actors, split, strict=True)
        ]
        self.host.gather(refs, "learner load")


class PendingStats:
    """A learner step in flight; :meth:`result` waits for its :class:`LearnerStats`.

    Args:
        host: The host that tracks in-flight calls.
        worker: Index of the worker running the step.
        ref: The Ray object ref of the step's result.
    """

    def __init__(self, host: WorkerHost, worker: int, ref: Any) -> None:
        self._host, self._worker, self._ref = host, worker, ref
        self._value: LearnerStats | None = None

    def result(self) -> LearnerStats:
        """The step's :class:`LearnerStats` (waits for it)."""
        if self._value is None:
            self._value = self._host.gather([self._ref], "learner step", [self._worker])[0]
        return self._value

    def __repr__(self) -> str:
        return f"PendingStats({self.result()!r})" if self._value is not None else "PendingStats(...)"
