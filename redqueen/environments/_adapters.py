"""The engine side of a code-game league: adapters that follow births and deaths.

:func:`open_engine` loads the adapter host (or takes a given or cluster host) with its
learner and sandbox executor. :class:`AdapterSync` keeps the host in step with a
:class:`redqueen.evo.League`: every newborn's genome becomes an adapter, every dead member's
adapter and optimizer state go, hall-of-fame opponents are lent for one step, trained weights
are read back in one call, and a restored population resets the host.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

import torch

from redqueen.evo import FrozenMember, Individual
from redqueen.genomes import LoRAGenome
from redqueen.settings import ClusterSettings, EngineSettings, ExecutorSettings, LearnerSettings

if TYPE_CHECKING:  # annotations only: the engine loads transformers when imported
    from redqueen.engine import AdapterHost, HostProtocol, LearnerProtocol
    from redqueen.engine.distributed import RayAdapterHost
    from redqueen.verifiers import Sandbox

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def open_engine(
    engine: EngineSettings,
    *,
    cluster: ClusterSettings,
    learner: LearnerSettings,
    executor: ExecutorSettings,
    host: HostProtocol | None = None,
) -> tuple[HostProtocol, LearnerProtocol, Sandbox]:
    """The adapter host with its learner and sandbox: ``host`` when given, else the base model
    ``engine`` names, loaded in this process or, with ``cluster.workers > 0``, on Ray workers
    (whose learner steps and sandbox run there too).

    Raises:
        OSError: If the base model cannot be loaded (the message names the model).
        ValueError: ``"engine: ..."`` if the cluster cannot be joined; if a given host
            already holds adapters.
    """
    from redqueen.engine import Learner
    from redqueen.verifiers import Executor

    if host is None and cluster.workers > 0:
        host = _cluster_host(engine, cluster)
    elif host is None:
        host = _local_host(engine)
    elif host.adapter_ids:
        raise ValueError(f"the host must hold no adapters, it holds {host.adapter_ids}")
    if hasattr(host, "make_learner"):  # a cluster host: learner steps and sandbox on its workers
        ray_host = cast("RayAdapterHost", host)
        return (
            ray_host,
            ray_host.make_learner(learner),
            ray_host.make_executor(executor.model_dump()),
        )
    trainer = Learner(cast("AdapterHost", host), learner)
    return host, trainer, Executor(**executor.model_dump())


def _local_host(engine: EngineSettings) -> HostProtocol:
    """The base model ``engine`` names, loaded in this process."""
    from redqueen.engine import AdapterHost

    try:
        return AdapterHost(
            engine.name,
            device=engine.device,
            dtype=_DTYPES[engine.dtype] if engine.dtype else None,
            target_modules=engine.target_modules,
            backend=engine.backend,
        )
    except ValueError as error:
        if "target_modules" in str(error):  # the model loaded; the modules named are not in it
            raise ValueError(f"model.target_modules: {error}") from error
        raise _load_error(engine, error) from error
    except OSError as error:
        raise _load_error(engine, error) from error


def _load_error(engine: EngineSettings, error: Exception) -> OSError:
    """Loading is I/O: say so, so that callers can name the model as the culprit."""
    message = str(error)
    if engine.name not in message:
        message = f"cannot load model {engine.name!r}: {message}"
    return OSError(message)


def _cluster_host(engine: EngineSettings, cluster: ClusterSettings) -> HostProtocol:
    """The base model ``engine`` names, one copy per Ray worker (``cpu_threads`` per worker;
    ``"auto"`` measures this machine, so workers keep torch's default)."""
    from redqueen.engine.distributed import ClusterError, RayAdapterHost

    try:
        return RayAdapterHost(
            engine.name,
            workers=cluster.workers,
            device=engine.device,
            dtype=engine.dtype,
            target_modules=engine.target_modules,
            backend=engine.backend,
            address=cluster.ray_address,
            cpus_per_worker=cluster.cpus_per_worker,
            gpus_per_worker=cluster.gpus_per_worker,
            placement=cluster.placement,
            cpu_threads=None if engine.cpu_threads == "auto" else engine.cpu_threads,
        )
    except ClusterError as error:
        raise ValueError(f"engine: {error}") from None


class AdapterSync:
    """Keeps an adapter host and its learner in step with a league's members.

    A :class:`redqueen.evo.MemberListener` (births add adapters, deaths remove them and their
    optimizer state) and the league's :class:`~redqueen.evo.TrainedGenomes` (trained weights
    are read back from the host in one call per step).

    Args:
        host: The adapter host; member ids are adapter ids.
        learner: The learner holding per-adapter optimizer states.
    """

    def __init__(self, host: HostProtocol, learner: LearnerProtocol) -> None:
        self.host, self.learner = host, learner

    def member_born(self, ind: Individual) -> None:
        """A founder or child joined: load its genome as an adapter."""
        self.host.add_adapter(ind.id, ind.genome)

    def member_died(self, ind: Individual) -> None:
        """A member left: drop its adapter and optimizer state."""
        self.host.remove_adapter(ind.id)
        self.learner.forget(ind.id)

    def genomes(self, ids: Sequence[str]) -> dict[str, LoRAGenome]:
        """The members' current (trained) weights, in one call to the host."""
        return dict(self.host.genomes(list(ids)))

    def lend(self, frozen: Mapping[str, FrozenMember]) -> None:
        """Load hall-of-fame members' adapters (keyed ``"<id>@<step>"``) for one step."""
        for key, member in frozen.items():
            self.host.add_adapter(key, member.genome)

    def give_back(self, keys: Iterable[str]) -> None:
        """Unload what :meth:`lend` loaded (frozen members are never trained)."""
        for key in keys:
            self.host.remove_adapter(key)
            self.learner.forget(key)

    def restore(self, living: Iterable[Individual]) -> None:
        """Make the host hold exactly the ``living`` members' genomes (after a checkpoint load)."""
        members = {ind.id: ind for ind in living}
        for adapter_id in list(self.host.adapter_ids):
            if adapter_id not in members:
                self.host.remove_adapter(adapter_id)
        for member_id, ind in members.items():
            self.host.set_adapter(member_id, ind.genome)
