"""Typed random Python programs and inputs for the tiny-coder corpus.

:class:`ProgramGenerator` writes small functions ``f`` over ints, strings, lists of ints and
dicts of str -> int, built from a typed expression grammar (arithmetic, slicing, sorting,
comprehensions, conditionals) and statements (assignments, if/else, for and while loops, a
helper function). ``level`` (1 to :data:`MAX_LEVEL`) sets how much of that is used, so the
corpus spans a range of difficulty that an arms race can climb. Programs are built so that
they terminate quickly and stay small, but nothing here runs them: gold outputs come from the
sandboxed executor (see :mod:`redqueen.engine.tinycoder.corpus`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

__all__ = ["MAX_LEVEL", "TYPES", "GeneratedProgram", "ProgramGenerator", "random_value"]

#: Value types a program works with: int, str, list of int, dict of str -> int (bool in tests).
TYPES: tuple[str, ...] = ("int", "str", "list", "dict")
#: Highest difficulty level.
MAX_LEVEL: int = 6

_LETTERS = "abcde"
_PARAM_NAMES = {
    "int": ["x", "y", "n"],
    "str": ["s", "t", "w"],
    "list": ["xs", "ys", "zs"],
    "dict": ["d", "dt", "dm"],
}
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_LOCAL_NAMES = ["a", "b", "c", "k", "m", "r", "v", "z", "p", "q", "u"]


def random_value(kind: str, rng: random.Random) -> str:
    """A small random value of ``kind`` as Python source (its ``repr``)."""
    if kind == "int":
        return repr(rng.randint(-5, 15))
    if kind == "str":
        return repr("".join(rng.choice(_LETTERS) for _ in range(rng.randint(0, 6))))
    if kind == "list":
        return repr([rng.randint(-5, 9) for _ in range(rng.randint(0, 6))])
    if kind == "dict":
        keys = rng.sample(_LETTERS, rng.randint(1, 4))
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


@dataclass
class _Scope:
    names: dict[str, str] = field(default_factory=dict)  # name -> type
    recent: list[str] = field(default_factory=list)  # locals, newest last
    helper: tuple[str, str] | None = None  # (param type, return type) of g

    def of(self, kind: str) -> list[str]:
        return [n for n, k in self.names.items() if k == kind]

    def fresh(self) -> str:
        for name in _LOCAL_NAMES:
            if name not in self.names:
                return name
        return f"v{len(self.names)}"


class ProgramGenerator:
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
        scope = _Scope()
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
        lines.append(f"return {_bare(self._expr(ret_kind, depth, scope))}")
        args = ", ".join(names)
        body = "\n".join("    " + line for chunk in lines for line in chunk.split("\n"))
        source = f"{helper_src}def f({args}):\n{body}"
        return GeneratedProgram(source=source, params=tuple(params), level=level)

    def _helper(self, scope: _Scope) -> str:
        rng = self.rng
        arg_kind = rng.choice(("int", "str", "list"))
        inner = _Scope(names={"v": arg_kind})
        ret_kind = rng.choice(("int", "int", "str", "list"))
        expr = _bare(self._expr(ret_kind, 2, inner))
        scope.helper = (arg_kind, ret_kind)
        return f"def g(v):\n    return {expr}\n\n\n"

    def _statement(self, scope: _Scope, level: int) -> list[str]:
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
            expr = _bare(self._expr(target_kind, depth, scope))
            name = self._define(scope, target_kind)
            return [f"{name} = {expr}"]
        if kind == "if":
            target_kind = rng.choice(TYPES)
            cond = _bare(self._expr("bool", 1, scope))
            yes = _bare(self._expr(target_kind, depth, scope))
            no = _bare(self._expr(target_kind, depth, scope))
            name = self._define(scope, target_kind)
            return [f"if {cond}:\n    {name} = {yes}\nelse:\n    {name} = {no}"]
        if kind == "while":
            return [self._while(scope)]
        return [self._for(scope, nested=kind == "nested")]

    def _define(self, scope: _Scope, kind: str) -> str:
        name = scope.fresh()
        scope.names[name] = kind
        scope.recent.append(name)
        return name

    def _iterable(self, scope: _Scope) -> tuple[str, str]:
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

    def _loop_body(self, scope: _Scope, acc: str, acc_kind: str, item: str) -> str:
        rng = self.rng
        if acc_kind == "int":
            update = f"{acc} += {_bare(self._expr('int', 1, scope))}"
        elif acc_kind == "str":
            # Never append the accumulator to itself: that doubles it every iteration.
            piece = item if scope.names.get(item) == "str" else f"str({item})"
            update = f"{acc} += {rng.choice([piece, self._char(), piece + '.upper()'])}"
        else:
            update = f"{acc}.append({_bare(self._expr('int', 1, scope))})"
        if rng.random() < 0.5:
            cond = _bare(self._expr("bool", 1, scope))
            return f"if {cond}:\n    {update}"
        return update

    def _for(self, scope: _Scope, *, nested: bool) -> str:
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

    def _while(self, scope: _Scope) -> str:
        rng = self.rng
        start = _bare(self._expr("int", 0, scope))
        value = _bare(self._expr("int", 0, scope))
        counter = self._define(scope, "int")
        acc = self._define(scope, "int")
        step = rng.choice(("+", "-", "*"))
        return (
            f"{counter} = abs({start}) % {rng.randint(3, 8)}\n{acc} = {rng.randint(0, 3)}\n"
            f"while {counter} > 0:\n    {acc} = {acc} {step} {value} % 7\n    {counter} -= 1"
        )

    # ---------------------------------------------------------------- expressions

    def _atom(self, kind: str, scope: _Scope) -> str:
        rng = self.rng
        names = scope.of(kind)
        recent = [n for n in scope.recent if scope.names.get(n) == kind]
        if recent and rng.random() < 0.6:
            return recent[-1] if rng.random() < 0.6 else rng.choice(recent)
        if names and rng.random() < 0.9:
            return rng.choice(names)
        if not names and rng.random() < 0.8:
            derived = self._derive(kind, scope)
            if derived is not None:
                return derived
        return self._const(kind)

    def _derive(self, kind: str, scope: _Scope) -> str | None:
        """A value of ``kind`` read from a variable of another type (constants make dull programs)."""
        ways = {
            "int": {"str": "len({})", "list": "sum({})", "dict": "len({})"},
            "str": {"int": "str({})", "list": "''.join(str(i) for i in {})", "dict": "''.join({})"},
            "list": {
                "int": "list(range(abs({}) % 6))",
                "str": "[ord(ch) - 96 for ch in {}]",
                "dict": "sorted({}.values())",
            },
            "dict": {
                "str": "{{ch: {0}.count(ch) for ch in {0}}}",
                "list": "dict(zip('abcde', {}))",
                "int": "{{'a': {}}}",
            },
        }.get(kind, {})
        options = [(name, other) for name, other in scope.names.items() if other in ways]
        if not options:
            return None
        name, other = self.rng.choice(options)
        return ways[other].format(name)

    def _const(self, kind: str) -> str:
        rng = self.rng
        if kind == "int":
            return str(rng.randint(0, 9))
        if kind == "str":
            return repr("".join(rng.choice(_LETTERS) for _ in range(rng.randint(1, 3))))
        if kind == "list":
            return repr([rng.randint(0, 9) for _ in range(rng.randint(1, 4))])
        if kind == "dict":
            return repr({key: rng.randint(0, 9) for key in rng.sample(_LETTERS, 2)})
        return rng.choice(("True", "False"))

    def _char(self) -> str:
        return repr(self.rng.choice(_LETTERS))

    def _expr(self, kind: str, depth: int, scope: _Scope) -> str:
        if depth <= 0 and kind != "bool":
            return self._atom(kind, scope)
        return getattr(self, f"_expr_{kind}")(max(depth - 1, 0), scope)

    def _expr_int(self, d: int, scope: _Scope) -> str:
        rng, e = self.rng, self._expr
        options = [
            lambda: f"({e('int', d, scope)} {rng.choice('+-*')} {e('int', d, scope)})",
            lambda: f"({e('int', d, scope)} {rng.choice(['//', '%'])} {rng.randint(2, 5)})",
            lambda: f"abs({_bare(e('int', d, scope))})",
            lambda: (
                f"{rng.choice(['max', 'min'])}({_bare(e('int', d, scope))}, {_bare(e('int', d, scope))})"
            ),
            lambda: f"len({e(rng.choice(['str', 'list', 'dict']), d, scope)})",
            lambda: f"sum({e('list', d, scope)})",
            lambda: (
                f"{rng.choice(['max', 'min'])}({e('list', d, scope)}, default={rng.randint(0, 3)})"
            ),
            lambda: f"{e('str', d, scope)}.count({self._char()})",
            lambda: f"{e('str', d, scope)}.find({self._char()})",
            lambda: f"{e('dict', d, scope)}.get({self._char()}, {rng.randint(0, 3)})",
            lambda: f"sum({e('dict', d, scope)}.values())",
            lambda: (
                f"({e('int', d, scope)} if {_bare(e('bool', d, scope))} else {e('int', d, scope)})"
            ),
            lambda: self._atom("int", scope),
        ]
        lists = scope.of("list")
        if lists:
            v = rng.choice(lists)
            options.append(
                lambda: f"({v}[{e('int', d, scope)} % len({v})] if {v} else {rng.randint(0, 3)})"
            )
        return self._pick(options, scope, "int", d)

    def _expr_str(self, d: int, scope: _Scope) -> str:
        rng, e = self.rng, self._expr
        options = [
            lambda: f"({e('str', d, scope)} + {e('str', d, scope)})",
            lambda: (
                f"{e('str', d, scope)}[{rng.choice(['::-1', '1:', ':2', '::2', '-2:', '1:3'])}]"
            ),
            lambda: f"{e('str', d, scope)}.{rng.choice(['upper', 'lower', 'strip', 'title'])}()",
            lambda: f"{e('str', d, scope)}.replace({self._char()}, {self._char()})",
            lambda: f"''.join(sorted({e('str', d, scope)}))",
            lambda: f"({self._atom('str', scope)} * {rng.randint(2, 3)})",
            lambda: f"str({_bare(e('int', d, scope))})",
            lambda: (
                f"{repr(rng.choice(['-', ',', '']))}.join(str(i) for i in {e('list', d, scope)})"
            ),
            lambda: f"''.join({e('dict', d, scope)})",
            lambda: (
                f"({e('str', d, scope)} if {_bare(e('bool', d, scope))} else {e('str', d, scope)})"
            ),
            lambda: self._atom("str", scope),
        ]
        return self._pick(options, scope, "str", d)

    def _expr_list(self, d: int, scope: _Scope) -> str:
        rng, e = self.rng, self._expr

        def comprehension() -> str:
            src = e("list", d, scope)
            item = _bind(scope, "int", ("i", "j", "h", "y2"))
            body = _bare(e("int", d, scope))
            cond = _bare(e("bool", d, scope)) if rng.random() < 0.4 else None
            del scope.names[item]
            tail = f" if {cond}" if cond else ""
            return f"[{body} for {item} in {src}{tail}]"

        def filtered() -> str:
            src = e("list", d, scope)
            item = _bind(scope, "int", ("i", "j", "h", "y2"))
            cond = _bare(e("bool", d, scope))
            del scope.names[item]
            return f"[{item} for {item} in {src} if {cond}]"

        options = [
            lambda: f"sorted({e('list', d, scope)}{rng.choice(['', ', reverse=True'])})",
            lambda: f"{e('list', d, scope)}[{rng.choice(['::-1', '1:', ':3', '::2', '-2:'])}]",
            lambda: f"({e('list', d, scope)} + {e('list', d, scope)})",
            comprehension,
            filtered,
            lambda: f"[ord(ch) - 96 for ch in {e('str', d, scope)}]",
            lambda: f"list(range({rng.randint(1, 5)}))",
            lambda: f"sorted({e('dict', d, scope)}.values())",
            lambda: f"[len(w) for w in {e('str', d, scope)}.split({self._char()})]",
            lambda: self._atom("list", scope),
        ]
        return self._pick(options, scope, "list", d)

    def _expr_dict(self, d: int, scope: _Scope) -> str:
        rng, e = self.rng, self._expr

        def counts() -> str:
            src = e("str", d, scope)
            return (
                f"{{ch: {src}.count(ch) for ch in {src}}}"
                if src.isidentifier()
                else self._atom("dict", scope)
            )

        def mapped() -> str:
            src = e("dict", d, scope)
            val = _bind(scope, "int", ("val", "num", "cnt"))
            body = _bare(e("int", d, scope))
            del scope.names[val]
            return f"{{key: {body} for key, {val} in {src}.items()}}"

        options = [
            counts,
            mapped,
            lambda: f"dict(zip({e('str', d, scope)}, {e('list', d, scope)}))",
            lambda: (
                f"{{key: val for key, val in {e('dict', d, scope)}.items() if val {rng.choice(['>', '<', '!='])} {rng.randint(0, 5)}}}"
            ),
            lambda: self._atom("dict", scope),
        ]
        return self._pick(options, scope, "dict", d)

    def _expr_bool(self, d: int, scope: _Scope) -> str:
        rng, e = self.rng, self._expr
        options = [
            lambda: (
                f"{e('int', d, scope)} {rng.choice(['<', '>', '==', '!=', '<=', '>='])} {e('int', d, scope)}"
            ),
            lambda: f"{e('int', d, scope)} % 2 == {rng.randint(0, 1)}",
            lambda: f"{e('int', d, scope)} in {e('list', d, scope)}",
            lambda: f"{self._char()} in {e('str', d, scope)}",
            lambda: f"{self._char()} in {e('dict', d, scope)}",
            lambda: (
                f"{e('str', d, scope)}.{rng.choice(['startswith', 'endswith'])}({self._char()})"
            ),
            lambda: f"len({e(rng.choice(['str', 'list']), d, scope)}) > {rng.randint(0, 4)}",
        ]
        return self._pick(options, scope, "bool", d)

    def _pick(self, options: list, scope: _Scope, kind: str, d: int) -> str:
        helper = scope.helper
        if helper is not None and helper[1] == kind and self.rng.random() < 0.3:
            return f"g({_bare(self._expr(helper[0], d, scope))})"
        # Prefer expressions that read a variable: constant subexpressions make constant programs.
        expr = ""
        for _ in range(4):
            expr = self.rng.choice(options)()
            if _WORD_RE.findall(expr) and set(_WORD_RE.findall(expr)) & set(scope.names):
                break
        return expr


def _bind(scope: _Scope, kind: str, pool: tuple[str, ...]) -> str:
    """Put a comprehension variable in scope under the first free name of ``pool``."""
    name = next((n for n in pool if n not in scope.names), None) or f"{pool[0]}{len(scope.names)}"
    scope.names[name] = kind
    return name


def _bare(expr: str) -> str:
    """Drop one pair of outer parentheses when they wrap the whole expression."""
    if not (expr.startswith("(") and expr.endswith(")")):
        return expr
    depth = 0
    for pos, char in enumerate(expr):
        depth += char == "("
        depth -= char == ")"
        if depth == 0 and pos < len(expr) - 1:
            return expr
    return expr[1:-1]
