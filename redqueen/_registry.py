"""A tiny name -> object registry used by every extension point.

Operators, selection schemes, environments, backends, presets and benchmark suites each keep
one :class:`Registry`. A plug-in is one decorated function or class::

    from redqueen.evo.selection import SELECTIONS

    @SELECTIONS.register("my_scheme")
    def my_scheme(individuals, k, *, rng):
        ...

``redqueen list`` prints every registry, so a plug-in shows up without touching core code.
``docs/writing-a-plugin.md`` has a complete example file for every kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")

#: Every registry ever created, by kind, for ``redqueen list``.
ALL_REGISTRIES: dict[str, Registry] = {}


class UnknownNameError(KeyError):
    """Raised when a registry is asked for a name it does not hold."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain.
        return str(self.args[0])


class Registry(Mapping[str, T], Generic[T]):
    """A named collection of plug-ins of one kind.

    Args:
        kind: What the registry holds, e.g. ``"mutation"``; used in error messages and listings.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        ALL_REGISTRIES[kind] = self

    def register(self, name: str | None = None, *, overwrite: bool = False) -> Callable[[T], T]:
        """Decorator that registers an object under ``name`` (default: its ``__name__``).

        Raises:
            ValueError: If the name is taken and ``overwrite`` is false.
        """

        def decorator(obj: T) -> T:
            key = name or getattr(obj, "__name__", None)
            if not key:
                raise ValueError(f"cannot infer a {self.kind} name for {obj!r}; pass one")
            if key in self._items and not overwrite:
                raise ValueError(f"{self.kind} {key!r} is already registered")
            self._items[key] = obj
            return obj

        return decorator

    def __getitem__(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise UnknownNameError(f"unknown {self.kind} {name!r} (known: {known})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def describe(self, name: str) -> str:
        """First line of the registered object's docstring, for listings."""
        doc = getattr(self._items[name], "__doc__", None) or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {sorted(self._items)})"
