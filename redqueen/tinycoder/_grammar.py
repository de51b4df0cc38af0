"""The typed expression grammar behind :class:`~redqueen.tinycoder.ProgramGenerator`.

Expressions of each value type (int, str, list of int, dict of str -> int, and bool for
conditions) are built from variables in scope, small constants, builtins (``len``, ``sum``,
``max``, ``sorted``, ``zip``, ``enumerate``, ``reversed``, ``any``, ``all``, ``chr``, ``ord``,
``bin``, ...), string, list and dict idioms, and calls of helper functions in scope. A variable
of another type is converted rather than replaced by a constant, because constant
subexpressions make programs whose output does not depend on their input. Nothing iterates a
set of strings unsorted: string hashes change between processes, and the sandbox rejects
programs whose two runs disagree.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

LETTERS = "abcde"
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_LOCAL_NAMES = ["a", "b", "c", "m", "r", "u", "z", "p", "q", "acc", "out", "res", "tmp"]
_ITEM_NAMES = ("i", "j", "y2", "y3", "y4")

__all__ = ["LETTERS", "ExpressionGrammar", "Helper", "Scope", "bare", "bind"]


@dataclass(frozen=True)
class Helper:
    """A function the body being written may call: ``name(params...) -> returns``."""

    name: str
    params: tuple[str, ...]
    returns: str
    recursive: bool = False  # first parameter is a depth, bounded at the call site


@dataclass
class Scope:
    """Variables visible while a function body is written: name -> type, newest locals last."""

    names: dict[str, str] = field(default_factory=dict)  # name -> type
    recent: list[str] = field(default_factory=list)  # locals, newest last
    helpers: list[Helper] = field(default_factory=list)

    def of(self, kind: str) -> list[str]:
        return [n for n, k in self.names.items() if k == kind]

    def fresh(self) -> str:
        for name in _LOCAL_NAMES:
            if name not in self.names:
                return name
        return f"v{len(self.names)}"


class ExpressionGrammar:
    """Random typed expressions over the variables of a scope (a base for program generators).

    Args:
        rng: Source of randomness.
    """

    def __init__(self, *, rng: random.Random) -> None:
        self.rng = rng

    def _atom(self, kind: str, scope: Scope) -> str:
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

    def _derive(self, kind: str, scope: Scope) -> str | None:
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
            return repr("".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 3))))
        if kind == "list":
            return repr([rng.randint(0, 9) for _ in range(rng.randint(1, 4))])
        if kind == "dict":
            return repr({key: rng.randint(0, 9) for key in rng.sample(LETTERS, 2)})
        return rng.choice(("True", "False"))

    def _char(self) -> str:
        return repr(self.rng.choice(LETTERS))

    def _chars(self) -> str:
        return repr("".join(self.rng.sample(LETTERS, self.rng.randint(2, 3))))

    def _expr(self, kind: str, depth: int, scope: Scope) -> str:
        if depth <= 0 and kind != "bool":
            return self._atom(kind, scope)
        return getattr(self, f"_expr_{kind}")(max(depth - 1, 0), scope)

    def _expr_int(self, d: int, scope: Scope) -> str:
        rng, e = self.rng, self._expr
        n = rng.randint
        options = [
            lambda: f"({e('int', d, scope)} {rng.choice('+-*')} {e('int', d, scope)})",
            lambda: f"({e('int', d, scope)} {rng.choice(['//', '%'])} {n(2, 5)})",
            lambda: f"abs({bare(e('int', d, scope))})",
            lambda: (
                f"{rng.choice(['max', 'min'])}({bare(e('int', d, scope))}, {bare(e('int', d, scope))})"
            ),
            lambda: f"len({e(rng.choice(['str', 'list', 'dict']), d, scope)})",
            lambda: f"sum({e('list', d, scope)})",
            lambda: f"{rng.choice(['max', 'min'])}({e('list', d, scope)}, default={n(0, 3)})",
            lambda: f"{e('str', d, scope)}.count({self._char()})",
            lambda: f"{e('str', d, scope)}.find({self._char()})",
            lambda: f"{e('dict', d, scope)}.get({self._char()}, {n(0, 3)})",
            lambda: f"sum({e('dict', d, scope)}.values())",
            lambda: (
                f"({e('int', d, scope)} if {bare(e('bool', d, scope))} else {e('int', d, scope)})"
            ),
            lambda: f"len(set({e(rng.choice(['str', 'list']), d, scope)}))",
            lambda: f"{e('list', d, scope)}.count({bare(e('int', d, scope))})",
            lambda: f"sum(1 for ch in {e('str', d, scope)} if ch in {self._chars()})",
            lambda: f"sum(int(c) for c in str(abs({bare(e('int', d, scope))})))",
            lambda: f"bin(abs({bare(e('int', d, scope))})).count('1')",
            lambda: f"abs({bare(e('int', d, scope))}).bit_length()",
            lambda: f"({e('int', d, scope)} ** 2)",
            lambda: f"round({bare(e('int', d, scope))} / {n(2, 4)})",
            lambda: f"ord(max({e('str', d, scope)}, default='a')) - 96",
            lambda: f"sum(v * v for v in {e('list', d, scope)})",
            lambda: self._atom("int", scope),
        ]
        lists = scope.of("list")
        if lists:
            v = rng.choice(lists)
            options.append(lambda: f"({v}[{e('int', d, scope)} % len({v})] if {v} else {n(0, 3)})")
            options.append(lambda: f"(sorted({v})[len({v}) // 2] if {v} else {n(0, 3)})")
        return self._pick(options, scope, "int", d)

    def _expr_str(self, d: int, scope: Scope) -> str:
        rng, e = self.rng, self._expr
        n = rng.randint
        options = [
            lambda: f"({e('str', d, scope)} + {e('str', d, scope)})",
            lambda: (
                f"{e('str', d, scope)}[{rng.choice(['::-1', '1:', ':2', '::2', '-2:', '1:3'])}]"
            ),
            lambda: (
                f"{e('str', d, scope)}.{rng.choice(['upper', 'lower', 'strip', 'title', 'swapcase', 'capitalize'])}()"
            ),
            lambda: f"{e('str', d, scope)}.replace({self._char()}, {self._char()})",
            lambda: f"''.join(sorted({e('str', d, scope)}))",
            lambda: f"({self._atom('str', scope)} * {n(2, 3)})",
            lambda: f"str({bare(e('int', d, scope))})",
            lambda: (
                f"{repr(rng.choice(['-', ',', '']))}.join(str(i) for i in {e('list', d, scope)})"
            ),
            lambda: f"''.join({e('dict', d, scope)})",
            lambda: (
                f"({e('str', d, scope)} if {bare(e('bool', d, scope))} else {e('str', d, scope)})"
            ),
            lambda: f"chr(97 + {e('int', d, scope)} % 26)",
            lambda: (
                f"{e('str', d, scope)}.{rng.choice(['zfill', 'rjust', 'ljust', 'center'])}({n(3, 7)})"
            ),
            lambda: f"{e('str', d, scope)}.{rng.choice(['lstrip', 'rstrip'])}({self._chars()})",
            lambda: f"''.join(sorted(set({e('str', d, scope)})))",
            lambda: f"''.join(ch for ch in {e('str', d, scope)} if ch not in {self._chars()})",
            lambda: f"''.join(ch * 2 for ch in {e('str', d, scope)})",
            lambda: f"bin(abs({bare(e('int', d, scope))}))[2:]",
            lambda: (
                f"{repr(rng.choice(['-', ' ']))}.join(reversed({e('str', d, scope)}.split({self._char()})))"
            ),
            lambda: f"max({e('dict', d, scope)}, key=len, default='')",
            lambda: self._atom("str", scope),
        ]
        dicts = scope.of("dict")
        if dicts:
            v = rng.choice(dicts)
            options.append(lambda: f"max(sorted({v}), key={v}.get, default='')")
        return self._pick(options, scope, "str", d)

    def _expr_list(self, d: int, scope: Scope) -> str:
        rng, e = self.rng, self._expr
        n = rng.randint

        def comprehension() -> str:
            src = e("list", d, scope)
            item = bind(scope, "int", _ITEM_NAMES)
            body = bare(e("int", d, scope))
            cond = bare(e("bool", d, scope)) if rng.random() < 0.4 else None
            del scope.names[item]
            tail = f" if {cond}" if cond else ""
            return f"[{body} for {item} in {src}{tail}]"

        def filtered() -> str:
            src = e("list", d, scope)
            item = bind(scope, "int", _ITEM_NAMES)
            cond = bare(e("bool", d, scope))
            del scope.names[item]
            return f"[{item} for {item} in {src} if {cond}]"

        def enumerated() -> str:
            src = e(rng.choice(["list", "str"]), d, scope)
            return f"[{rng.choice(['i * v', 'i + len(str(v))', 'i'])} for i, v in enumerate({src})]"

        def zipped() -> str:
            left, right = e("list", d, scope), e("list", d, scope)
            return f"[a {rng.choice('+-*')} b for a, b in zip({left}, {right})]"

        options = [
            lambda: f"sorted({e('list', d, scope)}{rng.choice(['', ', reverse=True'])})",
            lambda: f"{e('list', d, scope)}[{rng.choice(['::-1', '1:', ':3', '::2', '-2:'])}]",
            lambda: f"({e('list', d, scope)} + {e('list', d, scope)})",
            comprehension,
            filtered,
            enumerated,
            zipped,
            lambda: f"[ord(ch) - 96 for ch in {e('str', d, scope)}]",
            lambda: f"list(range({n(1, 5)}))",
            lambda: f"sorted({e('dict', d, scope)}.values())",
            lambda: f"[len(w) for w in {e('str', d, scope)}.split({self._char()})]",
            lambda: f"list(reversed({e('list', d, scope)}))",
            lambda: f"sorted(set({e('list', d, scope)}))",
            lambda: (
                f"sorted({e('list', d, scope)}, key={rng.choice(['abs', 'lambda v: (v % 3, v)', 'lambda v: -v'])})"
            ),
            lambda: f"list(map(abs, {e('list', d, scope)}))",
            lambda: f"[max(v, {n(0, 4)}) for v in {e('list', d, scope)}]",
            lambda: f"[int(c) for c in str(abs({bare(e('int', d, scope))}))]",
            lambda: self._atom("list", scope),
        ]
        return self._pick(options, scope, "list", d)

    def _expr_dict(self, d: int, scope: Scope) -> str:
        rng, e = self.rng, self._expr
        n = rng.randint

        def counts() -> str:
            src = e("str", d, scope)
            return (
                f"{{ch: {src}.count(ch) for ch in {src}}}"
                if src.isidentifier()
                else self._atom("dict", scope)
            )

        def mapped() -> str:
            src = e("dict", d, scope)
            val = bind(scope, "int", ("val", "num", "cnt"))
            body = bare(e("int", d, scope))
            del scope.names[val]
            return f"{{key: {body} for key, {val} in {src}.items()}}"

        options = [
            counts,
            mapped,
            lambda: f"dict(zip({e('str', d, scope)}, {e('list', d, scope)}))",
            lambda: (
                f"{{key: val for key, val in {e('dict', d, scope)}.items() if val {rng.choice(['>', '<', '!='])} {n(0, 5)}}}"
            ),
            lambda: f"dict(sorted({e('dict', d, scope)}.items()))",
            lambda: f"{{ch: i for i, ch in enumerate({e('str', d, scope)})}}",
            lambda: f"{{**{e('dict', d, scope)}, {self._char()}: {bare(e('int', d, scope))}}}",
            lambda: (
                f"{{key: val for key, val in {e('dict', d, scope)}.items() if key in {e('str', d, scope)}}}"
            ),
            lambda: self._atom("dict", scope),
        ]
        return self._pick(options, scope, "dict", d)

    def _expr_bool(self, d: int, scope: Scope) -> str:
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
            lambda: (
                f"{rng.choice(['any', 'all'])}(v {rng.choice(['>', '<', '!='])} {rng.randint(0, 5)} for v in {e('list', d, scope)})"
            ),
            lambda: f"{e('str', d, scope)}.isalpha()",
            lambda: f"{self._atom('str', scope)} == {self._atom('str', scope)}[::-1]",
            lambda: f"{e('int', d, scope)} in {e('dict', d, scope)}.values()",
        ]
        return self._pick(options, scope, "bool", d)

    def _call(self, helper: Helper, d: int, scope: Scope) -> str:
        """A call of ``helper`` with arguments of its parameter types (a bounded depth first)."""
        args = [bare(self._expr(kind, d, scope)) for kind in helper.params]
        if helper.recursive:
            args[0] = f"abs({args[0]}) % {self.rng.randint(3, 6)}"
        return f"{helper.name}({', '.join(args)})"

    def _pick(self, options: list[Callable[[], str]], scope: Scope, kind: str, d: int) -> str:
        callable_helpers = [h for h in scope.helpers if h.returns == kind]
        if callable_helpers and self.rng.random() < 0.3:
            return self._call(self.rng.choice(callable_helpers), d, scope)
        # Prefer expressions that read a variable: constant subexpressions make constant programs.
        expr = ""
        for _ in range(4):
            expr = self.rng.choice(options)()
            if set(_WORD_RE.findall(expr)) & set(scope.names):
                break
        return expr


def bind(scope: Scope, kind: str, pool: tuple[str, ...]) -> str:
    """Put a comprehension variable in scope under the first free name of ``pool``."""
    name = next((n for n in pool if n not in scope.names), None) or f"{pool[0]}{len(scope.names)}"
    scope.names[name] = kind
    return name


def bare(expr: str) -> str:
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
