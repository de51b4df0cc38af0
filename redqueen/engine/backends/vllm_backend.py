"""Multi-LoRA generation with vLLM (``backend: vllm``; the ``vllm`` extra, CUDA).

vLLM decodes; the learner stays in PyTorch on the host's own model. Every adapter change is
handed to vLLM at the next generation: the host's current factors are written as a PEFT
folder under a RAM-backed directory (``/dev/shm`` where it exists) and registered under a new
unique integer id, so vLLM never serves stale weights from its LoRA cache. The engine is built
on first use, when the population is known: ``max_loras`` = adapters held (the population
size), ``max_lora_rank`` = the largest genome rank rounded up to a size vLLM supports. Each row
carries its own seed (:func:`~redqueen.engine.backends._common.row_seeds`), the same per-row key
the ``hf`` backend uses, and asks for raw log-probabilities (before temperature and top-p),
which is what the learner's ratio needs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Protocol

from redqueen.engine._sampling import Generation, SamplingParams
from redqueen.engine.backends._base import BACKENDS, BackendHost
from redqueen.engine.backends._common import call_row_seeds

__all__ = ["AdapterStage", "VLLMBackend", "engine_kwargs", "lora_rank_bucket", "to_generation"]

#: LoRA ranks vLLM's kernels are built for.
VLLM_LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)


class _Logprob(Protocol):
    @property
    def logprob(self) -> float: ...


class CompletionOutput(Protocol):
    """What :func:`to_generation` reads of one vLLM ``CompletionOutput``."""

    @property
    def token_ids(self) -> Sequence[int]:
        """Sampled tokens."""
        ...

    @property
    def logprobs(self) -> Sequence[Mapping[int, float | _Logprob]] | None:
        """Per token, its log-probability (a float or a ``Logprob``) by token id."""
        ...

    @property
    def text(self) -> str:
        """The completion's text, cut at a stop string."""
        ...

    @property
    def finish_reason(self) -> str | None:
        """``"stop"`` for an end-of-sequence token or a stop string."""
        ...


class _RequestOutput(Protocol):
    @property
    def outputs(self) -> Sequence[CompletionOutput]: ...


class _Engine(Protocol):
    """The part of ``vllm.LLM`` this backend calls."""

    @property
    def llm_engine(self) -> object: ...

    def generate(
        self,
        prompts: list[dict[str, list[int]]],
        sampling_params: list[object],
        *,
        lora_request: list[object | None],
        use_tqdm: bool,
    ) -> Sequence[_RequestOutput]: ...


def lora_rank_bucket(rank: int) -> int:
    """The smallest rank vLLM supports that holds ``rank``.

    Raises:
        ValueError: If ``rank`` exceeds every supported size.
    """
    for bucket in VLLM_LORA_RANKS:
        if rank <= bucket:
            return bucket
    raise ValueError(f"vllm backend: LoRA rank {rank} exceeds vLLM's largest ({VLLM_LORA_RANKS[-1]})")


