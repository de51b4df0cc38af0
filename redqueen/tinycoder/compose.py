"""Natural programs by composition: a typed grammar over everyday values, names and idioms.

:mod:`redqueen.tinycoder.idioms` writes one idiom per function from 19 templates, which gives
few distinct programs (about 3,700 canonical forms in 20,000 draws, most of them the same
shape with another constant). :class:`ComposedGenerator` writes the same kind of code by
composing it: expressions are built bottom-up from a typed grammar over six value types
(``int``, ``str``, ``bool``, lists of integers, lists of words, ``str -> int`` dicts), with the
builtins, methods, operators, slices, comprehensions and conditional expressions people use
first, so an idiom appears inside another (``len(word.split())``, ``sorted(prices)[-1] * 2``,
``[w.upper() for w in words if w.startswith('a')]``). Bodies are one expression, a few named
steps (``total = ...`` then ``return ...``), an accumulating loop, a dict counter or a branch.

Names, literals and inputs come from :mod:`redqueen.tinycoder._vocabulary` (whole words, the
whole alphabet, integers into the thousands). Expressions that can fail on some input
(``max`` of an empty list, an index past the end) are allowed: the corpus keeps a program
only when every one of its inputs runs, as it does for the grammar. The productions were
written from the common idioms of the language, not from the hand-written evaluation set,
whose canonical forms the corpus refuses anyway. Programs carry level
:data:`~redqueen.tinycoder.idioms.IDIOM_LEVEL` like the templates' programs.
"""

from __future__ import annotations

import ast
import random
import re
import string
from collections.abc import Callable

from redqueen.tinycoder._vocabulary import CHARS, ITEMS, LOCALS, VOCABULARY, Draw
from redqueen.tinycoder.idioms import IdiomProgram

__all__ = ["ComposedGenerator"]

#: The parameter kinds of :func:`~redqueen.tinycoder._vocabulary.natural_value`, by type.
_KINDS = {
    "int": ("int", "nat", "small"),
    "str": ("word", "sentence", "letter"),
    "ints": ("ints",),
    "words": ("words",),
    "counts": ("counts",),
}
#: How often each type is a parameter (bool never is).
_PARAM_WEIGHTS = {"int": 3, "str": 4, "ints": 4, "words": 3, "counts": 1}
#: How often each type is what ``f`` returns.
_RESULT_WEIGHTS = {"int": 5, "str": 4, "bool": 2, "ints": 3, "words": 2, "counts": 1}
_ATOM = re.compile(r"^(?:[A-Za-z_][\w.]*(?:\(.*\)|\[.*\])?|-?\d+|'[^']*'|\[.*\]|\{.*\})$")

Production = tuple[Callable[["_Writer", int], str], tuple[str, ...]]


def _atom(expr: str) -> str:
    """``expr`` in parentheses unless it is a name, call, literal or display."""
    return expr if _ATOM.match(expr) and _balanced(expr) else f"({expr})"


def _balanced(expr: str) -> bool:
    # "f(a) + g(b)" matches the call pattern; it is an atom only if the outer brackets pair up.
    depth = 0
    for i, ch in enumerate(expr):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0 and i < len(expr) - 1 and expr[i + 1] not in "([.":
                return False
        elif depth == 0 and ch in " +-*/%<>=!,":
            return expr.startswith("-") and expr[1:].isdigit()
    return True


