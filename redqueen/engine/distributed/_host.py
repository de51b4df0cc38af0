"""The driver side of the model workers: :class:`RayAdapterHost`.

:class:`RayAdapterHost` has the methods of :class:`~redqueen.engine.AdapterHost` that the
environments use, so an environment runs unchanged on one process or on a cluster. Each
adapter lives on exactly one worker (the least loaded when it is first added, ties to the
lowest index); generation rows and learner steps go to that worker; calls to different
workers run at the same time. Every row draws from its own stream, keyed by the call seed,
its adapter, prompt and repeat index (see :func:`redqueen.engine.backends._common.row_seeds`), and
a worker receives each adapter's rows in their original order, so the split over workers does
not decide the draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redqueen.engine._learner import LearnerConfig
from redqueen.engine._sampling import Generation, SamplingParams, rows_sampling
from redqueen.engine.distributed._cluster import (
    ClusterError,
    WorkerLostError,
    connect,
    gather,
    place_workers,
)
from redqueen.engine.distributed._executor import RayExecutorPool
from redqueen.engine.distributed._learner import RayLearner
from redqueen.engine.distributed._worker import HostWorker
from redqueen.genomes import LoRAGenome

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["RayAdapterHost"]


class RayAdapterHost:
    """A population's adapters spread over Ray workers, each holding one copy of the base model.

    Args:
        model: Model id or local folder, or a shipped model's name (``None``: the default).
        workers: Number of worker actors (one base model each; one GPU each on GPU runs
            unless ``gpus_per_worker`` is a fraction).
        device: Device inside each worker (``"cpu"`` or ``"cuda"``).
        dtype: Base model dtype name or ``None`` (the host's default).
        target_modules: Linear modules that carry LoRA factors (``None``: every projection).
        backend: Generation backend name, used by every worker.
        address: Ray address to join (``"auto"``, ``"ray://..."``); ``None`` starts or reuses
            a local cluster.
        cpus_per_worker: CPUs reserved per worker.
        gpus_per_worker: GPUs per worker (default 1 when ``device`` is CUDA, else 0). A
            fraction shares a GPU: ``0.5`` puts two workers (two base models, each with its
            adapters and learner) on one GPU, which pays when one worker's decoding and
            learning leave the GPU idle part of the time and both fit in its memory. Ray
            accepts fractions up to 1 and whole numbers above it.
        placement: Placement-group strategy for GPU workers: ``"PACK"`` (one multi-GPU node)
            or ``"SPREAD"`` (across nodes).
        cpu_threads: Torch threads per worker process (default: ``cpus_per_worker`` on CPU).
        max_batch_size: Most rows a worker decodes together.
        start_timeout: Seconds to wait for the workers to load the model (they wait for free
            resources first).

    Raises:
        ClusterError: If Ray is missing, unreachable, or cannot fit the workers.
        ValueError: If ``workers < 1`` or ``gpus_per_worker`` is negative, or a fraction
            above 1.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        workers: int = 2,
        device: str = "cpu",
        dtype: str | None = None,
        target_modules: Sequence[str] | None = None,
        backend: str = "auto",
        address: str | None = None,
        cpus_per_worker: float = 1.0,
        gpus_per_worker: float | None = None,
        placement: str = "PACK",
        cpu_threads: int | None = None,
        max_batch_size: int = 64,
        start_timeout: float = 600.0,
    ) -> None:
        _check_layout(workers, placement, gpus_per_worker)
        self._ray = connect(address)
        on_gpu = str(device).startswith("cuda")
        gpus = (1.0 if on_gpu else 0.0) if gpus_per_worker is None else float(gpus_per_worker)
        if cpu_threads is None and not on_gpu:
            cpu_threads = max(1, int(cpus_per_worker))
        self._group, options = place_workers(
            workers, cpus=float(cpus_per_worker), gpus=gpus, strategy=placement
        )
        path = None if model is None else str(model)  # shipped names resolve in each worker
        remote = self._ray.remote(HostWorker)
        self._workers = [
            remote.options(max_restarts=0, **opt).remote(
                path,
                device=device,
                dtype=dtype,
                target_modules=None if target_modules is None else tuple(target_modules),
                backend=backend,
                cpu_threads=cpu_threads,
                max_batch_size=max_batch_size,
            )
            for opt in options
        ]
        self._owner: dict[str, int] = {}
        self._pending: list[tuple[int, Any]] = []
        self._tokenizer: PreTrainedTokenizerBase | None = None
        asked = f"{workers} workers ({cpus_per_worker} CPU, {gpus} GPU each)"
        facts = self._wait_started(asked, start_timeout, model)
        self.module_shapes: dict[str, tuple[int, int]] = dict(facts[0]["module_shapes"])
        self.model_path: str = facts[0]["model_path"]
        self.target_modules: tuple[str, ...] = tuple(facts[0]["target_modules"])
        self.device: str = facts[0]["device"]
        #: The GPUs Ray assigned to each worker (the same id twice: a shared GPU).
        self.worker_gpu_ids: list[tuple[str, ...]] = [tuple(f["gpu_ids"]) for f in facts]

    def _wait_started(
        self, asked: str, timeout: float, model: str | Path | None
    ) -> list[dict[str, Any]]:
        """Wait for every worker to load the model; their :meth:`HostWorker.describe` facts.

        Raises:
            ClusterError: If they do not start within ``timeout`` or cannot load the model
                (the workers are stopped first).
        """
        try:
            refs = [w.describe.remote() for w in self._workers]
            ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=timeout)
            if len(ready) < len(refs):
                free = self._ray.available_resources()
                raise ClusterError(
                    f"engine.workers: {asked} did not start within {timeout:.0f} s; "
                    f"free: CPU={free.get('CPU', 0)}, GPU={free.get('GPU', 0)}"
                )
            return self.gather(refs, "start")
        except WorkerLostError as error:
            self.close()
            raise ClusterError(
                f"RayAdapterHost: workers could not load model {model!r}: {error.__cause__}"
            ) from error
        except BaseException:
            self.close()
            raise

    # -- workers ----------------------------------------------------------------------------

    @property
    def workers(self) -> int:
        """Number of worker actors."""
        return len(self._workers)

    @property
    def actors(self) -> list[Any]:
        """The worker actor handles, in index order (for monitoring and fault-injection tests)."""
        return list(self._workers)

    def placement(self) -> dict[str, int]:
        """Which worker holds each adapter (adapter id -> worker index)."""
        return dict(self._owner)

    def gather(
        self, refs: Sequence[Any], what: str, owners: Sequence[int] | None = None
    ) -> list[Any]:
        """Wait for calls on the workers and return their results, in order.

        Args:
            refs: Ray object refs of calls on the workers.
            what: What the calls do, for the error message.
            owners: Index of the worker running each call (default: ``refs[i]`` on worker ``i``).

        Raises:
            WorkerLostError: If a worker died; the message names it, the call and its adapters.
        """
        owners = list(range(len(refs))) if owners is None else list(owners)

        def describe(i: int) -> str:
            index = owners[i]
            held = sorted(a for a, w in self._owner.items() if w == index)
            return f"Ray worker {index} (during {what}; adapters {held})"

        return gather(refs, describe)

    def track(self, worker: int, ref: Any) -> None:
        """Leave a call on ``worker`` in flight until the next :meth:`settle`.

        Learner steps run while the driver goes on; any later call that reads or changes
        adapters settles them first, so it sees the updated weights and their errors.
        """
        self._pending.append((worker, ref))

    def settle(self) -> None:
        """Wait for tracked calls still in flight, so that their errors surface here."""
        pending, self._pending = self._pending, []
        if pending:
            self.gather([ref for _, ref in pending], "learner step", [w for w, _ in pending])

    def worker_of(self, adapter_id: str) -> int:
        """Index of the worker holding ``adapter_id``.

        Raises:
            KeyError: If no worker holds it.
        """
        try:
            return self._owner[adapter_id]
        except KeyError:
            known = ", ".join(map(repr, self._owner)) or "none"
            raise KeyError(f"RayAdapterHost has no adapter {adapter_id!r} (held: {known})") from None

    # -- adapters ---------------------------------------------------------------------------

    @property
    def adapter_ids(self) -> list[str]:
        """Ids of the adapters the workers hold, in insertion order."""
        return list(self._owner)

    def add_adapter(self, adapter_id: str, genome: LoRAGenome) -> None:
        """Add a new adapter on the least loaded worker.

        Raises:
            ValueError: If the id is taken or the genome does not fit the model.
        """
        if adapter_id in self._owner:
            raise ValueError(f"adapter {adapter_id!r} already exists; use set_adapter to replace it")
        self.set_adapter(adapter_id, genome)

    def set_adapter(self, adapter_id: str, genome: LoRAGenome) -> None:
        """Add an adapter or replace its weights (sent as a tensor state dict).

        Raises:
            ValueError: If the genome does not fit the model (the worker's message).
        """
        self.settle()
        index = self._owner.get(adapter_id)
        if index is None:
            loads = [0] * len(self._workers)
            for w in self._owner.values():
                loads[w] += 1
            index = loads.index(min(loads))
        state = genome.to(device="cpu").state_dict()
        ref = self._workers[index].set_adapter.remote(adapter_id, state)
        self.gather([ref], f"set_adapter({adapter_id!r})", [index])
        self._owner[adapter_id] = index

    def remove_adapter(self, adapter_id: str) -> None:
        """Remove an adapter and its optimizer state.

        Raises:
            KeyError: If no worker holds it.
        """
        self.settle()
        index = self.worker_of(adapter_id)
        self.gather([self._workers[index].remove_adapter.remote(adapter_id)], "remove_adapter", [index])
        del self._owner[adapter_id]

    def genome(self, adapter_id: str) -> LoRAGenome:
        """The adapter's current (trained) weights, fetched from its worker.

        Raises:
            KeyError: If no worker holds it.
        """
        return self.genomes([adapter_id])[adapter_id]

    def genomes(self, adapter_ids: Sequence[str]) -> dict[str, LoRAGenome]:
        """Several adapters' weights, one call per worker, all workers at once.

        Raises:
            KeyError: If an id is not held.
        """
        self.settle()
        by_worker: dict[int, list[str]] = {}
        for adapter_id in adapter_ids:
            by_worker.setdefault(self.worker_of(adapter_id), []).append(adapter_id)
        order = sorted(by_worker)
        refs = [self._workers[w].genome_states.remote(by_worker[w]) for w in order]
        states: dict[str, Any] = {}
        for part in self.gather(refs, "genome export", order):
            states.update(part)
        return {a: LoRAGenome.from_state_dict(states[a]) for a in adapter_ids}

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        """The model's tokenizer, loaded in this process on first use."""
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        return self._tokenizer

    # -- generation -------------------------------------------------------------------------

    def generate(
        self,
        prompts: Sequence[str],
        adapter_ids: Sequence[str | None],
        sampling: SamplingParams | Sequence[SamplingParams] | None = None,
    ) -> list[Generation]:
        """Sample completions on the workers holding each row's adapter (see ``AdapterHost.generate``).

        Rows without an adapter run on worker 0. Results come back in the caller's order: the
        ``n`` samples of each prompt next to each other.

        Raises:
            ValueError: If the lengths disagree or the per-prompt seeds differ.
            KeyError: If an adapter id is unknown.
        """
        prompts = list(prompts)
        per_row = rows_sampling(prompts, adapter_ids, sampling)
        rows_of: dict[int, list[int]] = {}
        for row, adapter_id in enumerate(adapter_ids):
            index = 0 if adapter_id is None else self.worker_of(adapter_id)
            rows_of.setdefault(index, []).append(row)
        self.settle()
        order = sorted(rows_of)
        refs = [
            self._workers[w].generate.remote(
                [prompts[r] for r in rows_of[w]],
                [adapter_ids[r] for r in rows_of[w]],
                [per_row[r] for r in rows_of[w]],
            )
            for w in order
        ]
        per_prompt: list[list[Generation]] = [[] for _ in prompts]
        for w, gens in zip(order, self.gather(refs, "generate", order), strict=True):
            it = iter(gens)
            for row in rows_of[w]:
                per_prompt[row] = [next(it) for _ in range(per_row[row].n)]
        return [g for block in per_prompt for g in block]

    # -- learner, executor, lifetime --------------------------------------------------------

    def make_learner(self, config: LearnerConfig | None = None) -> RayLearner:
        """A learner whose steps run on the workers (each keeps its adapters' optimizer states).

        Args:
            config: A :class:`~redqueen.engine.LearnerConfig` (``None``: defaults).
        """
        return RayLearner(self, config)

    def make_executor(self, settings: Mapping[str, Any] | None = None) -> RayExecutorPool:
        """A sandbox pool over this host's workers, so checks run where the model runs.

        Each worker starts its own sandbox on its node; closing the pool (an environment's
        ``close``) also stops this host's workers.

        Args:
            settings: ``Executor`` settings ``{"workers", "timeout", "memory_mb"}``.
        """
        settings = dict(settings or {})
        return RayExecutorPool(
            actors=self._workers,
            workers=settings.get("workers"),
            timeout=settings.get("timeout", 2.0),
            memory_mb=settings.get("memory_mb", 512),
            closes=(self,),
        )

    def close(self) -> None:
        """Stop the workers and free their placement group (safe to call twice)."""
        workers, self._workers = getattr(self, "_workers", []), []
        for actor in workers:
            self._ray.kill(actor)
        group, self._group = getattr(self, "_group", None), None
        if group is not None:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(group)
        self._owner = {}

    def __repr__(self) -> str:
        return (
            f"RayAdapterHost(model={self.model_path!r}, workers={len(self._workers)}, "
            f"device={self.device!r}, adapters={self.adapter_ids})"
        )


def _check_layout(workers: int, placement: str, gpus_per_worker: float | None) -> None:
    """Reject a worker count, placement strategy or GPU share Ray cannot honour.

    Raises:
        ValueError: Naming the setting.
    """
    if workers < 1:
        raise ValueError(f"RayAdapterHost: workers must be >= 1, got {workers}")
    if placement not in ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"):
        raise ValueError(f"RayAdapterHost: unknown placement strategy {placement!r}")
    if gpus_per_worker is not None and (
        gpus_per_worker < 0 or (gpus_per_worker > 1 and gpus_per_worker != int(gpus_per_worker))
    ):
        raise ValueError(
            f"engine.gpus_per_worker must be a fraction in [0, 1] or a whole number, "
            f"got {gpus_per_worker}"
        )