def engine_kwargs(
    model_path: str,
    *,
    ranks: Sequence[int],
    dtype: str,
    gpu_memory_utilization: float,
    max_model_len: int | None,
    extra: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """Keyword arguments of ``vllm.LLM`` for a population with these adapter ranks."""
    kwargs: dict[str, object] = {
        "model": model_path,
        "enable_lora": True,
        "max_loras": max(1, len(ranks)),
        "max_lora_rank": lora_rank_bucket(max(ranks, default=8)),
        "dtype": dtype,
        "gpu_memory_utilization": gpu_memory_utilization,
        "logprobs_mode": "raw_logprobs",
        "seed": 0,
    }
    if max_model_len is not None:
        kwargs["max_model_len"] = int(max_model_len)
    kwargs.update(extra or {})
    return kwargs


class AdapterStage:
    """Adapters written as PEFT folders for vLLM, each version under a new unique integer id.

    Args:
        root: Parent directory (default ``/dev/shm`` when it exists, else the temp dir).
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        if root is None:
            root = "/dev/shm" if Path("/dev/shm").is_dir() else tempfile.gettempdir()
        self.dir = Path(tempfile.mkdtemp(prefix="redqueen-vllm-", dir=root))
        self._next_id = 1
        self.current: dict[str, tuple[int, Path]] = {}  # adapter id -> (int id, folder)
        self.ranks: dict[str, int] = {}
        self.dirty: set[str] = set()

    def mark(self, adapter_ids: Sequence[str]) -> None:
        """These adapters changed (added, trained, replaced or removed) since last staged."""
        self.dirty.update(adapter_ids)

    def sync(self, host: BackendHost) -> list[int]:
        """Write every dirty adapter the host still holds; returns the int ids now retired."""
        retired = []
        held = set(host.adapter_ids)
        for adapter_id in sorted(self.dirty):
            old = self.current.pop(adapter_id, None)
            self.ranks.pop(adapter_id, None)
            if old is not None:
                retired.append(old[0])
                shutil.rmtree(old[1], ignore_errors=True)
            if adapter_id in held:
                int_id = self._next_id
                self._next_id += 1
                folder = self.dir / f"{int_id}"
                genome = host.genome(adapter_id)
                genome.save_peft(folder, base_model=str(host.model_path))
                self.current[adapter_id] = (int_id, folder)
                self.ranks[adapter_id] = genome.rank
        self.dirty.clear()
        return retired

    def close(self) -> None:
        """Delete the staged folders."""
        shutil.rmtree(self.dir, ignore_errors=True)
        self.current.clear()


def to_generation(output: CompletionOutput, prompt_ids: Sequence[int]) -> Generation:
    """A :class:`Generation` from one vLLM ``CompletionOutput`` (raw log-probabilities)."""
    token_ids = [int(t) for t in output.token_ids]
    logprobs = []
    for token, entry in zip(token_ids, output.logprobs or [], strict=False):
        value = entry[token]
        logprobs.append(float(value) if isinstance(value, int | float) else float(value.logprob))
    if len(logprobs) != len(token_ids):
        raise ValueError(
            f"vllm backend: {len(token_ids)} tokens but {len(logprobs)} log-probabilities"
        )
    return Generation(
        text=output.text,
        prompt_ids=list(prompt_ids),
        token_ids=token_ids,
        logprobs=logprobs,
        finished=output.finish_reason == "stop",
    )


def _accepts_logprobs_mode() -> bool:
    """Whether this vLLM has ``logprobs_mode`` (raw log-probabilities; vLLM >= 0.10.2)."""
    import dataclasses

    from vllm.engine.arg_utils import EngineArgs

    return "logprobs_mode" in {f.name for f in dataclasses.fields(EngineArgs)}


@BACKENDS.register("vllm")
class VLLMBackend:
    """Decode with a vLLM engine serving the population's adapters side by side.

    Settings come from environment variables, since backends are built as ``cls(host)``:
    ``REDQUEEN_VLLM_GPU_MEMORY`` (share of GPU memory for vLLM, default 0.5: the host's own
    model and the learner need the rest), ``REDQUEEN_VLLM_MAX_MODEL_LEN``.

    Args:
        host: The host whose adapters vLLM serves (an :class:`~redqueen.engine.AdapterHost`:
            its model trains; vLLM only decodes).

    Raises:
        ImportError: If vllm is not installed (the message names the extra).
    """

    def __init__(self, host: BackendHost) -> None:
        try:
            import vllm
        except ImportError as error:
            raise ImportError(
                "backend 'vllm' needs vLLM: pip install 'redqueen[vllm]' (CUDA only)"
            ) from error
        self._vllm: ModuleType = vllm
        self.host = host
        self.stage = AdapterStage()
        self.llm: _Engine | None = None
        self._capacity: tuple[int, int] = (0, 0)  # (max_loras, max_lora_rank) of the engine

    def adapters_changed(self, adapter_ids: Sequence[str]) -> None:
        """Stage these adapters again before the next generation."""
        self.stage.mark(adapter_ids)

    def _engine(self) -> _Engine:
        ranks = list(self.stage.ranks.values())
        need = (max(1, len(ranks)), lora_rank_bucket(max(ranks, default=8)))
        if self.llm is not None and need[0] <= self._capacity[0] and need[1] <= self._capacity[1]:
            return self.llm
        self.llm = None  # a larger population or rank needs a new engine
        dtype = str(self.host.dtype).removeprefix("torch.")
        max_len = os.environ.get("REDQUEEN_VLLM_MAX_MODEL_LEN")
        kwargs = engine_kwargs(
            str(self.host.model_path),
            ranks=ranks,
            dtype=dtype,
            gpu_memory_utilization=float(os.environ.get("REDQUEEN_VLLM_GPU_MEMORY", 0.5)),
            max_model_len=int(max_len) if max_len else None,
        )
        if not _accepts_logprobs_mode():
            # Older vLLM reports log-probabilities after temperature / top-p: equal to the
            # raw ones at temperature 1 and top_p 1 (the defaults the learner assumes).
            kwargs.pop("logprobs_mode")
        engine: _Engine = self._vllm.LLM(**kwargs)
        self.llm, self._capacity = engine, need
        return engine

    def generate(
        self,
        prompt_ids: Sequence[Sequence[int]],
        adapter_ids: Sequence[str | None],
        params: Sequence[SamplingParams],
    ) -> list[Generation]:
        """Sample one completion per row (see :class:`~redqueen.engine.backends.GenerationBackend`)."""
        from vllm.lora.request import LoRARequest

        retired = self.stage.sync(self.host)
        llm = self._engine()
        for int_id in retired:
            remove = getattr(llm, "remove_lora", None) or getattr(llm.llm_engine, "remove_lora", None)
            if remove is not None:
                remove(int_id)
        seeded = call_row_seeds(prompt_ids, adapter_ids, params)
        seeds: list[int | None] = [None] * len(params) if seeded is None else list(seeded)
        requests: list[object] = []
        prompts: list[dict[str, list[int]]] = []
        loras: list[object | None] = []
        for ids, adapter_id, p, row_seed in zip(prompt_ids, adapter_ids, params, seeds, strict=True):
            requests.append(
                self._vllm.SamplingParams(
                    max_tokens=p.max_new_tokens,
                    temperature=p.temperature,
                    top_p=p.top_p,
                    stop=list(p.stop),
                    seed=row_seed,
                    logprobs=0,
                    skip_special_tokens=True,
                )
            )
            prompts.append({"prompt_token_ids": list(ids)})
            if adapter_id is None:
                loras.append(None)
            else:
                int_id, folder = self.stage.current[adapter_id]
                loras.append(LoRARequest(f"{adapter_id}@{int_id}", int_id, str(folder)))
        outputs = llm.generate(prompts, requests, lora_request=loras, use_tqdm=False)
        return [to_generation(out.outputs[0], ids) for out, ids in zip(outputs, prompt_ids, strict=True)]

    def __del__(self) -> None:
        stage = getattr(self, "stage", None)
        if stage is not None:
            stage.close()