class _Writer:
    """One program's expressions: the variables in scope and the typed productions."""

    def __init__(self, draw: Draw) -> None:
        self.d = draw
        self.rng = draw.rng
        self.scope: dict[str, str] = {}
        self.unused: list[str] = []

    # -- leaves -----------------------------------------------------------------------------

    def var(self, kind: str) -> str | None:
        names = [n for n, t in self.scope.items() if t == kind]
        if not names:
            return None
        fresh = [n for n in names if n in self.unused]
        name = self.rng.choice(fresh or names)
        if name in self.unused:
            self.unused.remove(name)
        return name

    def literal(self, kind: str) -> str:
        """A literal of ``kind`` (never ``bool``: :meth:`leaf` writes a test instead)."""
        d = self.d
        if kind == "int":
            return str(d.int(0, 12))
        if kind == "str":
            return (
                d.word()
                if self.rng.random() < 0.7
                else repr(self.rng.choice(string.ascii_lowercase))
            )
        if kind == "ints":
            return repr([d.int(0, 9) for _ in range(self.rng.randint(1, 4))])
        if kind == "words":
            return repr(self.rng.sample(VOCABULARY, self.rng.randint(1, 3)))
        keys = self.rng.sample(VOCABULARY, self.rng.randint(1, 3))
        return repr({k: d.int(0, 9) for k in keys})

    def leaf(self, kind: str) -> str:
        """A variable of type ``kind`` when one is in scope, else a literal (a test for
        ``bool``: a comparison of what is in scope reads better than ``True``)."""
        name = self.var(kind)
        if name is not None and (kind not in ("int", "str") or self.rng.random() < 0.8):
            return name
        if kind == "bool":
            return self.production("bool", 0)
        return self.literal(kind)

    def expr(self, kind: str, depth: int) -> str:
        """An expression of type ``kind`` at most ``depth`` operations deep."""
        if depth <= 0 or (self.rng.random() < 0.2 and self.has(kind)):
            return self.leaf(kind)
        return self.production(kind, depth - 1)

    def production(self, kind: str, depth: int) -> str:
        """One operation giving ``kind``, its operands ``depth`` deep. Operations on a type in
        scope are preferred; at depth 0 (operands are leaves) they are the only ones drawn."""
        options = [
            (fn, needs)
            for fn, needs in _PRODUCTIONS[kind]
            if not needs or any(map(self.has, needs))
        ]
        if depth > 0 or not options:
            weights = [
                4 if not needs or any(map(self.has, needs)) else 1
                for _, needs in _PRODUCTIONS[kind]
            ]
            options = self.rng.choices(_PRODUCTIONS[kind], weights=weights, k=1)
        fn, _ = self.rng.choice(options)
        return fn(self, depth)

    def kind_of(self, *kinds: str) -> str:
        """One of ``kinds``, a type in scope when there is one."""
        present = [k for k in kinds if self.has(k)]
        return self.rng.choice(present or list(kinds))

    def has(self, kind: str) -> bool:
        return kind in self.scope.values()

    def bind(self, name: str, kind: str) -> None:
        """Put ``name`` in scope as a fresh variable (leaves prefer it until it is used)."""
        self.scope[name] = kind
        self.unused.append(name)

    def unbind(self, name: str) -> None:
        del self.scope[name]
        if name in self.unused:
            self.unused.remove(name)

    def letter(self) -> str:
        return repr(self.rng.choice(string.ascii_lowercase + " "))

    def local(self, pool: list[str]) -> str:
        return self.d.name(pool)


# -- productions, by result type ------------------------------------------------------------
# Each takes the writer and the depth left for its operands.


def _int_productions() -> list[Production]:
    def length(w: _Writer, k: int) -> str:
        return f"len({w.expr(w.kind_of('str', 'ints', 'words', 'counts'), k)})"

    def arith(w: _Writer, k: int) -> str:
        op = w.rng.choice(("+", "-", "*", "+", "-"))
        return f"{_atom(w.expr('int', k))} {op} {_atom(w.expr('int', k))}"

    def by_constant(w: _Writer, k: int) -> str:
        op = w.rng.choice(("//", "%", "*", "+", "-"))
        return f"{_atom(w.expr('int', k))} {op} {w.d.int(2, 10)}"

    def reduce(w: _Writer, k: int) -> str:
        return f"{w.rng.choice(('sum', 'max', 'min', 'sum'))}({w.expr('ints', k)})"

    def abs_(w: _Writer, k: int) -> str:
        return f"abs({w.expr('int', k)})"

    def count(w: _Writer, k: int) -> str:
        if w.kind_of("str", "ints") == "str":
            return f"{_atom(w.expr('str', k))}.{w.rng.choice(('count', 'find'))}({w.letter()})"
        return f"{_atom(w.expr('ints', k))}.count({w.expr('int', 0)})"

    def index(w: _Writer, k: int) -> str:
        return f"{_atom(w.expr('ints', k))}[{w.rng.choice(('0', '-1', '1', '0'))}]"

    def lookup(w: _Writer, k: int) -> str:
        table = _atom(w.expr("counts", k))
        return w.rng.choice(
            (
                f"{table}.get({w.expr('str', 0)}, 0)",
                f"sum({table}.values())",
                f"max({table}.values())",
            )
        )

    def digits(w: _Writer, k: int) -> str:
        n = w.expr("int", k)
        return w.rng.choice(
            (f"len(str({n}))", f"int(str({n})[::-1])", f"sum(int(c) for c in str({n}))")
        )

    def counting(w: _Writer, k: int) -> str:
        v = w.local(ITEMS["ints"])
        w.bind(v, "int")
        cond = w.expr("bool", min(k, 1))
        w.unbind(v)
        return f"sum(1 for {v} in {w.expr('ints', k)} if {cond})"

    def choose(w: _Writer, k: int) -> str:
        return f"{_atom(w.expr('int', k))} if {w.expr('bool', k)} else {_atom(w.expr('int', k))}"

    def round_(w: _Writer, k: int) -> str:
        return f"round({_atom(w.expr('int', k))} / {w.d.int(2, 10)})"

    containers = ("str", "ints", "words", "counts")
    return [
        (length, containers),
        (arith, ("int",)),
        (arith, ("int",)),
        (by_constant, ("int",)),
        (reduce, ("ints",)),
        (reduce, ("ints",)),
        (abs_, ("int",)),
        (count, ("str", "ints")),
        (index, ("ints",)),
        (lookup, ("counts",)),
        (digits, ("int",)),
        (counting, ("ints",)),
        (choose, ("int",)),
        (round_, ("int",)),
    ]


