"""A tiny name -> object registry used by every extension point.

Operators, selection schemes, environments, backends, presets and benchmark suites each keep
one :class:`Registry`. A plug-in is one decorated function or class::

    from redqueen.evo.selection import SELECTIONS

    @SELECTIONS.register("my_scheme")
    def my_scheme(individuals, k, *, rng):
        ...

An entry declares its parameters by its typed keyword-only arguments (ranges as
``Annotated[float, Field(gt=0)]``), or by a pydantic model given to ``register(params=...)``,
and what it needs from the run around it as :class:`Needs`::

    from redqueen import Needs

    @SELECTIONS.register("pareto_tournament", needs=Needs(min_objectives=2))
    def pareto_tournament(individuals, k, *, rng, tournsize: Annotated[int, Field(ge=2)] = 2):
        ...

:meth:`Registry.validate` checks a parameter mapping against an entry, so a configuration is
checked at load; ``redqueen list`` prints every registry with each entry's parameters, so a
plug-in shows up without touching core code.
``docs/writing-a-plugin.md`` has a complete example file for every kind.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from redqueen._params import (
    ParameterError,
    check_params,
    check_scalar_params,
    describe_params,
    signature_model,
    unknown_keywords,
)

__all__ = ["ALL_REGISTRIES", "Needs", "ParameterError", "Registry", "RunFacts", "UnknownNameError"]

T = TypeVar("T")

_ROLE = re.compile(r":\w+:`~?([^`]+)`")
#: A registry key: printable, no whitespace (``svd_merge``, ``game-ladder``, ``qwen2.5-coder-7b``).
_NAME = re.compile(r"[^\s\x00-\x1f\x7f]+")

#: Every registry ever created, by kind, for ``redqueen list``.
ALL_REGISTRIES: dict[str, Registry] = {}


class UnknownNameError(KeyError):
    """Raised when a registry is asked for a name it does not hold."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain.
        return str(self.args[0])


@dataclass(frozen=True)
class RunFacts:
    """Facts of a configured run that a parameter-aware need (:attr:`Needs.check`) can test
    when the configuration is loaded, before any run directory exists.

    Attributes:
        objectives: Fewest objectives any role that the scheme ranks or selects has.
        members: Smallest sub-population the scheme selects from.
    """

    objectives: int
    members: int


@dataclass(frozen=True)
class Needs:
    """What a registered entry needs from the run around it; the configuration is checked
    against it at load.

    Attributes:
        arity: ``(fewest, most)`` parents a variation operator takes (``most`` ``None``: any
            number); ``None`` for entries that are not operators.
        min_objectives: Objectives a selection scheme needs per role (2 for Pareto schemes).
        archive: The scheme keeps an archive across generations; the evolution loop keeps one
            per role: past behaviours handed in as the scheme's ``archive`` parameter when it
            takes one (novelty), else a grid of elites that becomes the parent pool (MAP-Elites).
        member_fields: Attributes every member must carry: ``rating``, ``cases`` (per-case
            outcomes), ``descriptor`` (behaviour descriptor).
        check: A requirement that depends on the entry's parameters: called at load with the
            parameters the run will use (declared defaults filled in) and the run's
            :class:`RunFacts`; returns ``None`` when they fit, else a one-line reason naming
            the parameter, e.g. ``"objective: 2 is not below the 2 objectives per role"``.
            Selection schemes' checks run at configuration load, before any run directory is
            made.
    """

    arity: tuple[int, int | None] | None = None
    min_objectives: int = 1
    archive: bool = False
    member_fields: tuple[str, ...] = ()
    check: Callable[[Mapping[str, object], RunFacts], str | None] | None = None

    def describe(self) -> str:
        """Plain text of the needs that differ from nothing-needed, e.g. ``2 parents``."""
        parts = []
        if self.arity is not None:
            low, high = self.arity
            count = f"{low}" if low == high else f"{low}+" if high is None else f"{low}-{high}"
            parts.append(f"{count} parent{'' if count == '1' else 's'}")
        if self.min_objectives > 1:
            parts.append(f">= {self.min_objectives} objectives")
        if self.archive:
            parts.append("an archive")
        parts += [f"member {name}" for name in self.member_fields]
        if self.check is not None:
            parts.append("a check of its parameters")
        return ", ".join(parts)


