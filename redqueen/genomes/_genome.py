"""The LoRA genome: per-module low-rank factors plus the rank, alpha and base model they belong to."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from redqueen.genomes._errors import GenomeMismatchError
from redqueen.genomes._seeds import check_generator

#: Version tag written into :meth:`LoRAGenome.state_dict`, checked on load.
STATE_FORMAT = "redqueen.lora_genome/1"


def _check_rank_alpha(rank: object, alpha: object, where: str) -> None:
    """Refuse a rank that is not a positive integer or an alpha that is not a positive number.

    Raises:
        TypeError: If either is not a real number (numpy scalars count).
        ValueError: If the rank is not a positive integer or alpha not a positive finite number.
    """
    for name, value in (("rank", rank), ("alpha", alpha)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{where}: {name} must be a number, got {type(value).__name__}")
    assert isinstance(rank, numbers.Real) and isinstance(alpha, numbers.Real)  # checked above
    if not (math.isfinite(float(rank)) and float(rank).is_integer() and float(rank) >= 1):
        raise ValueError(f"{where}: rank must be a positive integer, got {rank!r}")
    if not math.isfinite(float(alpha)) or float(alpha) <= 0:
        raise ValueError(f"{where}: alpha must be a positive number, got {alpha!r}")


class LoRAGenome:
    """A LoRA adapter seen as a genome: one ``(A, B)`` factor pair per adapted linear module.

    A module's weight update is ``dW = scaling * B @ A`` with ``scaling = alpha / rank``,
    ``A`` of shape ``(rank, in)`` and ``B`` of shape ``(out, rank)``, exactly as in PEFT. The genome
    is treated as immutable: operators build new genomes instead of editing factors in place,
    so a parent can be shared by reference between a population, a lineage and a checkpoint.

    Args:
        factors: Module path (PEFT name without the ``base_model.model.`` prefix, e.g.
            ``"model.layers.0.self_attn.q_proj"``) -> ``(A, B)``.
        rank: LoRA rank ``r``; every ``A`` has ``r`` rows and every ``B`` ``r`` columns.
        alpha: LoRA alpha; the update is scaled by ``alpha / rank``.
        base_model: Identity of the base model (hub id or path) the adapter belongs to, or None
            when unknown. Two genomes with different known base models cannot be combined.

    Raises:
        TypeError: If ``factors`` is not a mapping, a module's value is not an ``(A, B)`` pair
            of torch tensors, the rank or alpha is not a number, or ``base_model`` is neither a
            string nor None.
        ValueError: If there are no modules, the rank or alpha is not positive, or factors have
            the wrong rank, are not 2-D or not floating point, or differ in dtype or device.
    """

    __slots__ = ("_factors", "_rank", "_alpha", "_base_model")

    def __init__(
        self,
        factors: Mapping[str, tuple[Tensor, Tensor]],
        *,
        rank: int,
        alpha: float,
        base_model: str | None = None,
    ) -> None:
        _check_rank_alpha(rank, alpha, "LoRAGenome")
        if base_model is not None and not isinstance(base_model, str):
            raise TypeError(
                f"LoRAGenome: base_model must be a string or None, got {type(base_model).__name__}"
            )
        if not isinstance(factors, Mapping):
            raise TypeError(
                f"LoRAGenome: factors must be a mapping of module name -> (A, B), got {type(factors).__name__}"
            )
        if not factors:
            raise ValueError("LoRAGenome: factors is empty; a genome needs at least one module")
        checked: dict[str, tuple[Tensor, Tensor]] = {}
        first: Tensor | None = None
        for name, pair in factors.items():
            if not isinstance(name, str) or not name:
                raise ValueError(
                    f"LoRAGenome: module names must be non-empty strings, got {name!r}"
                )
            if isinstance(pair, Tensor) or not isinstance(pair, Sequence) or len(pair) != 2:
                raise TypeError(
                    f"LoRAGenome: module {name!r}: factors must be an (A, B) pair of torch tensors, "
                    f"got {type(pair).__name__}"
                    + (f" of {len(pair)}" if isinstance(pair, Sequence) else "")
                )
            a, b = pair
            if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
                raise TypeError(
                    f"LoRAGenome: module {name!r}: factors must be torch tensors, "
                    f"got {type(a).__name__} and {type(b).__name__}"
                )
            if a.ndim != 2 or b.ndim != 2:
                raise ValueError(
                    f"LoRAGenome: module {name!r}: A and B must be 2-D, got {tuple(a.shape)} and {tuple(b.shape)}"
                )
            if not (a.is_floating_point() and b.is_floating_point()):
                raise ValueError(
                    f"LoRAGenome: module {name!r}: factors must be floating point, got {a.dtype} and {b.dtype}"
                )
            if a.shape[0] != rank or b.shape[1] != rank:
                raise ValueError(
                    f"LoRAGenome: module {name!r}: A {tuple(a.shape)} and B {tuple(b.shape)} "
                    f"do not have rank {rank} (A: (r, in), B: (out, r))"
                )
            first = a if first is None else first
            for t in (a, b):
                if t.dtype != first.dtype or t.device != first.device:
                    raise ValueError(
                        f"LoRAGenome: module {name!r}: factors must share one dtype and device "
                        f"({first.dtype} on {first.device} vs {t.dtype} on {t.device})"
                    )
            checked[name] = (a, b)
        self._factors = checked
        self._rank = int(rank)
        self._alpha = float(alpha)
        self._base_model = base_model

    # ------------------------------------------------------------------ identity and shape
    @property
    def modules(self) -> list[str]:
        """Adapted module paths, in insertion order."""
        return list(self._factors)

    @property
    def rank(self) -> int:
        """LoRA rank ``r``."""
        return self._rank

    @property
    def alpha(self) -> float:
        """LoRA alpha."""
        return self._alpha

    @property
    def scaling(self) -> float:
        """``alpha / rank``, the factor PEFT multiplies ``B @ A`` by."""
        return self._alpha / self._rank

    @property
    def base_model(self) -> str | None:
        """Identity of the base model, or None when unknown."""
        return self._base_model

    @property
    def device(self) -> torch.device:
        """Device holding the factors."""
        return next(iter(self._factors.values()))[0].device

    @property
    def dtype(self) -> torch.dtype:
        """Dtype of the factors."""
        return next(iter(self._factors.values()))[0].dtype

    def factors(self, name: str) -> tuple[Tensor, Tensor]:
        """The ``(A, B)`` pair of one module (A: ``(r, in)``, B: ``(out, r)``).

        Raises:
            KeyError: If the genome has no such module; the message lists a few it has.
        """
        try:
            return self._factors[name]
        except KeyError:
            some = ", ".join(list(self._factors)[:5])
            raise KeyError(
                f"genome has no module {name!r} (has {len(self._factors)}: {some}, ...)"
            ) from None

    def items(self) -> Iterable[tuple[str, tuple[Tensor, Tensor]]]:
        """``(name, (A, B))`` pairs, in module order."""
        return self._factors.items()

    def shape(self, name: str) -> tuple[int, int]:
        """``(out, in)`` of the weight that module ``name`` updates."""
        a, b = self.factors(name)
        return (int(b.shape[0]), int(a.shape[1]))

    @property
    def shapes(self) -> dict[str, tuple[int, int]]:
        """Module -> ``(out, in)``, e.g. for :meth:`random` or a compatibility check."""
        return {name: (int(b.shape[0]), int(a.shape[1])) for name, (a, b) in self._factors.items()}

    def num_parameters(self) -> int:
        """Number of scalars in all factors: ``sum r * (in + out)``."""
        return sum(a.numel() + b.numel() for a, b in self._factors.values())

    def is_finite(self) -> bool:
        """Whether every factor entry is finite (no ``nan`` or ``inf``).

        A member whose factors are not finite cannot be evaluated or combined; replacement
        treats it as dead and operators refuse it as a parent.
        """
        return all(bool(torch.isfinite(a).all()) and bool(torch.isfinite(b).all())
                   for a, b in self._factors.values())

    def delta_weight(self, name: str) -> Tensor:
        """Dense update ``scaling * B @ A`` of one module (for tests and small models only)."""
        a, b = self.factors(name)
        return (b @ a) * self.scaling

    # ------------------------------------------------------------------ copies and moves
    def to(
        self, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> LoRAGenome:
        """A genome with the factors on ``device`` and/or cast to ``dtype`` (self when unchanged)."""
        if (device is None or torch.device(device) == self.device) and (
            dtype is None or dtype == self.dtype
        ):
            return self
        moved = {
            n: (a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype))
            for n, (a, b) in self._factors.items()
        }
        return self.replace(moved)

    def clone(self) -> LoRAGenome:
        """A deep copy whose factors share no storage with this genome."""
        return self.replace(
            {n: (a.detach().clone(), b.detach().clone()) for n, (a, b) in self._factors.items()}
        )

    def replace(
        self,
        factors: Mapping[str, tuple[Tensor, Tensor]] | None = None,
        *,
        rank: int | None = None,
        alpha: float | None = None,
    ) -> LoRAGenome:
        """A genome like this one with some fields replaced (the base model is kept)."""
        return LoRAGenome(
            self._factors if factors is None else factors,
            rank=self._rank if rank is None else rank,
            alpha=self._alpha if alpha is None else alpha,
            base_model=self._base_model,
        )

    def check_compatible(self, other: LoRAGenome) -> None:
        """Check that ``other`` adapts the same modules with the same shapes on the same base model.

        Ranks and alphas may differ: the algebra handles that.

        Raises:
            GenomeMismatchError: Naming the first differing module and both shapes, or both base models.
        """
        if not isinstance(other, LoRAGenome):
            raise TypeError(f"expected a LoRAGenome, got {type(other).__name__}")
        if self._base_model and other._base_model and self._base_model != other._base_model:
            raise GenomeMismatchError(
                f"genomes belong to different base models: {self._base_model!r} vs {other._base_model!r}"
            )
        mine, theirs = self.shapes, other.shapes
        for name in mine:
            if name not in theirs:
                raise GenomeMismatchError(
                    f"module {name!r} (shape {mine[name]}) is missing from the other genome"
                )
            if mine[name] != theirs[name]:
                raise GenomeMismatchError(
                    f"module {name!r} has shape {mine[name]} in one genome and {theirs[name]} in the other"
                )
        for name in theirs:
            if name not in mine:
                raise GenomeMismatchError(
                    f"module {name!r} (shape {theirs[name]}) is missing from the first genome"
                )

    # ------------------------------------------------------------------ construction
    @classmethod
    def random(
        cls,
        shapes: Mapping[str, tuple[int, int]],
        *,
        rank: int,
        alpha: float,
        rng: torch.Generator,
        init: str = "peft",
        std: float = 0.02,
        base_model: str | None = None,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> LoRAGenome:
        """A random genome over ``shapes`` (module -> ``(out, in)``).

        Args:
            shapes: Module -> ``(out, in)``, e.g. from :func:`lora_shapes` or ``AdapterHost.module_shapes``.
            rank: LoRA rank.
            alpha: LoRA alpha.
            rng: Generator that makes the draw reproducible (noise is drawn on its device).
            init: ``"peft"``: A kaiming-uniform-like, B = 0, so ``dW = 0`` as in a fresh PEFT adapter;
                ``"gaussian"``: both factors N(0, std^2), so the population starts diverse.
            std: Standard deviation for ``init="gaussian"``.
            base_model: Base model identity to record.
            dtype: Factor dtype.
            device: Factor device (default: the generator's device).

        Raises:
            TypeError: If ``rng`` is not a ``torch.Generator`` or ``shapes`` not a mapping.
            ValueError: If ``init`` is unknown, the rank or alpha is not positive, or a shape
                is not two positive integers.
        """
        check_generator(rng, "LoRAGenome.random")
        _check_rank_alpha(rank, alpha, "LoRAGenome.random")
        if not isinstance(shapes, Mapping):
            raise TypeError(
                f"LoRAGenome.random: shapes must be a mapping of module name -> (out, in), got {type(shapes).__name__}"
            )
        if init not in ("peft", "gaussian"):
            raise ValueError(f"LoRAGenome.random: init must be 'peft' or 'gaussian', got {init!r}")
        gen_device = rng.device
        target = torch.device(device) if device is not None else gen_device
        factors: dict[str, tuple[Tensor, Tensor]] = {}
        for name, shape in shapes.items():
            out_f, in_f = (int(x) for x in shape)
            if out_f < 1 or in_f < 1:
                raise ValueError(
                    f"LoRAGenome.random: module {name!r} has invalid shape {tuple(shape)}"
                )
            if init == "peft":
                # kaiming_uniform_(a=sqrt(5)) as in nn.Linear / PEFT: bound = 1 / sqrt(in).
                bound = 1.0 / math.sqrt(in_f)
                a = (torch.rand((rank, in_f), generator=rng, device=gen_device) * 2 - 1) * bound
                b = torch.zeros((out_f, rank), device=gen_device)
            else:
                a = torch.randn((rank, in_f), generator=rng, device=gen_device) * std
                b = torch.randn((out_f, rank), generator=rng, device=gen_device) * std
            factors[name] = (a.to(target, dtype), b.to(target, dtype))
        return cls(factors, rank=rank, alpha=alpha, base_model=base_model)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Plain dict of tensors, ints and strings (``torch.load(weights_only=True)`` safe)."""
        return {
            "format": STATE_FORMAT,
            "rank": self._rank,
            "alpha": self._alpha,
            "base_model": self._base_model,
            "factors": {n: {"A": a, "B": b} for n, (a, b) in self._factors.items()},
        }

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> LoRAGenome:
        """Inverse of :meth:`state_dict`.

        Raises:
            ValueError: If the dict is not a genome state (wrong format tag or missing field).
        """
        if not isinstance(state, Mapping) or state.get("format") != STATE_FORMAT:
            got = state.get("format") if isinstance(state, Mapping) else type(state).__name__
            raise ValueError(
                f"not a LoRAGenome state dict: format is {got!r}, expected {STATE_FORMAT!r}"
            )
        try:
            factors = {n: (p["A"], p["B"]) for n, p in state["factors"].items()}
            return cls(
                factors,
                rank=state["rank"],
                alpha=state["alpha"],
                base_model=state.get("base_model"),
            )
        except KeyError as err:
            raise ValueError(f"LoRAGenome state dict is missing field {err.args[0]!r}") from None

    # ------------------------------------------------------------------ PEFT I/O
    @classmethod
    def from_peft(cls, path: str | Path) -> LoRAGenome:
        """Read a PEFT LoRA folder (``adapter_config.json`` + ``adapter_model.safetensors``)."""
        from redqueen.genomes._peft_io import read_peft_folder

        return read_peft_folder(path, cls)

    def save_peft(self, path: str | Path, *, base_model: str | None = None) -> Path:
        """Write a PEFT LoRA folder that ``peft.PeftModel.from_pretrained`` loads.

        Args:
            path: Folder to create (parents too); existing adapter files in it are overwritten.
            base_model: Base model identity to record instead of :attr:`base_model`.

        Returns:
            The folder path.
        """
        from redqueen.genomes._peft_io import write_peft_folder

        return write_peft_folder(self, path, base_model=base_model)

    @classmethod
    def from_peft_model(cls, model: Any, adapter_name: str = "default") -> LoRAGenome:
        """Copy the factors of one adapter slot of a live ``PeftModel`` (no disk round trip)."""
        from redqueen.genomes._peft_io import extract_from_model

        return extract_from_model(model, cls, adapter_name)

    def load_into(self, peft_model: Any, adapter_name: str = "default") -> None:
        """Write this genome into an adapter slot of a live ``PeftModel`` (created if absent)."""
        from redqueen.genomes._peft_io import load_into_model

        load_into_model(self, peft_model, adapter_name)

    def __repr__(self) -> str:
        return (
            f"LoRAGenome(modules={len(self._factors)}, rank={self._rank}, alpha={self._alpha:g}, "
            f"params={self.num_parameters()}, dtype={self.dtype}, device={self.device}, base_model={self._base_model!r})"
        )