def _str_productions() -> list[Production]:
    def method(w: _Writer, k: int) -> str:
        name = w.rng.choice(("upper", "lower", "title", "capitalize", "strip", "swapcase"))
        return f"{_atom(w.expr('str', k))}.{name}()"

    def slice_(w: _Writer, k: int) -> str:
        s = _atom(w.expr("str", k))
        return w.rng.choice(
            (
                f"{s}[::-1]",
                f"{s}[{w.d.int(1, 4)}:]",
                f"{s}[:{w.d.int(1, 5)}]",
                f"{s}[0]",
                f"{s}[-1]",
                f"{s}[::2]",
                f"{s}[1:-1]",
            )
        )

    def concat(w: _Writer, k: int) -> str:
        return f"{_atom(w.expr('str', k))} + {_atom(w.expr('str', k))}"

    def repeat(w: _Writer, k: int) -> str:
        return f"{_atom(w.expr('str', k))} * {w.rng.randint(2, 3)}"

    def replace(w: _Writer, k: int) -> str:
        new = w.rng.choice((w.letter(), "''", "'-'", "'*'"))
        return f"{_atom(w.expr('str', k))}.replace({w.letter()}, {new})"

    def join(w: _Writer, k: int) -> str:
        sep = w.rng.choice(("' '", "''", "', '", "'-'"))
        return f"{sep}.join({w.expr('words', k)})"

    def from_int(w: _Writer, k: int) -> str:
        return f"str({w.expr('int', k)})"

    def pick_word(w: _Writer, k: int) -> str:
        ws = w.expr("words", k)
        return w.rng.choice(
            (
                f"{_atom(ws)}[0]",
                f"{_atom(ws)}[-1]",
                f"max({ws}, key=len)",
                f"min({ws})",
                f"sorted({ws})[0]",
            )
        )

    def fstring(w: _Writer, k: int) -> str:
        a = w.var("str") or w.var("int")
        if a is None:
            return f"str({w.expr('int', k)})"
        b = w.var("int")
        if b is None or b == a:
            return f"f'{{{a}}} {w.rng.choice(VOCABULARY)}'"
        return f"f'{{{a}}}: {{{b}}}'"

    def choose(w: _Writer, k: int) -> str:
        return f"{_atom(w.expr('str', k))} if {w.expr('bool', k)} else {_atom(w.expr('str', k))}"

    return [
        (method, ("str",)),
        (method, ("str",)),
        (slice_, ("str",)),
        (slice_, ("str",)),
        (concat, ("str",)),
        (repeat, ("str",)),
        (replace, ("str",)),
        (join, ("words",)),
        (from_int, ("int",)),
        (pick_word, ("words",)),
        (fstring, ("str", "int")),
        (choose, ("str",)),
    ]


