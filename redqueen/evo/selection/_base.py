"""The selection registry, the :func:`select` front door and shared helpers."""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable, Iterable, Sequence, Sized
from typing import Protocol

import numpy as np
import torch

from redqueen._registry import Registry


class FitnessView(Protocol):
    """What a scheme reads of a member's DEAP-compatible fitness."""

    @property
    def valid(self) -> bool:
        """Whether the fitness holds values."""
        ...

    @property
    def wvalues(self) -> tuple[float, ...]:
        """The values times the weights (larger is better)."""
        ...


class Candidate(Protocol):
    """What every selection scheme reads of a member: a DEAP-compatible ``fitness`` (an
    :class:`redqueen.evo.Individual`, or a DEAP individual). A scheme that reads more declares it
    in ``Needs.member_fields`` and reads it by name (:func:`attribute_matrix`)."""

    @property
    def fitness(self) -> FitnessView:
        """The member's fitness."""
        ...


class RatedCandidate(Candidate, Protocol):
    """A candidate with an id and a ``(mu, sigma)`` rating (``rating_lcb``)."""

    @property
    def id(self) -> str:
        """The member's id."""
        ...

    @property
    def rating(self) -> tuple[float, float] | None:
        """Its ``(mu, sigma)``, or ``None`` until rated."""
        ...


def _numpy_rng(rng: object, where: str) -> np.random.Generator:
    """``rng`` as the numpy generator schemes draw from (one draw of a torch one seeds it)."""
    if isinstance(rng, torch.Generator):
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=rng)))
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{where}: rng must be a numpy.random.Generator or a torch.Generator, got {type(rng).__name__}"
        )
    return rng


def _check_k(k: object, where: str) -> int:
    try:
        count = operator.index(k)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{where}: k must be an integer, got {type(k).__name__}") from None
    if count < 0:
        raise ValueError(f"{where}: k must be >= 0, got {count}")
    return count


def _guard_scheme(name: str, scheme: Callable[..., list[int]]) -> Callable[..., list[int]]:
    """``scheme`` checking the contract of :func:`select` on every call, a direct one too."""
    scheme = getattr(scheme, "__unguarded__", scheme)
    where = f"select({name!r})"
    try:
        leading = [p.name for p in inspect.signature(scheme).parameters.values()][:2]
    except (TypeError, ValueError):
        leading = []

    @functools.wraps(scheme)
    def checked(*args: object, **kwargs: object) -> list[int]:
        given = list(args[:2]) + [kwargs.pop(n) for n in leading[len(args) :] if n in kwargs]
        if len(given) < 2:
            raise TypeError(f"{where}: takes (individuals, k, *, rng, **params)")
        individuals, k = given
        if not isinstance(individuals, Sized):
            raise TypeError(
                f"{where}: individuals must be a sequence, got {type(individuals).__name__}"
            )
        kwargs["rng"] = _numpy_rng(kwargs.get("rng"), where)
        params = {key: value for key, value in kwargs.items() if key not in SELECTIONS.context}
        SELECTIONS.check_call(name, params, where=where, positional=2)
        k = _check_k(k, where)
        if k == 0:
            return []
        if len(individuals) == 0:
            raise ValueError(f"{where}: cannot select {k} from an empty population")
        chosen = [int(i) for i in scheme(individuals, k, *args[2:], **kwargs)]
        if len(chosen) != k or any(not 0 <= i < len(individuals) for i in chosen):
            raise ValueError(
                f"selection {name!r} returned {chosen}, not {k} indices below {len(individuals)}"
            )
        return chosen

    checked.__unguarded__ = scheme  # type: ignore[attr-defined]
    return checked


#: ``fn(individuals, k, *, rng, **params) -> list[int]`` by name. Every entry checks the
#: contract of :func:`select` on each call, a direct call included.
SELECTIONS: Registry[Callable[..., list[int]]] = Registry(
    "selection", context=("rng",), guard=_guard_scheme, callables=True
)


def select(
    name: str,
    individuals: Sequence[Candidate],
    k: int,
    *,
    rng: np.random.Generator | torch.Generator,
    **params: object,
) -> list[int]:
    """Choose ``k`` members (indices into ``individuals``, repeats allowed) with a registered scheme.

    Calling the entry ``SELECTIONS[name]`` directly checks the same contract.

    Args:
        name: Registered scheme, e.g. ``"tournament"`` or ``"rating_lcb"``.
        individuals: Candidates (:class:`redqueen.evo.Individual` or anything with the fields
            the scheme reads: ``fitness``, ``rating``, ``cases``, ``descriptor``).
        k: How many to choose (0 chooses none, even from an empty population).
        rng: Source of every random choice, so a seed reproduces the selection: a
            ``numpy.random.Generator``, or the ``torch.Generator`` the operators take (one draw
            from it seeds a numpy generator).
        **params: Scheme parameters (``tournsize=3``, ``c=3.0``, ...).

    Raises:
        UnknownNameError: If no scheme has this name.
        ValueError: If ``k`` is negative, ``k`` members are asked of an empty population
            (``cannot select 3 from an empty population``), a parameter is out of its declared
            range, or the scheme misbehaves.
        TypeError: If ``k`` is not an integer, ``rng`` is neither generator, or a parameter
            name is not the scheme's.
    """
    return SELECTIONS[name](individuals, k, rng=rng, **params)


def weighted_values(individuals: Sequence[Candidate]) -> np.ndarray:
    """``(n, m)`` matrix of DEAP weighted fitness values (larger is better).

    Raises:
        ValueError: If a member's fitness is not valid or lengths differ.
    """
    rows = []
    for ind in individuals:
        fitness = getattr(ind, "fitness", None)  # a member that is not a candidate has none
        if fitness is None or not fitness.valid:
            raise ValueError(f"selection needs a valid fitness, member {getattr(ind, 'id', ind)!r} has none")
        rows.append(fitness.wvalues)
    if len({len(r) for r in rows}) > 1:
        raise ValueError("selection: members have fitness vectors of different lengths")
    return np.asarray(rows, dtype=float)


def attribute_matrix(individuals: Sequence[Candidate], attr: str) -> np.ndarray:
    """``(n, d)`` matrix of a per-member array attribute (``cases`` or ``descriptor``).

    Raises:
        ValueError: If a member lacks it or shapes differ.
    """
    rows = []
    for ind in individuals:
        value = getattr(ind, attr, None)
        if value is None:
            raise ValueError(f"selection needs {attr!r}; member {getattr(ind, 'id', ind)!r} has none")
        rows.append(np.ravel(np.asarray(value, dtype=float)))
    if len({r.shape for r in rows}) > 1:
        raise ValueError(f"selection: members have {attr!r} of different lengths")
    return np.vstack(rows)


def best_first(keys: np.ndarray) -> np.ndarray:
    """Indices sorted best first by rows of ``keys`` compared lexicographically; ties keep order."""
    keys = np.asarray(keys, dtype=float)
    if keys.ndim == 1:
        keys = keys[:, None]
    # np.lexsort sorts by the last key first and ascending; negate for descending.
    return np.lexsort(tuple(-keys[:, j] for j in reversed(range(keys.shape[1]))))


def cycle(order: Iterable[int], k: int) -> list[int]:
    """The first ``k`` entries of ``order`` repeated as often as needed."""
    entries = list(order)
    return [entries[i % len(entries)] for i in range(k)]