class Registry(Mapping[str, T], Generic[T]):
    """A named collection of plug-ins of one kind.

    Args:
        kind: What the registry holds, e.g. ``"mutation"``; used in error messages and listings.
        context: Keyword arguments the caller supplies to every entry (``rng``, ``weights``):
            part of the call, not parameters a user sets.
        needs: What an entry needs unless it declares otherwise (a mutation: one parent).
        typed: Whether entries' signatures declare parameters (``False`` for registries of
            data, e.g. presets).
        params_attr: Name of a class attribute holding each entry's pydantic parameter model
            (task domains keep theirs in ``settings_model``); read before the signature.
        guard: Wraps each entry as it is registered, ``guard(name, entry) -> entry``, so that a
            direct call of the entry checks its arguments as the registry's front door does
            (operators: parents and ``rng``; selection schemes: ``k`` and the population). The
            registry holds, and the decorator returns, the wrapped entry.
        callables: Entries are functions or classes (operators, plots, environments, ...):
            one that cannot be called is refused as it is registered, not when a run calls it.
    """

    def __init__(
        self,
        kind: str,
        *,
        context: Sequence[str] = (),
        needs: Needs | None = None,
        typed: bool = True,
        params_attr: str | None = None,
        guard: Callable[[str, T], T] | None = None,
        callables: bool = False,
    ) -> None:
        self.kind = kind
        self.callables = callables
        self._guard = guard
        self.context = tuple(context)
        self.typed = typed
        self.params_attr = params_attr
        self._default_needs = needs or Needs()
        self._items: dict[str, T] = {}
        self._declared: dict[str, type[BaseModel] | None] = {}
        self._models: dict[str, type[BaseModel] | None] = {}
        self._needs: dict[str, Needs] = {}
        ALL_REGISTRIES[kind] = self

    def register(
        self,
        name: str | None = None,
        *,
        params: type[BaseModel] | None = None,
        needs: Needs | None = None,
        overwrite: bool = False,
    ) -> Callable[[T], T]:
        """Decorator that registers an object under ``name`` (default: its ``__name__``).

        Args:
            name: Registry key: a non-empty string without whitespace (``svd_merge``,
                ``game-ladder``, ``qwen2.5-coder-7b``), as config files and ``--set`` name it.
            params: A pydantic model of the entry's parameters; default: read from the typed
                keyword-only arguments of the function (or the class's constructor).
            needs: What the entry needs (default: the registry's).
            overwrite: Replace an entry of the same name.

        Raises:
            TypeError: If ``name`` is not a string, or (in a registry of ``callables``) the
                object cannot be called.
            ValueError: If ``name`` is empty or holds whitespace, or is taken and ``overwrite``
                is false.
        """
        if name is not None:
            self._check_name(name)

        def decorator(obj: T) -> T:
            key = name if name is not None else getattr(obj, "__name__", None)
            if not key:
                raise ValueError(f"cannot infer a {self.kind} name for {obj!r}; pass one")
            self._check_name(key)
            if self.callables and not callable(obj):
                # Else the run that uses it fails mid-step with "'int' object is not callable".
                raise TypeError(
                    f"{self.kind} {key!r}: expected a function or class to register, "
                    f"got {type(obj).__name__}"
                )
            if key in self._items and not overwrite:
                raise ValueError(f"{self.kind} {key!r} is already registered")
            entry = self._guard(key, obj) if self._guard is not None else obj
            self._items[key] = entry
            self._models.pop(key, None)
            self._declared[key] = params
            self._needs[key] = needs or self._default_needs
            return entry

        return decorator

    def _check_name(self, name: object) -> None:
        """Refuse a registry key that a config file could not name."""
        if not isinstance(name, str):
            raise TypeError(
                f"{self.kind} name must be a string, got {type(name).__name__}: {name!r}"
            )
        if not _NAME.fullmatch(name):
            raise ValueError(
                f"{self.kind} name must be a non-empty string without whitespace, got {name!r}"
            )

    def params(self, name: str) -> type[BaseModel] | None:
        """The pydantic model of an entry's parameters (``None``: it takes none we can read).

        Raises:
            UnknownNameError: If no entry has this name.
        """
        obj = self[name]
        if name not in self._models:
            declared = self._declared.get(name)
            if declared is None and self.params_attr:
                declared = getattr(obj, self.params_attr, None)
            if declared is None and self.typed:
                declared = signature_model(obj, f"{self.kind}_{name}", self.context)
            self._models[name] = declared
        return self._models[name]

    def needs(self, name: str) -> Needs:
        """What an entry needs from the run around it.

        Raises:
            UnknownNameError: If no entry has this name.
        """
        self[name]
        return self._needs.get(name, self._default_needs)

    def validate(self, name: str, params: Mapping[str, object]) -> dict[str, Any]:
        """Check ``params`` for the entry ``name``; returns them with normalised values.

        Raises:
            UnknownNameError: If no entry has this name.
            ParameterError: A ``ValueError`` whose one-line message names the bad key and says
                what is wrong (``sigmaa: unknown parameter (known: fraction, sigma)``).
        """
        return check_params(self.params(name), params)

    def check_call(self, name: str, params: Mapping[str, object], *, where: str, positional: int) -> None:
        """The parameter check of a call from Python (``mutate``, ``crossover``, ``select``), worded
        as configuration loading words it: ``<where>: <key>: <problem>``.

        Plain values (numbers, strings, booleans) are checked against the declared types and
        ranges; other values (arrays, archives) are left to the entry.

        Args:
            name: The entry.
            params: Keyword parameters the caller passes.
            where: Prefix naming the call, e.g. ``mutation 'gaussian'``.
            positional: Leading arguments the caller fills by position (not parameters).

        Raises:
            UnknownNameError: If no entry has this name.
            TypeError: ``<where>: sigmaa: unknown parameter (known: fraction, sigma)``.
            ValueError: ``<where>: fraction: input should be greater than 0 (got 0)``.
        """
        obj = self[name]
        unknown, known = unknown_keywords(obj, params, positional=positional, context=self.context)
        declared = self._declared.get(name)
        if declared is not None and declared.model_config.get("extra") == "forbid":
            known = sorted(declared.model_fields)  # an entry taking ``**params`` declared by a model
            unknown = sorted(set(params) - set(known))
        if unknown:
            listed = ", ".join(known) or "none"
            raise TypeError(f"{where}: {unknown[0]}: unknown parameter (known: {listed})")
        if not params or not self.typed:
            return
        try:
            check_scalar_params(self.params(name), params)
        except ParameterError as error:
            raise ValueError(f"{where}: {error}") from None

    def effective_params(self, name: str, params: Mapping[str, object]) -> dict[str, object]:
        """``params`` with the entry's declared defaults filled in for the keys not given: the
        values a call really used (for records such as ``lineage.csv``).

        Raises:
            UnknownNameError: If no entry has this name.
        """
        model = self.params(name) if self.typed else None
        defaults: dict[str, object] = {}
        if model is not None:
            defaults = {key: field.default for key, field in model.model_fields.items() if not field.is_required()}
        return {**defaults, **params}

    def describe_params(self, name: str) -> list[str]:
        """An entry's parameters (``sigma: float = 0.1 (>= 0)``) and needs (``needs 2 parents``)
        as plain-text pieces, for listings."""
        params = describe_params(self.params(name)) if self.typed else []
        needs = self.needs(name).describe()
        return [*params, f"needs {needs}"] if needs else params

    def __getitem__(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise UnknownNameError(f"unknown {self.kind} {name!r} (known: {known})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def unregister(self, name: str) -> None:
        """Remove an entry and what it declared (e.g. a plug-in a test registered)."""
        self._items.pop(name, None)
        for table in (self._declared, self._models, self._needs):
            table.pop(name, None)

    def __len__(self) -> int:
        return len(self._items)

    def describe(self, name: str) -> str:
        """First line of the registered object's docstring as plain text, for listings
        (reST markup such as double backquotes and ``:class:`` roles removed)."""
        doc = getattr(self._items[name], "__doc__", None) or ""
        first = doc.strip().splitlines()[0] if doc.strip() else ""
        return _ROLE.sub(r"\1", first).replace("``", "")

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {sorted(self._items)})"
