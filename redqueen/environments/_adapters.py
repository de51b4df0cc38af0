"""The engine side of a code-game league: adapters that follow births and deaths.

:func:`open_engine` loads the adapter host (or takes a given or cluster host) with its
learner and sandbox executor. :class:`AdapterSync` keeps the host in step with a
:class:`redqueen.evo.League`: every newborn's genome becomes an adapter, every dead member's
adapter and optimizer state go, hall-of-fame opponents are lent for one step, trained weights
are read back in one call, and a restored population resets the host.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch

from redqueen.evo import FrozenMember, Individual
from redqueen.genomes import LoRAGenome

if TYPE_CHECKING:  # annotations only: the engine loads transformers when imported
    from redqueen.engine import HostProtocol, LearnerConfig, LearnerProtocol
    from redqueen.engine.distributed import RayAdapterHost
    from redqueen.verifiers import Sandbox

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def open_engine(
    *,
    model: str | Path | None,
    host: HostProtocol | None,
    backend: str,
    device: str,
    dtype: str | None,
    target_modules: Sequence[str] | None,
    learner: LearnerConfig | None,
    executor: Mapping[str, Any] | None,
) -> tuple[HostProtocol, LearnerProtocol, Sandbox]:
    """The adapter host (loaded unless given), its learner and a sandbox executor.

    Raises:
        OSError: If the base model cannot be loaded.
        ValueError: If ``dtype`` is unknown or a given host already holds adapters.
    """
    from redqueen.engine import AdapterHost, Learner, LearnerConfig
    from redqueen.verifiers import Executor

    if host is None:
        if dtype is not None and dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        path = model  # None or a shipped name: AdapterHost resolves it
        try:
            host = AdapterHost(
                path,
                device=device,
                dtype=_DTYPES[dtype] if dtype else None,
                target_modules=target_modules,
                backend=backend,
            )
        except (OSError, ValueError) as error:
            # Loading is I/O: say so, so that callers can name the model as the culprit.
            message = str(error)
            if str(model) not in message:
                message = f"cannot load model {str(model)!r}: {message}"
            raise OSError(message) from error
    elif host.adapter_ids:
        raise ValueError(f"the host must hold no adapters, it holds {host.adapter_ids}")
    config = learner if learner is not None else LearnerConfig()
    if hasattr(host, "make_learner"):  # a cluster host: learner steps and sandbox on its workers
        cluster = cast("RayAdapterHost", host)
        return cluster, cluster.make_learner(config), cluster.make_executor(executor)
    trainer = Learner(cast(AdapterHost, host), config)
    return host, trainer, Executor(**dict(executor or {}))


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
