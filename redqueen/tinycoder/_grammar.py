"""The typed expression grammar behind :class:`~redqueen.tinycoder.ProgramGenerator`.

Expressions of each value type (int, str, list of int, dict of str -> int, and bool for
conditions) are built from variables in scope, small constants and typed operations; a
variable of another type is converted rather than replaced by a constant, because constant
subexpressions make programs whose output does not depend on their input.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

LETTERS = "abcde"
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_LOCAL_NAMES = ["a", "b", "c", "k", "m", "r", "v", "z", "p", "q", "u"]


__all__ = ["LETTERS", "ExpressionGrammar", "Scope", "bare", "bind"]


@dataclass
class Scope:
    """Variables visible while a function body is written: name -> type, newest locals last."""

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

    def _expr(self, kind: str, depth: int, scope: Scope) -> str:
        if depth <= 0 and kind != "bool":
            return self._atom(kind, scope)
        return getattr(self, f"_expr_{kind}")(max(depth - 1, 0), scope)

    def _expr_int(self, d: int, scope: Scope) -> str:
        rng, e = self.rng, self._expr
        options = [
            lambda: f"({e('int', d, scope)} {rng.choice('+-*')} {e('int', d, scope)})",
            lambda: f"({e('int', d, scope)} {rng.choice(['//', '%'])} {rng.randint(2, 5)})",
            lambda: f"abs({bare(e('int', d, scope))})",
            lambda: (
                f"{rng.choice(['max', 'min'])}({bare(e('int', d, scope))}, {bare(e('int', d, scope))})"
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
                f"({e('int', d, scope)} if {bare(e('bool', d, scope))} else {e('int', d, scope)})"
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

    def _expr_str(self, d: int, scope: Scope) -> str:
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
            lambda: f"str({bare(e('int', d, scope))})",
            lambda: (
                f"{repr(rng.choice(['-', ',', '']))}.join(str(i) for i in {e('list', d, scope)})"
            ),
            lambda: f"''.join({e('dict', d, scope)})",
            lambda: (
                f"({e('str', d, scope)} if {bare(e('bool', d, scope))} else {e('str', d, scope)})"
            ),
            lambda: self._atom("str", scope),
        ]
        return self._pick(options, scope, "str", d)

    def _expr_list(self, d: int, scope: Scope) -> str:
        rng, e = self.rng, self._expr

        def comprehension() -> str:
            src = e("list", d, scope)
            item = bind(scope, "int", ("i", "j", "h", "y2"))
            body = bare(e("int", d, scope))
            cond = bare(e("bool", d, scope)) if rng.random() < 0.4 else None
            del scope.names[item]
            tail = f" if {cond}" if cond else ""
            return f"[{body} for {item} in {src}{tail}]"

        def filtered() -> str:
            src = e("list", d, scope)
            item = bind(scope, "int", ("i", "j", "h", "y2"))
            cond = bare(e("bool", d, scope))
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

    def _expr_dict(self, d: int, scope: Scope) -> str:
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
            val = bind(scope, "int", ("val", "num", "cnt"))
            body = bare(e("int", d, scope))
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
        ]
        return self._pick(options, scope, "bool", d)

    def _pick(self, options: list, scope: Scope, kind: str, d: int) -> str:
        helper = scope.helper
        if helper is not None and helper[1] == kind and self.rng.random() < 0.3:
            return f"g({bare(self._expr(helper[0], d, scope))})"
        # Prefer expressions that read a variable: constant subexpressions make constant programs.
        expr = ""
        for _ in range(4):
            expr = self.rng.choice(options)()
            if _WORD_RE.findall(expr) and set(_WORD_RE.findall(expr)) & set(scope.names):
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
