"""Operator registries, the two entry points, and small helpers shared by the operators."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

import torch
from torch import Tensor

from redqueen._registry import Needs, Registry
from redqueen.genomes import LoRAGenome, group_by_shape, lowrank_svd, split_factors


class Mutation(Protocol):
    """A mutation: ``(genome, *, rng, **params) -> child`` with the genome's rank and alpha.

    The protocol names only the arguments every mutation takes; each operator adds its own
    keyword parameters with defaults, which :func:`mutate` passes through.
    """

    def __call__(self, genome: LoRAGenome, *, rng: torch.Generator) -> LoRAGenome: ...


class Crossover(Protocol):
    """A crossover: ``(parents, *, weights, rng, **params) -> child`` with the first parent's rank and alpha.

    The protocol names only the arguments every crossover takes; each operator adds its own
    keyword parameters with defaults, which :func:`crossover` passes through.
    """

    def __call__(
        self,
        parents: Sequence[LoRAGenome],
        *,
        weights: Sequence[float] | None,
        rng: torch.Generator,
    ) -> LoRAGenome: ...


#: Mutation operators by name; register a new one with ``@MUTATIONS.register("name")``.
MUTATIONS: Registry[Mutation] = Registry("mutation", context=("rng",), needs=Needs(arity=(1, 1)))
#: Crossover operators by name; register a new one with ``@CROSSOVERS.register("name")``.
CROSSOVERS: Registry[Crossover] = Registry(
    "crossover", context=("rng", "weights"), needs=Needs(arity=(2, None))
)


def _check_rng(rng: object, where: str) -> None:
    if not isinstance(rng, torch.Generator):
        raise TypeError(
            f"{where}: rng must be a torch.Generator (e.g. torch.Generator().manual_seed(0)), got {type(rng).__name__}"
        )


def _check_finite(parent: LoRAGenome, where: str, label: str = "genome") -> None:
    if parent.is_finite():
        return
    bad = [n for n, (a, b) in parent.items() if not (torch.isfinite(a).all() and torch.isfinite(b).all())]
    if bad:
        listed = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise ValueError(f"{where}: the {label} has non-finite factors (nan or inf) in {listed}")


def _check_child(child: object, parent: LoRAGenome, where: str) -> LoRAGenome:
    if not isinstance(child, LoRAGenome):
        raise TypeError(f"{where} returned {type(child).__name__}, expected a LoRAGenome")
    if child.rank != parent.rank or child.alpha != parent.alpha:
        raise ValueError(
            f"{where} returned rank {child.rank}, alpha {child.alpha:g}; operators must keep the "
            f"first parent's rank {parent.rank} and alpha {parent.alpha:g}"
        )
    _check_finite(child, where, "child it returned")
    return child


def mutate(name: str, genome: LoRAGenome, *, rng: torch.Generator, **params: float) -> LoRAGenome:
    """Apply the registered mutation ``name`` to ``genome``.

    Args:
        name: A key of :data:`MUTATIONS`.
        genome: The parent; it is not modified.
        rng: Generator for all random draws; the same seed gives the same child.
        **params: Operator parameters (see each operator's docstring).

    Raises:
        UnknownNameError: If ``name`` is not registered (the message lists the known names).
        TypeError: If ``genome`` is not a LoRAGenome, ``rng`` not a torch.Generator, or a
            parameter name is not the operator's.
        ValueError: If a parameter is out of the type or range the operator declares (the
            message is worded as configuration loading words it:
            ``mutation 'gaussian': fraction: ...``), the parent's or the child's factors are
            not finite, or the operator broke the rank/alpha contract.
    """
    operator = MUTATIONS[name]
    where = f"mutation {name!r}"
    if not isinstance(genome, LoRAGenome):
        raise TypeError(f"{where}: genome must be a LoRAGenome, got {type(genome).__name__}")
    _check_rng(rng, where)
    MUTATIONS.check_call(name, params, where=where, positional=1)
    _check_finite(genome, where)
    return _check_child(operator(genome, rng=rng, **params), genome, where)


def crossover(
    name: str,
    parents: Sequence[LoRAGenome],
    *,
    weights: Sequence[float] | None = None,
    rng: torch.Generator,
    **params: float,
) -> LoRAGenome:
    """Combine ``parents`` with the registered crossover ``name``.

    Args:
        name: A key of :data:`CROSSOVERS`.
        parents: Genomes over the same modules and shapes; the child has the first one's rank and alpha.
        weights: One weight per parent (meaning depends on the operator; default: uniform).
        rng: Generator for all random draws; the same seed gives the same child.
        **params: Operator parameters (see each operator's docstring).

    Raises:
        UnknownNameError: If ``name`` is not registered.
        GenomeMismatchError: If the parents differ in modules, shapes or base model.
        TypeError: If a parameter name is not the operator's, or ``rng`` not a torch.Generator.
        ValueError: If the number of weights differs from the number of parents, a weight is
            not finite, a parameter is out of the type or range the operator declares, or a
            parent's or the child's factors are not finite.
    """
    operator = CROSSOVERS[name]
    where = f"crossover {name!r}"
    parents = list(parents)
    if not parents or not all(isinstance(p, LoRAGenome) for p in parents):
        raise TypeError(f"{where}: parents must be a non-empty sequence of LoRAGenome")
    _check_rng(rng, where)
    CROSSOVERS.check_call(name, params, where=where, positional=1)
    for other in parents[1:]:
        parents[0].check_compatible(other)
    for index, parent in enumerate(parents):
        _check_finite(parent, where, f"parent {index}")
    if weights is not None:
        weights = [float(w) for w in weights]
        if len(weights) != len(parents):
            raise ValueError(f"{where}: got {len(weights)} weights for {len(parents)} parents")
        if not all(math.isfinite(w) for w in weights):
            raise ValueError(f"{where}: weights must be finite numbers, got {weights}")
    return _check_child(operator(parents, weights=weights, rng=rng, **params), parents[0], where)


# ---------------------------------------------------------------------- helpers for operators
def check_range(
    where: str, param: str, value: float, low: float, high: float, *, low_open: bool = False
) -> float:
    """Return ``value`` as float, or raise a ValueError naming the operator and parameter."""
    value = float(value)
    ok = (value > low if low_open else value >= low) and value <= high
    if not ok:
        bracket = "(" if low_open else "["
        raise ValueError(f"{where}: {param} must be in {bracket}{low:g}, {high:g}], got {value:g}")
    return value


def randn(shape: Sequence[int], rng: torch.Generator, like: Tensor) -> Tensor:
    """Standard normal noise drawn on the generator's device, then moved to ``like``'s device and dtype."""
    return torch.randn(tuple(shape), generator=rng, device=rng.device).to(like.device, like.dtype)


def rand(shape: Sequence[int], rng: torch.Generator, device: torch.device) -> Tensor:
    """Uniform [0, 1) draws on the generator's device, moved to ``device`` (float32)."""
    return torch.rand(tuple(shape), generator=rng, device=rng.device).to(device)


def choose_modules(genome: LoRAGenome, fraction: float, rng: torch.Generator) -> set[str]:
    """A random subset of ``max(1, round(fraction * n))`` module names."""
    names = genome.modules
    count = max(1, round(fraction * len(names)))
    order = torch.randperm(len(names), generator=rng, device=rng.device).tolist()
    return {names[i] for i in order[:count]}


def better_parent(weights: Sequence[float] | None, count: int) -> int:
    """Index of the parent with the largest weight (the first one when weights are None or tied)."""
    if weights is None:
        return 0
    return max(range(count), key=lambda i: weights[i])


SvdEdit = Callable[[list[str], Tensor, Tensor, Tensor], tuple[Tensor, Tensor, Tensor]]


def edit_spectrum(genome: LoRAGenome, edit: SvdEdit, modules: set[str] | None = None) -> LoRAGenome:
    """Child whose modules have SVD ``edit(names, U, S, V)`` of the parent's (batched by shape).

    Modules outside ``modules`` (when given) keep the parent's factors untouched.
    """
    factors = dict(genome.items())
    for names in group_by_shape(genome.shapes).values():
        names = [n for n in names if modules is None or n in modules]
        if not names:
            continue
        b = torch.stack([genome.factors(n)[1] for n in names]) * genome.scaling
        a = torch.stack([genome.factors(n)[0] for n in names])
        u, s, v = edit(names, *lowrank_svd(b, a))
        new_a, new_b = split_factors(
            u, s, v, rank=genome.rank, scaling=genome.scaling, dtype=genome.dtype
        )
        factors.update({n: (new_a[i], new_b[i]) for i, n in enumerate(names)})
    return genome.replace(factors)


def refit(
    a: Tensor, b: Tensor, *, scaling: float, rank: int, new_scaling: float, dtype: torch.dtype
) -> tuple[Tensor, Tensor]:
    """Factors of the same update ``scaling * b @ a`` at another rank/scaling (padded or truncated)."""
    if a.shape[-2] == rank:
        return a.to(dtype), (b * (scaling / new_scaling)).to(dtype)
    u, s, v = lowrank_svd(b * scaling, a, rank=rank)
    return split_factors(u, s, v, rank=rank, scaling=new_scaling, dtype=dtype)
