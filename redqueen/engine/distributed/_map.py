"""A stateless parallel map over Ray actors that each hold a replica: :class:`ActorMap`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from redqueen.engine.distributed._cluster import ClusterError, connect

__all__ = ["ActorMap"]


class _Replica:
    """Holds ``factory(**kwargs)`` and calls its methods."""

    def __init__(self, factory: Callable[..., Any], kwargs: Mapping[str, Any]) -> None:
        self.obj = factory(**dict(kwargs))

    def run(self, method: str, items: list[tuple]) -> list[Any]:
        call = getattr(self.obj, method)
        return [call(*item) for item in items]


class _Retry:
    """Resubmits one chunk on a fresh actor after its actor died."""

    def __init__(self, pool: ActorMap, index: int, method: str, items: list[tuple]) -> None:
        self.pool, self.index, self.method, self.items = pool, index, method, items

    def __call__(self) -> Any:
        return self.pool._actors[self.index].run.remote(self.method, self.items)


class ActorMap:
    """Run a replica's method over many argument tuples, spread over Ray actors.

    Every actor builds its own replica once (``factory(**kwargs)``: a frozen model, say); a
    call sends only the arguments (tensors, genome state), splits them into contiguous chunks,
    one per actor, and returns the results in order, so the outcome does not depend on the
    number of actors. The work holds no state between calls, so a chunk whose actor died runs
    again on the next actor while a fresh replica starts in its place: a lost worker costs a
    retry, not the run.

    Args:
        factory: Picklable callable building the replica (a class, say).
        kwargs: Its keyword arguments.
        actors: Number of actors.
        cpus_per_actor: CPUs Ray reserves per actor.
        address: Ray address to join; ``None`` starts or reuses a local cluster.
        max_retries: Fresh actors tried per chunk before giving up.

    Raises:
        ValueError: If ``actors < 1``.
        ClusterError: If Ray is missing or unreachable.
    """

    def __init__(
        self,
        factory: Callable[..., Any],
        kwargs: Mapping[str, Any],
        *,
        actors: int = 2,
        cpus_per_actor: float = 1.0,
        address: str | None = None,
        max_retries: int = 2,
    ) -> None:
        if actors < 1:
            raise ValueError(f"ActorMap: actors must be >= 1, got {actors}")
        self._ray = connect(address)
        self._spec = (factory, dict(kwargs))
        self._remote = self._ray.remote(_Replica).options(num_cpus=cpus_per_actor, max_restarts=0)
        self._actors = [self._spawn() for _ in range(actors)]
        self.max_retries = int(max_retries)
        self.restarts = 0

    def _spawn(self) -> Any:
        return self._remote.remote(*self._spec)

    @property
    def actors(self) -> list[Any]:
        """The actor handles (for monitoring and fault-injection tests)."""
        return list(self._actors)

    def map(self, method: str, items: Sequence[tuple]) -> list[Any]:
        """``[replica.method(*item) for item in items]``, computed on the actors.

        Raises:
            ClusterError: If a chunk's actor died more than ``max_retries`` times.
        """
        from ray.exceptions import RayActorError

        if not self._actors:
            raise ClusterError("ActorMap is closed")
        items = [tuple(item) for item in items]
        if not items:
            return []
        size = -(-len(items) // len(self._actors))
        chunks = [items[a : a + size] for a in range(0, len(items), size)]
        retries = [_Retry(self, i, method, chunk) for i, chunk in enumerate(chunks)]
        refs = [retry() for retry in retries]
        out: list[Any] = []
        for ref, retry in zip(refs, retries, strict=True):
            for attempt in range(self.max_retries + 1):
                try:
                    out.extend(self._ray.get(ref))
                    break
                except RayActorError as error:
                    if attempt == self.max_retries:
                        raise ClusterError(
                            f"ActorMap: actor {retry.index} died {attempt + 1} times on one chunk"
                        ) from error
                    # The replacement starts in the background; a live neighbour reruns the chunk.
                    self._actors[retry.index] = self._spawn()
                    self.restarts += 1
                    retry.index = (retry.index + 1) % len(self._actors)
                    ref = retry()
        return out

    def close(self) -> None:
        """Stop the actors (safe to call twice)."""
        actors, self._actors = self._actors, []
        for actor in actors:
            self._ray.kill(actor)
