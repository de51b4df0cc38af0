"""One frozen base model serving many LoRA adapters: :class:`AdapterHost`."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import torch
import transformers
from torch import Tensor, nn
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from redqueen.engine._lora_layer import MultiLoRALinear, inject_multilora
from redqueen.engine._sampling import Generation, SamplingParams, rows_sampling
from redqueen.engine.backends import BACKENDS, GenerationBackend
from redqueen.engine.backends._supported import UnsupportedModelError
from redqueen.genomes import LoRAGenome

__all__ = ["DEFAULT_TARGET_MODULES", "AdapterHost"]

#: Every linear projection of a Llama/Qwen/Mistral-style decoder layer.
DEFAULT_TARGET_MODULES: tuple[str, ...] = (
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
)


class AdapterHost:
    """A frozen base causal LM with many LoRA adapters, each addressed by an id.

    Adapters enter and leave as :class:`~redqueen.genomes.LoRAGenome` objects; in between the
    host holds their factors in float32 on its device, the learner trains them in place, and
    :meth:`genome` exports the current weights. Generation mixes adapters in one batch (see
    :class:`~redqueen.engine._lora_layer.MultiLoRALinear`), so a population of teachers and
    students shares one copy of the base model.

    Args:
        model: A Hugging Face model id or local folder (default: the shipped ``tiny-coder``),
            or an already built ``PreTrainedModel`` (then pass ``tokenizer`` too).
        tokenizer: Tokenizer, or a path/id to load it from; defaults to the model's folder.
        device: Where the model runs (``"cpu"``, ``"cuda"``, ...).
        dtype: Base model dtype; default float32 on CPU and bfloat16 on GPUs.
        target_modules: Names of the linear modules that carry LoRA factors (PEFT
            convention: last name component); default :data:`DEFAULT_TARGET_MODULES`.
        backend: Name of the generation backend in :data:`~redqueen.engine.BACKENDS`, or
            ``"auto"`` (the default): ``"static"`` for the Llama/Qwen2-style models it runs
            (on CUDA its graphs decode 7x faster than ``"hf"``; on the CPU it drops ended
            rows and prefills each repeated prompt once, ``benchmarks/README.md``), and
            ``"hf"`` for any other model.
        max_batch_size: Most rows decoded together; longer prompt lists are chunked.

    Raises:
        ValueError: If no linear module matches ``target_modules``.
        redqueen._registry.UnknownNameError: If the backend is not registered.
    """

    def __init__(
        self,
        model: str | Path | PreTrainedModel | None = None,
        *,
        tokenizer: object | None = None,
        device: str | torch.device = "cpu",
        dtype: torch.dtype | None = None,
        target_modules: Sequence[str] | None = None,
        backend: str = "auto",
        max_batch_size: int = 64,
    ) -> None:
        self.device = torch.device(device)
        if dtype is None:
            dtype = torch.float32 if self.device.type == "cpu" else torch.bfloat16
        self.dtype = dtype
        if model is None or isinstance(model, str):
            from redqueen.assets import resolve_model

            model = resolve_model(model)
        if isinstance(model, PreTrainedModel):
            self.model_path = str(getattr(model, "name_or_path", "") or type(model).__name__)
            # ``PreTrainedModel.to`` is wrapped by functools.wraps, whose stub leaves it unbound.
            self.model = model.to(device=self.device, dtype=dtype)  # type: ignore[call-arg]
            if tokenizer is None:
                raise ValueError(
                    "AdapterHost: pass tokenizer= when model is an already built model"
                )
        else:
            self.model_path = str(model)
            self.model = _load_model(self.model_path, dtype).to(self.device)
        if tokenizer is None or isinstance(tokenizer, str | Path):
            tokenizer = AutoTokenizer.from_pretrained(str(tokenizer or self.model_path))
        self.tokenizer: PreTrainedTokenizerBase = cast(PreTrainedTokenizerBase, tokenizer)
        self.model.requires_grad_(False)
        self.model.eval()
        self.target_modules = tuple(target_modules or DEFAULT_TARGET_MODULES)
        self._layers: dict[str, MultiLoRALinear] = inject_multilora(self.model, self.target_modules)
        self._adapters: dict[str, tuple[int, float]] = {}  # id -> (rank, alpha)
        if max_batch_size < 1:
            raise ValueError(f"AdapterHost.max_batch_size must be >= 1, got {max_batch_size}")
        self.max_batch_size = max_batch_size
        self.eos_token_ids = _eos_ids(self.model, tokenizer)
        pad = getattr(tokenizer, "pad_token_id", None)
        self.pad_token_id = int(pad if pad is not None else min(self.eos_token_ids, default=0))
        self.backend: GenerationBackend
        if backend == "auto":
            try:
                self.backend, backend = BACKENDS["static"](self), "static"
            except UnsupportedModelError:
                self.backend, backend = BACKENDS["hf"](self), "hf"
        else:
            self.backend = BACKENDS[backend](self)
        self.backend_name = backend

    # -- adapters --------------------------------------------------------------------------

    @property
    def module_shapes(self) -> dict[str, tuple[int, int]]:
        """Shape ``(out, in)`` of every module that can carry LoRA factors, for ``LoRAGenome.random``."""
        return {
            name: (layer.out_features, layer.in_features) for name, layer in self._layers.items()
        }

    @property
    def adapter_ids(self) -> list[str]:
        """Ids of the adapters the host holds, in insertion order."""
        return list(self._adapters)

    def add_adapter(self, adapter_id: str, genome: LoRAGenome) -> None:
        """Add a new adapter.

        Raises:
            ValueError: If the id is taken, or the genome names a module the host lacks or
                has factors of the wrong shape.
        """
        if adapter_id in self._adapters:
            raise ValueError(
                f"adapter {adapter_id!r} already exists; use set_adapter to replace it"
            )
        self.set_adapter(adapter_id, genome)

    def set_adapter(self, adapter_id: str, genome: LoRAGenome) -> None:
        """Add an adapter or replace an existing one's weights (its old factors are dropped).

        Raises:
            ValueError: If the genome names a module the host lacks or has wrong shapes.
        """
        if not isinstance(adapter_id, str) or not adapter_id:
            raise ValueError(f"adapter ids are non-empty strings, got {adapter_id!r}")
        unknown = [m for m in genome.modules if m not in self._layers]
        if unknown:
            raise ValueError(
                f"genome for adapter {adapter_id!r} has modules the host does not target: {unknown[:3]}"
                f"{' ...' if len(unknown) > 3 else ''} (host target_modules={list(self.target_modules)})"
            )
        factors: dict[str, tuple[Tensor, Tensor]] = {}
        for name in genome.modules:
            a, b = genome.factors(name)
            layer = self._layers[name]
            if tuple(a.shape) != (genome.rank, layer.in_features) or tuple(b.shape) != (
                layer.out_features,
                genome.rank,
            ):
                raise ValueError(
                    f"genome for adapter {adapter_id!r}, module {name!r}: factors A {tuple(a.shape)}, "
                    f"B {tuple(b.shape)} do not fit (out={layer.out_features}, in={layer.in_features}, "
                    f"rank={genome.rank})"
                )
            factors[name] = (_master(a, self.device), _master(b, self.device))
        self._drop(adapter_id)
        for name, (a, b) in factors.items():
            self._layers[name].set_factors(adapter_id, a, b, genome.scaling)
        self._adapters[adapter_id] = (genome.rank, float(genome.alpha))
        self.adapters_changed([adapter_id])

    def remove_adapter(self, adapter_id: str) -> None:
        """Remove an adapter and free its factors.

        Raises:
            KeyError: If the host has no such adapter.
        """
        self._check(adapter_id)
        self._drop(adapter_id)
        del self._adapters[adapter_id]
        self.adapters_changed([adapter_id])

    def adapters_changed(self, adapter_ids: Sequence[str]) -> None:
        """Tell the generation backend that these adapters changed.

        The host calls it when an adapter is set or removed; a learner calls it after
        training factors in place, so that a backend holding its own copy of the weights
        (stacked factors, a vLLM engine) refreshes them before the next generation.
        """
        self.backend.adapters_changed(adapter_ids)

    def genome(self, adapter_id: str) -> LoRAGenome:
        """Export an adapter's current (possibly trained) weights as a new genome (a copy).

        Raises:
            KeyError: If the host has no such adapter.
        """
        rank, alpha = self._check(adapter_id)
        factors: dict[str, tuple[Tensor, Tensor]] = {}
        for name, layer in self._layers.items():
            if adapter_id in layer.adapters:
                a, b, _ = layer.adapters[adapter_id]
                factors[name] = (a.detach().clone(), b.detach().clone())
        return LoRAGenome(factors, rank=rank, alpha=alpha, base_model=self.model_path)

    def genomes(self, adapter_ids: Sequence[str]) -> dict[str, LoRAGenome]:
        """Several adapters' current weights (see :meth:`genome`), by id.

        Raises:
            KeyError: If the host has no such adapter.
        """
        return {adapter_id: self.genome(adapter_id) for adapter_id in adapter_ids}

    def adapter_parameters(self, adapter_id: str) -> list[Tensor]:
        """The trainable factor tensors of one adapter, in a fixed order (``A``, ``B`` per module).

        The same tensor objects stay in use until the adapter is replaced or removed, so an
        optimizer built over them stays valid across steps.

        Raises:
            KeyError: If the host has no such adapter.
        """
        self._check(adapter_id)
        params: list[Tensor] = []
        for layer in self._layers.values():
            if adapter_id in layer.adapters:
                a, b, _ = layer.adapters[adapter_id]
                params.extend((a, b))
        return params

    # -- routing ---------------------------------------------------------------------------

    @contextmanager
    def use_adapter(self, adapter_id: str | None) -> Iterator[nn.Module]:
        """Run the model with one adapter (or none) on every row; yields the model.

        Inside, a forward is differentiable in that adapter's factors; the learner uses this.

        Raises:
            KeyError: If the host has no such adapter.
        """
        if adapter_id is not None:
            self._check(adapter_id)
        try:
            for layer in self._layers.values():
                if adapter_id is None:
                    layer.route_none()
                else:
                    layer.route_single(adapter_id)
            yield self.model
        finally:
            for layer in self._layers.values():
                layer.route_none()

    @contextmanager
    def route_rows(self, adapter_ids: Sequence[str | None]) -> Iterator[nn.Module]:
        """Run the model with one adapter per batch row (``None``: base model); yields the model.

        The factors are gathered and cast once on entry, so this is for inference over a batch
        whose rows keep their adapters (generation); it is not differentiable.

        Raises:
            KeyError: If an id is not held by the host.
        """
        for adapter_id in {a for a in adapter_ids if a is not None}:
            self._check(adapter_id)
        try:
            for layer in self._layers.values():
                layer.route_rows(adapter_ids, self.dtype)
            yield self.model
        finally:
            for layer in self._layers.values():
                layer.route_none()

    # -- generation ------------------------------------------------------------------------

    def generate(
        self,
        prompts: Sequence[str],
        adapter_ids: Sequence[str | None],
        sampling: SamplingParams | Sequence[SamplingParams] | None = None,
    ) -> list[Generation]:
        """Sample completions, each prompt with its own adapter, all in mixed batches.

        Args:
            prompts: Prompt texts (tokenized with the host's tokenizer, special tokens added).
            adapter_ids: One adapter id per prompt; ``None`` samples from the base model.
            sampling: One :class:`SamplingParams` for all prompts, or one per prompt (per-row
                budgets, stop strings, temperatures); all must share one seed.

        Returns:
            ``len(prompts) * n`` generations: the ``n`` samples of each prompt next to each other.

        Raises:
            ValueError: If the lengths disagree or the per-prompt seeds differ.
            KeyError: If an adapter id is unknown.
        """
        prompts = list(prompts)
        per_row = rows_sampling(prompts, adapter_ids, sampling)
        for adapter_id in {a for a in adapter_ids if a is not None}:
            self._check(adapter_id)
        ids: list[list[int]] = []
        rows: list[str | None] = []
        params: list[SamplingParams] = []
        for prompt, row_adapter, p in zip(prompts, adapter_ids, per_row, strict=True):
            encoded = self.tokenizer(prompt)["input_ids"]
            for _ in range(p.n):
                ids.append(encoded)
                rows.append(row_adapter)
                params.append(p)
        if not ids:
            return []
        return self.backend.generate(ids, rows, params)

    # -- internals -------------------------------------------------------------------------

    def _check(self, adapter_id: str) -> tuple[int, float]:
        try:
            return self._adapters[adapter_id]
        except KeyError:
            known = ", ".join(map(repr, self._adapters)) or "none"
            raise KeyError(f"AdapterHost has no adapter {adapter_id!r} (held: {known})") from None

    def _drop(self, adapter_id: str) -> None:
        for layer in self._layers.values():
            layer.drop(adapter_id)

    def __repr__(self) -> str:
        return (
            f"AdapterHost(model={self.model_path!r}, device={str(self.device)!r}, dtype={self.dtype}, "
            f"adapters={self.adapter_ids})"
        )


def _master(t: Tensor, device: torch.device) -> Tensor:
    """A float32 trainable copy of a factor on the host's device."""
    return t.detach().to(device=device, dtype=torch.float32).clone().requires_grad_(True)


def _load_model(path: str, dtype: torch.dtype) -> nn.Module:
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    key = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
    if path.startswith(("/", "./", "../", "~")):  # a local path, not a hub id
        local = os.path.expanduser(path)
        if not os.path.isdir(local):
            raise ValueError(f"AdapterHost: cannot load model {path!r}: no such directory")
        path = local
    from transformers.utils import logging as hf_logging

    # A loading bar helps at a terminal; in a log or a pipe it is a line of carriage returns.
    quiet = not _on_terminal() and hf_logging.is_progress_bar_enabled()
    if quiet:
        hf_logging.disable_progress_bar()
    try:
        return AutoModelForCausalLM.from_pretrained(path, **{key: dtype})
    except OSError as error:
        raise ValueError(f"AdapterHost: cannot load model {path!r}: {error}") from error
    finally:
        if quiet:
            hf_logging.enable_progress_bar()


def _on_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stderr
        return False


def _eos_ids(model: nn.Module, tokenizer: object) -> set[int]:
    ids: set[int] = set()
    config = getattr(model, "generation_config", None)
    for source in (getattr(config, "eos_token_id", None), getattr(tokenizer, "eos_token_id", None)):
        if isinstance(source, int):
            ids.add(source)
        elif isinstance(source, list | tuple):
            ids.update(int(i) for i in source)
    return ids
