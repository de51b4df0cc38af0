"""The cluster host a run's configuration asks for: :func:`cluster_host`."""

from __future__ import annotations

from typing import Any

from redqueen.engine.distributed._host import RayAdapterHost

__all__ = ["cluster_host"]


def cluster_host(cfg: Any) -> RayAdapterHost:
    """A :class:`RayAdapterHost` from a run configuration's ``model`` and ``engine`` sections.

    Args:
        cfg: An :class:`~redqueen.experiments.config.ExperimentConfig` with ``engine.workers >= 1``.

    Raises:
        ClusterError: If Ray is missing or unreachable, or the workers cannot start.
    """
    model, engine = cfg.model, cfg.engine
    return RayAdapterHost(
        model.name,
        workers=engine.workers,
        device=model.device,
        dtype=model.dtype,
        target_modules=None if model.target_modules is None else tuple(model.target_modules),
        backend=model.backend,
        address=engine.ray_address,
        cpus_per_worker=engine.cpus_per_worker,
        gpus_per_worker=engine.gpus_per_worker,
        placement=engine.placement,
        cpu_threads=model.cpu_threads,
    )
