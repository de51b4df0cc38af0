"""The remote side: :class:`HostWorker`, one base model and a share of the adapters.

A worker is a plain class; :mod:`redqueen.engine.distributed._host` wraps it with
``ray.remote`` so that it can also be built and tested in-process. Adapters enter and leave as
genome state dicts (tensors), never as models; generation and learner steps run where the
adapter lives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from redqueen.engine._learner import LearnerConfig, LearnerState, LearnerStats
from redqueen.engine._rollout import Rollout
from redqueen.engine._sampling import Generation, SamplingParams
from redqueen.engine.distributed._executor import SandboxMixin
from redqueen.genomes import LoRAGenome

__all__ = ["HostWorker"]


class HostWorker(SandboxMixin):
    """An :class:`~redqueen.engine.AdapterHost`, its :class:`~redqueen.engine.Learner`, and a
    sandbox (started on the first check) so that verification runs on the same processes.

    Args:
        model: Model id or local folder (``None``: the shipped tiny-coder).
        device: Torch device inside the worker (``"cuda"`` maps to the GPU Ray assigned).
        dtype: Base model dtype name (``"float32"``, ``"bfloat16"``, ``"float16"``) or ``None``.
        target_modules: Linear modules that carry LoRA factors.
        backend: Generation backend name.
        learner: A :class:`~redqueen.engine.LearnerConfig` or ``None`` for the defaults.
        cpu_threads: Torch intra-op threads of this worker process (``None``: torch's default).
        max_batch_size: Most rows decoded together.
    """

    def __init__(
        self,
        model: str | None,
        *,
        device: str = "cpu",
        dtype: str | None = None,
        target_modules: Sequence[str] | None = None,
        backend: str = "auto",
        learner: LearnerConfig | None = None,
        cpu_threads: int | None = None,
        max_batch_size: int = 64,
    ) -> None:
        from redqueen.engine import AdapterHost, Learner, LearnerConfig

        if cpu_threads is not None:
            torch.set_num_threads(int(cpu_threads))
        dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
        self.host = AdapterHost(
            model,
            device=device,
            dtype=dtypes[dtype] if dtype else None,
            target_modules=target_modules,
            backend=backend,
            max_batch_size=max_batch_size,
        )
        self.learner = Learner(self.host, learner if learner is not None else LearnerConfig())

    # -- facts about the model -------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """Module shapes, model path, device and dtype, for the driver's mirror of the host."""
        return {
            "module_shapes": self.host.module_shapes,
            "model_path": self.host.model_path,
            "device": str(self.host.device),
            "dtype": str(self.host.dtype),
            "target_modules": tuple(self.host.target_modules),
            "gpu_ids": [str(i) for i in _ray_gpu_ids()],
        }

    def ping(self) -> bool:
        """Answer ``True`` (a liveness probe)."""
        return True

    # -- adapters ---------------------------------------------------------------------------

    def set_adapter(self, adapter_id: str, state: Mapping[str, Any]) -> None:
        """Add or replace an adapter from a :meth:`LoRAGenome.state_dict`."""
        self.host.set_adapter(adapter_id, LoRAGenome.from_state_dict(dict(state)))

    def remove_adapter(self, adapter_id: str) -> None:
        """Remove an adapter and its optimizer state."""
        self.host.remove_adapter(adapter_id)
        self.learner.forget(adapter_id)

    def genome_states(self, adapter_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Current (trained) weights of these adapters as genome state dicts."""
        return {a: self.host.genome(a).state_dict() for a in adapter_ids}

    # -- generation and learning ------------------------------------------------------------

    def generate(
        self,
        prompts: Sequence[str],
        adapter_ids: Sequence[str | None],
        sampling: Sequence[SamplingParams],
    ) -> list[Generation]:
        """``AdapterHost.generate`` on this worker's rows (``n`` expanded here)."""
        return self.host.generate(list(prompts), list(adapter_ids), list(sampling))

    def learner_step(self, adapter_id: str, rollouts: Sequence[Rollout]) -> LearnerStats:
        """One learner update of an adapter this worker holds."""
        return self.learner.step(adapter_id, rollouts)

    def configure_learner(self, config: LearnerConfig) -> None:
        """Replace the learner (and drop every optimizer state) with one of this config."""
        from redqueen.engine import Learner

        self.learner = Learner(self.host, config)

    def learner_forget(self, adapter_id: str) -> None:
        """Drop an adapter's optimizer state."""
        self.learner.forget(adapter_id)

    def learner_state(self) -> LearnerState:
        """The learner's state dict (optimizer states of this worker's adapters)."""
        return self.learner.state_dict()

    def learner_load(self, state: LearnerState) -> None:
        """Restore the optimizer states of this worker's adapters."""
        self.learner.load_state_dict(state)


def _ray_gpu_ids() -> list:
    """The GPUs Ray assigned to this worker (shared ones included), empty outside Ray."""
    import ray

    return ray.get_gpu_ids() if ray.is_initialized() else []