def _bool_productions() -> list[Production]:
    def compare(w: _Writer, k: int) -> str:
        op = w.rng.choice(("<", ">", "==", "!=", "<=", ">="))
        return f"{_atom(w.expr('int', k))} {op} {_atom(w.expr('int', k))}"

    def parity(w: _Writer, k: int) -> str:
        return f"{_atom(w.expr('int', k))} % 2 == {w.rng.choice(('0', '1'))}"

    def test(w: _Writer, k: int) -> str:
        s = _atom(w.expr("str", k))
        name = w.rng.choice(("isalpha", "isdigit", "isupper", "islower", "istitle"))
        return w.rng.choice(
            (
                f"{s}.{name}()",
                f"{s}.startswith({w.letter()})",
                f"{s}.endswith({w.letter()})",
                f"{s} == {s}[::-1]",
            )
        )

    def member(w: _Writer, k: int) -> str:
        kind = w.kind_of("str", "ints", "words", "counts")
        inside = _atom(w.expr(kind, k))
        if kind == "str":
            return f"{w.letter()} in {inside}"
        item = _atom(w.expr("int" if kind == "ints" else "str", k))
        return f"{item} {w.rng.choice(('in', 'in', 'not in'))} {inside}"

    def logic(w: _Writer, k: int) -> str:
        if w.rng.random() < 0.3:
            return f"not {_atom(w.expr('bool', k))}"
        op = w.rng.choice(("and", "or"))
        return f"{_atom(w.expr('bool', k))} {op} {_atom(w.expr('bool', k))}"

    def quantify(w: _Writer, k: int) -> str:
        v = w.local(ITEMS["ints"])
        w.bind(v, "int")
        cond = w.expr("bool", min(k, 1))
        w.unbind(v)
        return f"{w.rng.choice(('any', 'all'))}({cond} for {v} in {w.expr('ints', k)})"

    return [
        (compare, ("int",)),
        (compare, ("int",)),
        (parity, ("int",)),
        (test, ("str",)),
        (member, ("str", "ints", "words", "counts")),
        (logic, ("bool",)),
        (quantify, ("ints",)),
    ]


def _ints_productions() -> list[Production]:
    def sort(w: _Writer, k: int) -> str:
        xs = w.expr("ints", k)
        return w.rng.choice(
            (f"sorted({xs})", f"sorted({xs}, reverse=True)", f"list(reversed({xs}))")
        )

    def slice_(w: _Writer, k: int) -> str:
        xs = _atom(w.expr("ints", k))
        return w.rng.choice(
            (
                f"{xs}[1:]",
                f"{xs}[:{w.d.int(1, 4)}]",
                f"{xs}[::-1]",
                f"{xs}[::2]",
                f"{xs}[-{w.d.int(1, 3)}:]",
            )
        )

    def comprehension(w: _Writer, k: int) -> str:
        source = w.expr("ints", k)
        v = w.local(ITEMS["ints"])
        w.bind(v, "int")
        body = w.expr("int", min(k, 1))
        cond = f" if {w.expr('bool', min(k, 1))}" if w.rng.random() < 0.5 else ""
        w.unbind(v)
        return f"[{body} for {v} in {source}{cond}]"

    def lengths(w: _Writer, k: int) -> str:
        v = w.local(ITEMS["words"])
        return f"[len({v}) for {v} in {w.expr('words', k)}]"

    def digits(w: _Writer, k: int) -> str:
        return f"[int(c) for c in str({w.expr('int', k)})]"

    def values(w: _Writer, k: int) -> str:
        return f"{w.rng.choice(('list', 'sorted'))}({_atom(w.expr('counts', k))}.values())"

    def extend(w: _Writer, k: int) -> str:
        xs = _atom(w.expr("ints", k))
        return w.rng.choice(
            (f"{xs} + [{w.expr('int', k)}]", f"{xs} + {_atom(w.expr('ints', k))}", f"{xs} * 2")
        )

    def range_(w: _Writer, k: int) -> str:
        n = w.var("int") if w.rng.random() < 0.3 else None
        if n is not None and w.scope.get(n) == "int":
            return f"list(range({n} % {w.d.int(5, 12)}))"
        return f"list(range({w.d.int(1, 4)}, {w.d.int(5, 12)}))"

    return [
        (sort, ("ints",)),
        (sort, ("ints",)),
        (slice_, ("ints",)),
        (comprehension, ("ints",)),
        (comprehension, ("ints",)),
        (lengths, ("words",)),
        (digits, ("int",)),
        (values, ("counts",)),
        (extend, ("ints",)),
        (range_, ("int",)),
    ]


