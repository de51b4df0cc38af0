"""Where the model runs: the base model and its device (``model:``), and Ray workers (``engine:``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from redqueen.assets import DEFAULT_MODEL
from redqueen.settings._base import Settings

__all__ = ["ClusterSettings", "EngineSettings", "DEFAULT_MODEL"]


class EngineSettings(Settings):
    """The frozen base model that hosts every adapter, and where it runs (``model:``).

    Attributes:
        name: A Hugging Face model id, a local path, or ``"tiny-coder"`` (the shipped model).
        backend: Generation backend name (see ``redqueen.engine.BACKENDS``); ``"auto"`` is
            ``"static"`` for Llama/Qwen2-style models and ``"hf"`` for any other.
        device: Torch device, e.g. ``"cpu"`` or ``"cuda"``.
        dtype: Weight dtype; ``None`` keeps the checkpoint's.
        target_modules: Linear modules that carry LoRA factors (at least one); ``None`` means
            every linear projection.
        cpu_threads: Torch intra-op threads for CPU runs (process-wide; ``None`` keeps torch's
            default). On a quiet 2-core machine two threads run a ``tiny`` step faster than
            one (``benchmarks/README.md``); on a busy one extra threads mostly wait for each
            other, so ``"auto"`` takes one thread per core that other processes leave free,
            measured as the run starts (``redqueen.experiments._cpu``), and warns when none is.
    """

    # An empty name or module was found only when the model loaded, after the run had begun.
    name: str = Field(DEFAULT_MODEL, min_length=1)
    backend: str = "auto"
    device: str = "cpu"
    dtype: Literal["float32", "bfloat16", "float16"] | None = None
    target_modules: tuple[Annotated[str, Field(min_length=1)], ...] | None = Field(None, min_length=1)
    cpu_threads: int | Literal["auto"] | None = None

    @field_validator("cpu_threads", mode="before")
    @classmethod
    def _thread_count(cls, value: object) -> object:
        # One message for every wrong value (a union would name its members in the location).
        if value is None or value == "auto":
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("Input should be a number of threads or 'auto'")
        if value < 1:
            raise ValueError("Input should be greater than or equal to 1")
        if value > 1024:
            raise ValueError("Input should be less than or equal to 1024")
        return value


class ClusterSettings(Settings):
    """Where the model runs: one process (``workers: 0``) or Ray worker actors (``engine:``).

    Attributes:
        workers: Ray workers, each holding one copy of the base model and a share of the
            adapters (one GPU each on CUDA); ``0`` runs everything in this process. Results
            do not depend on it.
        ray_address: Cluster to join (``"auto"``, ``"ray://head:10001"``); ``None`` starts a
            local Ray instance.
        cpus_per_worker: CPUs Ray reserves per worker.
        gpus_per_worker: GPUs per worker; ``None``: 1 on CUDA, else 0.
        placement: Placement of GPU workers: ``PACK`` (one multi-GPU node) or ``SPREAD``.
    """

    workers: int = Field(0, ge=0, le=1024)
    ray_address: str | None = Field(None, min_length=1)
    cpus_per_worker: float = Field(1.0, ge=0, le=1024)
    gpus_per_worker: float | None = Field(None, ge=0, le=64)
    placement: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] = "PACK"
