"""Operator registries, the two entry points, and small helpers shared by the operators."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, cast

import torch
from torch import Tensor

from redqueen._registry import Needs, Registry
from redqueen.genomes import LoRAGenome, check_generator, group_by_shape, lowrank_svd, split_factors


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


def _check_weights(weights: object, count: int, where: str) -> list[float]:
    try:
        values = [float(w) for w in weights]  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise TypeError(f"{where}: weights must be a sequence of numbers, got {weights!r}") from None
    if len(values) != count:
        raise ValueError(f"{where}: got {len(values)} weights for {count} parents")
    if not all(math.isfinite(w) for w in values):
        raise ValueError(f"{where}: weights must be finite numbers, got {values}")
    return values


def _parents_wanted(arity: tuple[int, int | None]) -> str:
    fewest, most = arity
    if fewest == most:
        return f"exactly {fewest}"
    return f"{fewest} or more" if most is None else f"{fewest} to {most}"


def _params_of(kwargs: Mapping[str, object], context: Sequence[str]) -> dict[str, object]:
    """The operator parameters among a call's keywords (not ``rng`` or ``weights``)."""
    return {key: value for key, value in kwargs.items() if key not in context}


def _signature_facts(operator: Callable[..., object]) -> tuple[str, bool]:
    """The name of ``operator``'s first parameter (the genome or the parents, so a call may pass
    it by keyword) and whether it declares ``rng=None`` (a deterministic one: ``svd_merge``)."""
    try:
        params = list(inspect.signature(operator).parameters.values())
    except (TypeError, ValueError):
        return "", False
    first = params[0].name if params and params[0].kind is not params[0].KEYWORD_ONLY else ""
    rng = next((p for p in params if p.name == "rng"), None)
    return first, rng is not None and rng.default is None


def _split_first(
    args: tuple[object, ...], kwargs: dict[str, object], name: str
) -> tuple[object, tuple[object, ...]]:
    """The call's first argument (by position, else by its keyword ``name``) and the other positionals."""
    if args:
        return args[0], args[1:]
    if name and name in kwargs:
        return kwargs.pop(name), ()
    return None, ()


def _guard_mutation(name: str, operator: Mutation) -> Mutation:
    """``operator`` checking the contract of :func:`mutate` on every call, a direct one too."""
    call: Callable[..., LoRAGenome] = getattr(operator, "__unguarded__", operator)
    where = f"mutation {name!r}"
    first, _ = _signature_facts(call)

    @functools.wraps(call)
    def checked(*args: object, **kwargs: object) -> LoRAGenome:
        genome, args = _split_first(args, kwargs, first)
        if not isinstance(genome, LoRAGenome):
            raise TypeError(f"{where}: genome must be a LoRAGenome, got {type(genome).__name__}")
        check_generator(kwargs.get("rng"), where)
        MUTATIONS.check_call(name, _params_of(kwargs, MUTATIONS.context), where=where, positional=1)
        _check_finite(genome, where)
        return _check_child(call(genome, *args, **kwargs), genome, where)

    checked.__unguarded__ = call  # type: ignore[attr-defined]
    return cast(Mutation, checked)


def _guard_crossover(name: str, operator: Crossover) -> Crossover:
    """``operator`` checking the contract of :func:`crossover` on every call, a direct one too."""
    call: Callable[..., LoRAGenome] = getattr(operator, "__unguarded__", operator)
    where = f"crossover {name!r}"
    first, rng_optional = _signature_facts(call)

    @functools.wraps(call)
    def checked(*args: object, **kwargs: object) -> LoRAGenome:
        given, args = _split_first(args, kwargs, first)
        if isinstance(given, (LoRAGenome, str)) or not isinstance(given, Iterable):
            raise TypeError(f"{where}: parents must be a non-empty sequence of LoRAGenome")
        parents = list(given)
        if not parents or not all(isinstance(p, LoRAGenome) for p in parents):
            raise TypeError(f"{where}: parents must be a non-empty sequence of LoRAGenome")
        arity = CROSSOVERS.needs(name).arity or (1, None)
        if len(parents) < arity[0] or (arity[1] is not None and len(parents) > arity[1]):
            raise ValueError(
                f"{where}: parents: needs {_parents_wanted(arity)} parents, got {len(parents)}"
            )
        if kwargs.get("rng") is not None or not rng_optional:
            check_generator(kwargs.get("rng"), where)
        CROSSOVERS.check_call(
            name, _params_of(kwargs, CROSSOVERS.context), where=where, positional=1
        )
        for other in parents[1:]:
            parents[0].check_compatible(other)
        for index, parent in enumerate(parents):
            _check_finite(parent, where, f"parent {index}")
        if kwargs.get("weights") is not None:
            kwargs["weights"] = _check_weights(kwargs["weights"], len(parents), where)
        return _check_child(call(parents, *args, **kwargs), parents[0], where)

    checked.__unguarded__ = call  # type: ignore[attr-defined]
    return cast(Crossover, checked)


#: Mutation operators by name; register a new one with ``@MUTATIONS.register("name")``. Every
#: entry checks the contract of :func:`mutate` on each call, a direct call included.
MUTATIONS: Registry[Mutation] = Registry(
    "mutation",
    context=("rng",),
    needs=Needs(arity=(1, 1)),
    guard=_guard_mutation,
    callables=True,
)
#: Crossover operators by name; register a new one with ``@CROSSOVERS.register("name")``. Every
#: entry checks the contract of :func:`crossover` on each call (the parent count its
#: ``Needs.arity`` allows included), a direct call too.
CROSSOVERS: Registry[Crossover] = Registry(
    "crossover",
    context=("rng", "weights"),
    needs=Needs(arity=(2, None)),
    guard=_guard_crossover,
    callables=True,
)


def mutate(name: str, genome: LoRAGenome, *, rng: torch.Generator, **params: float) -> LoRAGenome:
    """Apply the registered mutation ``name`` to ``genome``.

    Calling the entry ``MUTATIONS[name]`` directly checks the same contract.

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
    return MUTATIONS[name](genome, rng=rng, **params)


def crossover(
    name: str,
    parents: Sequence[LoRAGenome],
    *,
    weights: Sequence[float] | None = None,
    rng: torch.Generator,
    **params: float,
) -> LoRAGenome:
    """Combine ``parents`` with the registered crossover ``name``.

    Calling the entry ``CROSSOVERS[name]`` directly checks the same contract.

    Args:
        name: A key of :data:`CROSSOVERS`.
        parents: Genomes over the same modules and shapes; the child has the first one's rank and alpha.
        weights: One weight per parent (meaning depends on the operator; default: uniform).
        rng: Generator for all random draws; the same seed gives the same child.
        **params: Operator parameters (see each operator's docstring).

    Raises:
        UnknownNameError: If ``name`` is not registered.
        GenomeMismatchError: If the parents differ in modules, shapes or base model.
        TypeError: If ``parents`` is not a sequence of LoRAGenome, a parameter name is not the
            operator's, or ``rng`` not a torch.Generator.
        ValueError: If the number of parents is outside the operator's ``Needs.arity``
            (``parents: needs 2 or more parents, got 1``), the number of weights differs from
            the number of parents, a weight is not finite, a parameter is out of the type or
            range the operator declares, or a parent's or the child's factors are not finite.
    """
    return CROSSOVERS[name](parents, weights=weights, rng=rng, **params)


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