def _words_productions() -> list[Production]:
    def split(w: _Writer, k: int) -> str:
        s = _atom(w.expr("str", k))
        return w.rng.choice(
            (f"{s}.split()", f"{s}.split()", f"{s}.split({w.letter()})", f"list({s})")
        )

    def sort(w: _Writer, k: int) -> str:
        ws = w.expr("words", k)
        return w.rng.choice(
            (f"sorted({ws})", f"sorted({ws}, key=len)", f"{_atom(ws)}[::-1]", f"{_atom(ws)}[1:]")
        )

    def comprehension(w: _Writer, k: int) -> str:
        source = w.expr("words", k)
        v = w.local(ITEMS["words"])
        w.bind(v, "str")
        body = w.expr("str", min(k, 1))
        cond = f" if {w.expr('bool', min(k, 1))}" if w.rng.random() < 0.5 else ""
        w.unbind(v)
        return f"[{body} for {v} in {source}{cond}]"

    def keys(w: _Writer, k: int) -> str:
        return f"{w.rng.choice(('list', 'sorted'))}({w.expr('counts', k)})"

    def add(w: _Writer, k: int) -> str:
        return f"{_atom(w.expr('words', k))} + [{w.expr('str', k)}]"

    return [
        (split, ("str",)),
        (split, ("str",)),
        (sort, ("words",)),
        (comprehension, ("words",)),
        (comprehension, ("words",)),
        (keys, ("counts",)),
        (add, ("words",)),
    ]


def _counts_productions() -> list[Production]:
    def by_word(w: _Writer, k: int) -> str:
        v = w.local(ITEMS["words"])
        w.bind(v, "str")
        value = w.expr("int", min(k, 1))
        w.unbind(v)
        return f"{{{v}: {value} for {v} in {w.expr('words', k)}}}"

    def transform(w: _Writer, k: int) -> str:
        table = _atom(w.expr("counts", k))
        key, val = w.local(["key", "k", "name"]), w.local(["val", "v", "count", "n"])
        w.bind(val, "int")
        new = w.expr("int", min(k, 1))
        cond = f" if {w.expr('bool', min(k, 1))}" if w.rng.random() < 0.5 else ""
        w.unbind(val)
        return f"{{{key}: {new} for {key}, {val} in {table}.items(){cond}}}"

    def zipped(w: _Writer, k: int) -> str:
        return f"dict(zip({w.expr('words', k)}, {w.expr('ints', k)}))"

    return [(by_word, ("words",)), (transform, ("counts",)), (zipped, ("words",))]


_PRODUCTIONS: dict[str, list[Production]] = {
    "int": _int_productions(),
    "str": _str_productions(),
    "bool": _bool_productions(),
    "ints": _ints_productions(),
    "words": _words_productions(),
    "counts": _counts_productions(),
}


#: Body shapes: one expression, named steps, an accumulating loop, a dict counter, a branch.
_SHAPES = ("expr", "steps", "loop", "counter", "branch")


_CANCELLING = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod)
_COMPUTED = (
    ast.BinOp,
    ast.Call,
    ast.Compare,
    ast.BoolOp,
    ast.IfExp,
    ast.Subscript,
    ast.ListComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.JoinedStr,
)


def _reads_well(source: str) -> bool:
    """Whether every parameter, local and loop variable of ``source`` is read somewhere, no
    comparison has the same operand on both sides, nothing is computed from constants alone,
    and ``f`` does not return a parameter as it came: what a person writes (a draw that fails
    is written again)."""
    tree = ast.parse(source)
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    bound = {a.arg for a in function.args.args}
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.Compare) and any(
            ast.dump(node.left) == ast.dump(right) for right in node.comparators
        ):
            return False
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _CANCELLING):
            if ast.dump(node.left) == ast.dump(node.right):
                return False
        elif isinstance(node, ast.IfExp) and ast.dump(node.body) == ast.dump(node.orelse):
            return False
    # No part computed from constants alone ('fox'.count('s'), 96 - 4): people write the value.
    for node in ast.walk(function):
        if isinstance(node, _COMPUTED) and not any(
            isinstance(n, ast.Name) and n.id in bound for n in ast.walk(node)
        ):
            return False
    first, last = function.body[0], function.body[-1]
    if (
        isinstance(last, ast.Return)
        and isinstance(last.value, ast.Name)
        and len(function.body) == 1
    ):
        return False
    if isinstance(first, ast.If) and ast.dump(first.body[-1]) == ast.dump(last):
        return False  # both branches return the same thing
    return bound <= read


