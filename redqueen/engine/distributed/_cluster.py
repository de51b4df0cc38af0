"""Connecting to Ray, placing workers, and telling a lost worker apart from a failed call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ClusterError", "WorkerLostError", "connect", "gather", "place_workers"]


class ClusterError(RuntimeError):
    """Ray is missing, the cluster cannot be reached, or it lacks the resources asked for."""


class WorkerLostError(ClusterError):
    """A worker process died (killed, out of memory, node lost) while holding state.

    The adapters and optimizer states it held are gone, so the step cannot be finished; a run
    stops here and resumes from its last checkpoint (``redqueen resume DIR``), which rebuilds
    every worker from the checkpoint's genomes.
    """


def _ray() -> Any:
    try:
        import ray
    except ImportError as error:  # pragma: no cover - ray is a declared extra
        raise ClusterError(
            "engine.workers > 0 needs Ray: pip install 'redqueen[ray]'"
        ) from error
    return ray


def connect(
    address: str | None = None, *, num_cpus: int | None = None, num_gpus: int | None = None
) -> Any:
    """Join a Ray cluster (or start a local one) unless this process is already connected.

    Args:
        address: ``"auto"``, ``"ray://host:10001"`` or ``None`` (a local cluster on this machine).
        num_cpus: CPUs of a new local cluster (ignored when joining one).
        num_gpus: GPUs of a new local cluster (default: the ones Ray detects).

    Returns:
        The ``ray`` module.

    Raises:
        ClusterError: If Ray is not installed or the address cannot be reached.
    """
    ray = _ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if address:
        kwargs["address"] = address
    else:
        if num_cpus is not None:
            kwargs["num_cpus"] = int(num_cpus)
        if num_gpus is not None:
            kwargs["num_gpus"] = int(num_gpus)
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise ClusterError(f"engine.ray_address {address!r}: cannot connect: {error}") from error
    return ray


def place_workers(
    workers: int,
    *,
    cpus: float,
    gpus: float,
    strategy: str = "PACK",
    timeout: float = 120.0,
) -> tuple[Any, list[dict[str, Any]]]:
    """Reserve one bundle per worker in a placement group and return actor options for each.

    ``PACK`` keeps the workers on as few nodes as possible (one multi-GPU node: one worker per
    GPU, or with ``gpus=0.5`` two workers per GPU, sharing it); ``SPREAD`` puts them on
    different nodes. Without GPUs no group is made: CPU actors
    are placed by Ray's scheduler.

    Returns:
        ``(placement_group or None, [ray.remote options per worker])``.

    Raises:
        ClusterError: If the cluster cannot fit the bundles within ``timeout`` seconds.
    """
    ray = _ray()
    if gpus <= 0:
        return None, [{"num_cpus": cpus, "num_gpus": 0}] * workers
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    bundles = [{"CPU": cpus, "GPU": gpus} for _ in range(workers)]
    group = placement_group(bundles, strategy=strategy)
    ready, _ = ray.wait([group.ready()], timeout=timeout)
    if not ready:
        remove_placement_group(group)
        available = ray.available_resources()
        raise ClusterError(
            f"engine.workers: {workers} workers x {gpus} GPU + {cpus} CPU do not fit the cluster "
            f"within {timeout:.0f} s (available: GPU={available.get('GPU', 0)}, "
            f"CPU={available.get('CPU', 0)})"
        )
    options = [
        {
            "num_cpus": cpus,
            "num_gpus": gpus,
            "scheduling_strategy": PlacementGroupSchedulingStrategy(
                placement_group=group, placement_group_bundle_index=i
            ),
        }
        for i in range(workers)
    ]
    return group, options


def gather(refs: Sequence[Any], describe: Callable[[int], str]) -> list[Any]:
    """``ray.get`` of several calls, a dead worker reported as :class:`WorkerLostError`.

    Args:
        refs: Object refs, one per call.
        describe: Names the worker behind the i-th ref, for the error message.

    Raises:
        WorkerLostError: If the actor behind a call died.
    """
    ray = _ray()
    from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

    out = []
    for i, ref in enumerate(refs):
        try:
            out.append(ray.get(ref))
        except (RayActorError, ActorDiedError, ActorUnavailableError) as error:
            raise WorkerLostError(
                f"{describe(i)} died: {type(error).__name__}; the run stops here and resumes "
                "from its last checkpoint (redqueen resume DIR)"
            ) from error
    return out
