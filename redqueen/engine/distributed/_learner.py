"""Learner steps on the workers holding the adapters: :class:`RayLearner`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redqueen.engine.distributed._host import RayAdapterHost

__all__ = ["PendingStats", "RayLearner"]


class RayLearner:
    """The :class:`~redqueen.engine.Learner` interface, each step run on the adapter's worker.

    :meth:`step` returns at once with a :class:`PendingStats`; steps on different workers run
    at the same time, and each worker runs its calls in order, so the next generation on that
    worker sees the updated adapter. Errors surface at the host's next call or when the stats
    are read.

    Args:
        host: The :class:`RayAdapterHost` whose workers hold the adapters.
        config: A :class:`~redqueen.engine.LearnerConfig` (``None``: defaults), sent to every
            worker.
    """

    def __init__(self, host: RayAdapterHost, config: Any = None) -> None:
        from redqueen.engine import LearnerConfig

        self.host = host
        self.config = config if config is not None else LearnerConfig()
        refs = [w.configure_learner.remote(self.config) for w in host._workers]
        host._gather(refs, "learner setup")

    def step(self, adapter_id: str, rollouts: Sequence[Any]) -> PendingStats:
        """Start one update of ``adapter_id`` on its worker.

        Raises:
            KeyError: If no worker holds the adapter.
        """
        index = self.host._worker_of(adapter_id)
        ref = self.host._workers[index].learner_step.remote(adapter_id, list(rollouts))
        self.host._pending.append((index, ref))
        return PendingStats(self.host, index, ref)

    def forget(self, adapter_id: str) -> None:
        """Drop an adapter's optimizer state (nothing to do once the host removed it)."""
        index = self.host._owner.get(adapter_id)
        if index is not None:
            self.host._gather(
                [self.host._workers[index].learner_forget.remote(adapter_id)], "forget", [index]
            )

    def state_dict(self) -> dict[str, Any]:
        """Every worker's optimizer states merged into one ``Learner.state_dict``."""
        self.host._settle()
        parts = self.host._gather([w.learner_state.remote() for w in self.host._workers], "state")
        optimizers: dict[str, Any] = {}
        for part in parts:
            optimizers.update(part["optimizers"])
        return {"config": parts[0]["config"], "optimizers": optimizers}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Send each worker the optimizer states of its adapters.

        Raises:
            KeyError: If the state lacks ``optimizers`` or names an adapter no worker holds.
        """
        if "optimizers" not in state:
            raise KeyError("RayLearner.load_state_dict: state has no 'optimizers' entry")
        split: list[dict[str, Any]] = [{} for _ in self.host._workers]
        for adapter_id, optimizer_state in state["optimizers"].items():
            split[self.host._worker_of(adapter_id)][adapter_id] = optimizer_state
        config = state.get("config")
        refs = [
            w.learner_load.remote({"config": config, "optimizers": part})
            for w, part in zip(self.host._workers, split, strict=True)
        ]
        self.host._gather(refs, "learner load")


class PendingStats:
    """A learner step in flight; reading any field waits for it (a ``LearnerStats`` then).

    Args:
        host: The host that tracks in-flight calls.
        worker: Index of the worker running the step.
        ref: The Ray object ref of the step's result.
    """

    def __init__(self, host: RayAdapterHost, worker: int, ref: Any) -> None:
        self._host, self._worker, self._ref = host, worker, ref
        self._value: Any = None

    def result(self) -> Any:
        """The step's ``LearnerStats`` (waits for it)."""
        if self._value is None:
            self._value = self._host._gather([self._ref], "learner step", [self._worker])[0]
        return self._value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.result(), name)

    def __repr__(self) -> str:
        return f"PendingStats({self.result()!r})" if self._value is not None else "PendingStats(...)"