def _weighted(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


class ComposedGenerator:
    """Writes natural programs by composing typed idioms (see the module docstring).

    Every parameter is read by the body: a draw that leaves one unread is written again.

    Args:
        rng: Source of randomness (seed it for a reproducible stream).
        max_depth: Deepest expression, in operations (2 or 3 reads like code people write).

    Raises:
        ValueError: If ``max_depth`` is below 1.
    """

    def __init__(self, *, rng: random.Random, max_depth: int = 3) -> None:
        if max_depth < 1:
            raise ValueError(f"ComposedGenerator: max_depth must be >= 1, got {max_depth}")
        self.rng = rng
        self.max_depth = max_depth

    def program(self) -> IdiomProgram:
        """One program in which every name bound is read (:func:`_reads_well`)."""
        while True:
            draw = Draw(self.rng)
            body = self.body(draw)
            params = ", ".join(name for name, _ in draw.params)
            indented = "\n".join(f"    {line}" for line in body.splitlines())
            source = f"def f({params}):\n{indented}"
            if _reads_well(source):
                return IdiomProgram(source, tuple(kind for _, kind in draw.params))

    def body(self, draw: Draw) -> str:
        """The body of one program; its parameters are recorded on ``draw``."""
        w = _Writer(draw)
        for _ in range(self.rng.choice((1, 1, 1, 2, 2, 3))):
            kind = _weighted(self.rng, _PARAM_WEIGHTS)
            w.bind(draw.param(self.rng.choice(_KINDS[kind])), kind)
        shape = self.rng.choices(_SHAPES, weights=(4, 3, 2, 1, 1))[0]
        depth = self.rng.randint(1, self.max_depth)
        result = _weighted(self.rng, _RESULT_WEIGHTS)
        if shape == "steps":
            lines = []
            for _ in range(self.rng.randint(1, 2)):
                kind = _weighted(self.rng, _RESULT_WEIGHTS)
                value = w.expr(kind, self.rng.randint(1, 2))
                name = w.local(LOCALS)
                lines.append(f"{name} = {value}")
                w.bind(name, kind)
            return "\n".join([*lines, f"return {w.expr(result, depth)}"])
        if shape == "loop":
            return self._loop(w, depth)
        if shape == "counter":
            return self._counter(w)
        if shape == "branch":
            cond = w.expr("bool", min(depth, 2))
            first, second = w.expr(result, depth - 1), w.expr(result, depth - 1)
            return "\n".join([f"if {cond}:", f"    return {first}", f"return {second}"])
        return f"return {w.expr(result, depth)}"

    def _loop(self, w: _Writer, depth: int) -> str:
        over = self.rng.choice(("ints", "words", "str"))
        source = w.expr(over, min(depth, 1))
        item = w.local(CHARS if over == "str" else ITEMS[over])
        w.bind(item, {"ints": "int", "words": "str", "str": "str"}[over])
        acc = w.local(LOCALS)
        roll = self.rng.random()
        if roll < 0.5:
            start, kind = "0", "int"
        elif roll < 0.75:
            start, kind = "''", "str"
        else:
            start, kind = "[]", "ints"
        grow = w.expr("int" if kind == "ints" else kind, min(depth, 2))
        update = f"{acc}.append({grow})" if kind == "ints" else f"{acc} += {grow}"
        lines = [f"{acc} = {start}", f"for {item} in {source}:"]
        if self.rng.random() < 0.5:
            lines += [f"    if {w.expr('bool', 1)}:", f"        {update}"]
        else:
            lines += [f"    {update}"]
        w.unbind(item)
        w.bind(acc, kind)
        end = acc if self.rng.random() < 0.6 else w.expr(_weighted(self.rng, _RESULT_WEIGHTS), 1)
        return "\n".join([*lines, f"return {end}"])

    def _counter(self, w: _Writer) -> str:
        source = w.expr(self.rng.choice(("words", "str")), 1)
        table = w.local(["counts", "freq", "seen", "tally"])
        item = w.local(["x", "item", "key", "c"])
        end = self.rng.choice(
            (
                table,
                f"len({table})",
                f"max({table}.values())",
                f"sorted({table})",
                f"[k for k in {table} if {table}[k] > 1]",
                f"max({table}, key={table}.get)",
            )
        )
        loop = [f"{table} = {{}}", f"for {item} in {source}:"]
        loop.append(f"    {table}[{item}] = {table}.get({item}, 0) + 1")
        return "\n".join([*loop, f"return {end}"])
