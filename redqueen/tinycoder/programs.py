"""Typed random Python programs and inputs for the tiny-coder corpus.

:class:`ProgramGenerator` writes small functions ``f`` over ints, strings, lists of ints and
dicts of str -> int, built from a typed expression grammar (arithmetic, slicing, sorting,
comprehensions, conditionals) and statements (assignments, if/else, for and while loops, a
helper function). ``level`` (1 to :data:`MAX_LEVEL`) sets how much of that is used, so the
corpus spans a range of difficulty that an arms race can climb. Programs are built so that
they terminate quickly and stay small, but nothing here runs them: gold outputs come from the
sandboxed executor (see :mod:`redqueen.tinycoder.corpus`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from redqueen.tinycoder._grammar import LETTERS, ExpressionGrammar, Scope, bare

__all__ = ["MAX_LEVEL", "TYPES", "GeneratedProgram", "ProgramGenerator", "random_value"]

#: Value types a program works with: int, str, list of int, dict of str -> int (bool in tests).
TYPES: tuple[str, ...] = ("int", "str", "list", "dict")
#: Highest difficulty level.
MAX_LEVEL: int = 6

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


class ProgramGenerator(ExpressionGrammar):
    """Writes random, typed, terminating Python functions ``f``.

    Args:
        rng: Source of randomness (seed it for a reproducible corpus).

    Example::

        gen = ProgramGenerator(rng=random.Random(0))
        prog = gen.program(level=3)
        prog.source, prog.random_input(random.Random(1))
    """

    def __init__(self, *, rng: random.Random) -> None:
        self.rng = rng

    # ---------------------------------------------------------------- programs

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
        n_params = 1 if level <= 2 and rng.random() < 0.7 else rng.randint(1, 2 if level < 4 else 3)
        params: list[str] = []
        names: list[str] = []
        scope = Scope()
        for _ in range(n_params):
            kind = rng.choice(TYPES)
            name = next(n for n in _PARAM_NAMES[kind] if n not in scope.names)
            scope.names[name] = kind
            params.append(kind)
            names.append(name)
        lines: list[str] = []
        helper_src = ""
        if level >= 5 and rng.random() < 0.6:
            helper_src = self._helper(scope)
        n_statements = {
            1: 0,
            2: 0,
            3: 1,
            4: rng.randint(1, 2),
            5: rng.randint(2, 3),
            6: rng.randint(2, 4),
        }[level]
        for _ in range(n_statements):
            lines.extend(self._statement(scope, level))
        depth = 1 if level == 1 else 2
        if scope.recent and rng.random() < 0.8:
            ret_kind = scope.names[scope.recent[-1]]
        else:
            ret_kind = rng.choice(params if rng.random() < 0.5 else TYPES)
        lines.append(f"return {bare(self._expr(ret_kind, depth, scope))}")
        args = ", ".join(names)
        body = "\n".join("    " + line for chunk in lines for line in chunk.split("\n"))
        source = f"{helper_src}def f({args}):\n{body}"
        return GeneratedProgram(source=source, params=tuple(params), level=level)

    def _helper(self, scope: Scope) -> str:
        rng = self.rng
        arg_kind = rng.choice(("int", "str", "list"))
        inner = Scope(names={"v": arg_kind})
        ret_kind = rng.choice(("int", "int", "str", "list"))
        expr = bare(self._expr(ret_kind, 2, inner))
        scope.helper = (arg_kind, ret_kind)
        return f"def g(v):\n    return {expr}\n\n\n"

    def _statement(self, scope: Scope, level: int) -> list[str]:
        rng = self.rng
        kinds = ["assign", "assign", "if"]
        if level >= 4:
            kinds += ["for", "for", "if"]
        if level >= 5:
            kinds += ["while", "for"]
        if level >= 6:
            kinds += ["nested"]
        kind = rng.choice(kinds)
        depth = 1 if level <= 4 else 2
        if kind == "assign":
            target_kind = rng.choice(TYPES)
            expr = bare(self._expr(target_kind, depth, scope))
            name = self._define(scope, target_kind)
            return [f"{name} = {expr}"]
        if kind == "if":
            target_kind = rng.choice(TYPES)
            cond = bare(self._expr("bool", 1, scope))
            yes = bare(self._expr(target_kind, depth, scope))
            no = bare(self._expr(target_kind, depth, scope))
            name = self._define(scope, target_kind)
            return [f"if {cond}:\n    {name} = {yes}\nelse:\n    {name} = {no}"]
        if kind == "while":
            return [self._while(scope)]
        return [self._for(scope, nested=kind == "nested")]

    def _define(self, scope: Scope, kind: str) -> str:
        name = scope.fresh()
        scope.names[name] = kind
        scope.recent.append(name)
        return name

    def _iterable(self, scope: Scope) -> tuple[str, str]:
        """An iterable source and the type of its elements."""
        rng = self.rng
        choice = rng.random()
        if choice < 0.45:
            return self._expr("list", 0, scope), "int"
        if choice < 0.75:
            return self._expr("str", 0, scope), "str"
        if choice < 0.9:
            return f"range({rng.randint(1, 6)})", "int"
        d = self._expr("dict", 0, scope)
        return f"{d}.values()", "int"

    def _loop_body(self, scope: Scope, acc: str, acc_kind: str, item: str) -> str:
        rng = self.rng
        if acc_kind == "int":
            update = f"{acc} += {bare(self._expr('int', 1, scope))}"
        elif acc_kind == "str":
            # Never append the accumulator to itself: that doubles it every iteration.
            piece = item if scope.names.get(item) == "str" else f"str({item})"
            update = f"{acc} += {rng.choice([piece, self._char(), piece + '.upper()'])}"
        else:
            update = f"{acc}.append({bare(self._expr('int', 1, scope))})"
        if rng.random() < 0.5:
            cond = bare(self._expr("bool", 1, scope))
            return f"if {cond}:\n    {update}"
        return update

    def _for(self, scope: Scope, *, nested: bool) -> str:
        rng = self.rng
        source, item_kind = self._iterable(scope)
        acc_kind = rng.choice(("int", "int", "str", "list"))
        acc = self._define(scope, acc_kind)
        init = {"int": str(rng.randint(0, 2)), "str": "''", "list": "[]"}[acc_kind]
        item = "ch" if item_kind == "str" else "i"
        scope.names[item] = item_kind
        body_lines = []
        if nested:
            inner = "j" if item_kind == "int" else "e"
            scope.names[inner] = "int"
            body_lines.append(f"for {inner} in range({rng.randint(1, 3)}):")
            body_lines.extend(
                "    " + ln for ln in self._loop_body(scope, acc, acc_kind, item).split("\n")
            )
            del scope.names[inner]
        else:
            body_lines.extend(self._loop_body(scope, acc, acc_kind, item).split("\n"))
        del scope.names[item]
        body = "\n".join("    " + ln for ln in body_lines)
        return f"{acc} = {init}\nfor {item} in {source}:\n{body}"

    def _while(self, scope: Scope) -> str:
        rng = self.rng
        start = bare(self._expr("int", 0, scope))
        value = bare(self._expr("int", 0, scope))
        counter = self._define(scope, "int")
        acc = self._define(scope, "int")
        step = rng.choice(("+", "-", "*"))
        return (
            f"{counter} = abs({start}) % {rng.randint(3, 8)}\n{acc} = {rng.randint(0, 3)}\n"
            f"while {counter} > 0:\n    {acc} = {acc} {step} {value} % 7\n    {counter} -= 1"
        )

    # ---------------------------------------------------------------- expressions
