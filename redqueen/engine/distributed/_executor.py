"""Sandbox checks spread over a Ray cluster's CPUs: :class:`RayExecutorPool`."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

from redqueen.engine.distributed._cluster import ClusterError, WorkerLostError, connect

__all__ = ["RayExecutorPool", "SandboxMixin"]


class SandboxMixin:
    """A lazily started :class:`~redqueen.verifiers.Executor` inside an actor.

    Both the pool's own actors and the host's model workers carry it, so a cluster host can
    verify on the processes it already runs.
    """

    _sandbox: Any = None
    _sandbox_settings: tuple | None = None

    def execute_many(
        self, pairs: list[tuple[str, str]], heap_jitter: list[int] | None, settings: tuple
    ) -> list:
        """Run pairs in this actor's sandbox, (re)started with ``settings`` = (workers, timeout, memory_mb)."""
        from redqueen.verifiers import Executor

        if self._sandbox is None or self._sandbox_settings != settings:
            self.close_sandbox()
            workers, timeout, memory_mb = settings
            self._sandbox = Executor(workers, timeout=timeout, memory_mb=memory_mb)
            self._sandbox_settings = settings
        return self._sandbox.execute_many(pairs, heap_jitter=heap_jitter)

    def close_sandbox(self) -> None:
        """Close the sandbox, if started."""
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            sandbox.close()


class _ExecutorActor(SandboxMixin):
    """An actor that only runs sandbox checks."""


class RayExecutorPool:
    """The :class:`~redqueen.verifiers.Executor` interface over several Ray actors.

    ``execute_many`` splits its pairs into contiguous chunks, one per actor, runs them at the
    same time and returns the results in order. Programs are pure and the sandbox holds no
    state between runs, so a chunk whose own actor died is run again on a fresh actor (once);
    a second loss raises :class:`~redqueen.engine.distributed.ClusterError`. Borrowed actors
    (a cluster host's workers) are not replaced: their loss raises
    :class:`~redqueen.engine.distributed.WorkerLostError`.

    Args:
        actors: Number of executor actors to start (spread by Ray's scheduler over the nodes),
            or existing actor handles with :class:`SandboxMixin` methods to borrow.
        workers: Fork servers per actor (``None``: the actor's CPUs, at least 1).
        timeout: Seconds per program.
        memory_mb: Memory per program beyond the interpreter's baseline.
        cpus_per_actor: CPUs Ray reserves per actor (``0`` shares the CPUs with other actors).
        address: Ray address to join; ``None`` starts or reuses a local cluster.
        closes: Objects whose ``close()`` runs after the pool's (an environment closes its
            executor, so a cluster host handed over with the pool is released with it).

    Raises:
        ValueError: If ``actors < 1``.
        ClusterError: If Ray is missing or unreachable.
    """

    def __init__(
        self,
        actors: int | Sequence[Any] = 2,
        *,
        workers: int | None = None,
        timeout: float = 2.0,
        memory_mb: int = 512,
        cpus_per_actor: float = 0.0,
        address: str | None = None,
        closes: Sequence[Any] = (),
    ) -> None:
        borrowed = not isinstance(actors, int)
        count = actors if isinstance(actors, int) else len(actors)
        if count < 1:
            raise ValueError(f"RayExecutorPool: actors must be >= 1, got {actors}")
        self.timeout = float(timeout)
        self._ray = connect(address)
        self._settings = (max(1, int(workers or cpus_per_actor or 1)), float(timeout), int(memory_mb))
        self._options = {"num_cpus": float(cpus_per_actor), "max_restarts": 0}
        # Ship the actor class by value: its process then imports only the verifier, not the
        # model stack that importing this package would pull in (a faster start).
        from ray import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
        self._remote = self._ray.remote(_ExecutorActor)
        self._borrowed = borrowed
        self._actors = [self._spawn() for _ in range(count)] if isinstance(actors, int) else list(actors)
        self._closed = False
        self._closes = list(closes)
        self.restarts = 0

    def _spawn(self) -> Any:
        return self._remote.options(**self._options).remote()

    @property
    def actors(self) -> list[Any]:
        """The actor handles (for monitoring and fault-injection tests)."""
        return list(self._actors)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._closed

    def execute(self, source: str, expr: str, *, heap_jitter: int | None = None) -> Any:
        """Run one program (see ``Executor.execute``)."""
        jitter = None if heap_jitter is None else [heap_jitter]
        return self.execute_many([(source, expr)], heap_jitter=jitter)[0]

    def execute_many(
        self, pairs: Iterable[tuple[str, str]], *, heap_jitter: Sequence[int] | None = None
    ) -> list[Any]:
        """Run ``(source, expr)`` pairs across the actors; results in order (see ``Executor.execute_many``).

        Raises:
            ValueError: If ``heap_jitter`` has the wrong length.
            ClusterError: If the pool is closed or a chunk's actor dies twice.
        """
        if self._closed:
            raise ClusterError("RayExecutorPool is closed")
        pairs = [(str(s), str(e)) for s, e in pairs]
        if heap_jitter is not None and len(heap_jitter) != len(pairs):
            raise ValueError(
                f"execute_many: heap_jitter has {len(heap_jitter)} entries for {len(pairs)} pairs"
            )
        if not pairs:
            return []
        size = -(-len(pairs) // len(self._actors))
        chunks = [(start, min(start + size, len(pairs))) for start in range(0, len(pairs), size)]
        jitter = list(heap_jitter) if heap_jitter is not None else None
        refs = [self._submit(i, a, b, pairs, jitter) for i, (a, b) in enumerate(chunks)]
        out: list[Any] = []
        for i, ((a, b), ref) in enumerate(zip(chunks, refs, strict=True)):
            out.extend(self._result(i, ref, lambda i=i, a=a, b=b: self._submit(i, a, b, pairs, jitter)))
        return out

    def _submit(self, i: int, a: int, b: int, pairs: list, jitter: list[int] | None) -> Any:
        return self._actors[i].execute_many.remote(
            pairs[a:b], None if jitter is None else jitter[a:b], self._settings
        )

    def _result(self, i: int, ref: Any, resubmit: Any) -> list[Any]:
        from ray.exceptions import RayActorError

        try:
            return self._ray.get(ref)
        except RayActorError as error:
            if self._borrowed:
                raise WorkerLostError(
                    f"Ray worker {i} died during sandbox checks; the run stops here and resumes "
                    "from its last checkpoint (redqueen resume DIR)"
                ) from error
            self._actors[i] = self._spawn()
            self.restarts += 1
            try:
                return self._ray.get(resubmit())
            except RayActorError as error:
                raise ClusterError(f"RayExecutorPool: actor {i} died twice on one chunk") from error

    def close(self) -> None:
        """Close every actor's sandbox and stop the actors (safe to call twice)."""
        if self._closed:
            return
        self._closed = True
        for actor in self._actors:
            try:
                self._ray.get(actor.close_sandbox.remote(), timeout=10)
            except Exception:  # noqa: BLE001 - a dead actor has nothing left to close
                pass
            if not self._borrowed:
                self._ray.kill(actor)
        self._actors = []
        for owner in self._closes:
            owner.close()

    def __enter__(self) -> RayExecutorPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
