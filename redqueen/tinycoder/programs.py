"""Typed random Python programs and inputs for the tiny-coder corpus.

:class:`ProgramGenerator` writes small functions ``f`` over ints, strings, lists of ints and
dicts of str -> int, built from a typed expression grammar (arithmetic, slicing, sorting,
comprehensions, conditionals, builtins and string/list/dict idioms) and statements
(assignments, if/else, early returns, for and while loops, dict tallies), with helper functions
(plain, with statements, nested inside ``f``, or recursive with a bounded depth). ``level``
(1 to :data:`MAX_LEVEL`) sets how much of that is used and how deep: each level adds statements,
kinds of statement and helpers, so the corpus spans a ladder of difficulty that an arms race
can climb; :data:`TRAIN_LEVELS` go into pretraining and :data:`OOD_LEVEL` is held out whole.
Programs are built so that they terminate quickly and stay small, but nothing here runs them:
gold outputs come from the sandboxed executor (see :mod:`redqueen.tinycoder.corpus`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from redqueen.tinycoder._grammar import LETTERS, Helper, Scope, bare
from redqueen.tinycoder._statements import StatementGrammar, indent

__all__ = [
    "MAX_LEVEL",
    "OOD_LEVEL",
    "TRAIN_LEVELS",
    "TYPES",
    "GeneratedProgram",
    "ProgramGenerator",
    "random_value",
]

#: Value types a program works with: int, str, list of int, dict of str -> int (bool in tests).
TYPES: tuple[str, ...] = ("int", "str", "list", "dict")
#: Highest difficulty level.
MAX_LEVEL: int = 8
#: The out-of-distribution level: harder than anything pretraining sees, kept for evaluation.
OOD_LEVEL: int = MAX_LEVEL
#: Levels pretraining draws from.
TRAIN_LEVELS: tuple[int, ...] = tuple(range(1, OOD_LEVEL))

# Per level: (statements low, high), expression depth in statements, chance of each helper kind.
_LEVELS: dict[int, tuple[tuple[int, int], int, dict[str, float]]] = {
    1: ((0, 0), 1, {}),
    2: ((0, 0), 2, {}),
    3: ((1, 1), 1, {}),
    4: ((1, 2), 1, {}),
    5: ((2, 3), 2, {"plain": 0.5}),
    6: ((2, 4), 2, {"plain": 0.4, "recursive": 0.3}),
    7: ((3, 5), 2, {"plain": 0.4, "block": 0.4, "recursive": 0.4, "nested": 0.3}),
    8: ((5, 7), 2, {"plain": 0.5, "block": 0.5, "recursive": 0.6, "nested": 0.5}),
}
_HELPER_NAMES = ("g", "h", "step", "walk")

_PARAM_NAMES = {
    "int": ["x", "y", "n"],
    "str": ["s", "t", "w"],
    "list": ["xs", "ys", "zs"],
    "dict": ["d", "dt", "dm"],
}


def random_value(kind: str, rng: random.Random) -> str:
    """A small random value of ``kind`` as Python source (its ``repr``)."""
    if kind == "int":
        return repr(rng.randint(-5, 15))
    if kind == "str":
        return repr("".join(rng.choice(LETTERS) for _ in range(rng.randint(0, 6))))
    if kind == "list":
        return repr([rng.randint(-5, 9) for _ in range(rng.randint(0, 6))])
    if kind == "dict":
        keys = rng.sample(LETTERS, rng.randint(1, 4))
        return repr({key: rng.randint(0, 9) for key in keys})
    raise ValueError(f"random_value: unknown type {kind!r} (known: {', '.join(TYPES)})")


@dataclass(frozen=True)
class GeneratedProgram:
    """A generated program with its signature.

    Args:
        source: Python source defining ``f`` (and possibly a helper ``g``).
        params: Parameter types of ``f``, in order.
        level: The difficulty level it was generated at.
    """

    source: str
    params: tuple[str, ...]
    level: int

    def random_input(self, rng: random.Random) -> str:
        """A random argument list for ``f`` as written inside ``f(...)``."""
        return ", ".join(random_value(kind, rng) for kind in self.params)


class ProgramGenerator(StatementGrammar):
    """Writes random, typed, terminating Python functions ``f``.

    Args:
        rng: Source of randomness (seed it for a reproducible corpus).

    Example::

        gen = ProgramGenerator(rng=random.Random(0))
        prog = gen.program(level=3)
        prog.source, prog.random_input(random.Random(1))
    """

    def program(self, level: int) -> GeneratedProgram:
        """One random program at difficulty ``level`` (1 = one-line expression).

        Raises:
            ValueError: If ``level`` is outside 1..MAX_LEVEL.
        """
        if not 1 <= level <= MAX_LEVEL:
            raise ValueError(
                f"ProgramGenerator.program: level must be in 1..{MAX_LEVEL}, got {level}"
            )
        rng = self.rng
        (low, high), depth, helper_odds = _LEVELS[level]
        if level <= 2:
            n_params = 1 if rng.random() < 0.7 else 2
        else:
            n_params = rng.randint(1, 2 if level < 5 else 3)
        params: list[str] = []
        names: list[str] = []
        scope = Scope()
        for _ in range(n_params):
            kind = rng.choice(TYPES)
            name = next(n for n in _PARAM_NAMES[kind] if n not in scope.names)
            scope.names[name] = kind
            params.append(kind)
            names.append(name)
        returns = rng.choice(TYPES)
        helpers: list[str] = []
        body: list[str] = []
        for kind in ("plain", "block", "recursive"):
            if rng.random() < helper_odds.get(kind, 0.0):
                helpers.append(self._helper(scope, kind))
        if rng.random() < helper_odds.get("nested", 0.0):
            body.append(self._helper(scope, "nested"))
        for _ in range(rng.randint(low, high)):
            body.append(self._statement(scope, level, returns, depth))
        final_depth = 1 if level == 1 else 2
        body.append(f"return {bare(self._expr(returns, final_depth, scope))}")
        source = "".join(h + "\n\n\n" for h in helpers)
        source += f"def f({', '.join(names)}):\n" + "\n".join(indent(chunk) for chunk in body)
        return GeneratedProgram(source=source, params=tuple(params), level=level)

    def _helper(self, scope: Scope, kind: str) -> str:
        """A helper function definition; registers it in ``scope`` so that bodies call it."""
        rng = self.rng
        name = _HELPER_NAMES[len(scope.helpers)]
        arg_kind = rng.choice(("int", "str", "list"))
        if kind == "recursive":
            # Depth first, bounded by the call site (``abs(...) % k``), so recursion stays shallow.
            inner = Scope(names={"n": "int", "v": arg_kind}, helpers=list(scope.helpers))
            helper = Helper(name, ("int", arg_kind), arg_kind, recursive=True)
            inner.names["r"] = arg_kind
            inner.recent.append("r")
            step = bare(self._expr(arg_kind, 1, inner))
            scope.helpers.append(helper)
            return (
                f"def {name}(n, v):\n    if n <= 0:\n        return v\n"
                f"    r = {name}(n - 1, v)\n    return {step}"
            )
        returns = rng.choice(("int", "int", "str", "list"))
        # A nested helper sees f's parameters; a top-level one only its own.
        outer = dict(scope.names) if kind == "nested" else {}
        inner = Scope(names={**outer, "v": arg_kind}, helpers=list(scope.helpers))
        lines = []
        if kind == "block":
            lines.append(self._statement(inner, 4, returns, 1))
        lines.append(f"return {bare(self._expr(returns, 2, inner))}")
        scope.helpers.append(Helper(name, (arg_kind,), returns))
        return f"def {name}(v):\n" + "\n".join(indent(line) for line in lines)
