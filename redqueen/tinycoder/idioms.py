"""A second source of programs: the short, natural functions people write first.

The typed grammar of :mod:`redqueen.tinycoder.programs` writes machine-made bodies over five
letters, integers from -5 to 15 and a small name pool. :class:`IdiomGenerator` writes the other
kind: one idiom per function (arithmetic, digits, string methods on whole words, slices,
comprehensions, accumulating loops, while loops, dict counters, lookups, conditionals, zip and
enumerate, sorting with a key), with names a person gives (``prices``, ``word``, ``total``),
literals from an everyday vocabulary and the whole alphabet, and inputs of whole words,
sentences and integers up to the thousands. Each template draws its names, operators,
constants and methods, so one template writes many distinct canonical forms.

The templates were written from the list of common idioms, not from the hand-written
evaluation set (:mod:`redqueen.tinycoder.handwritten`); a program that happens to share a
canonical form with one of those is refused by :func:`~redqueen.tinycoder.corpus.build_corpus`
like any other held-out program. Programs carry level :data:`IDIOM_LEVEL` (0).
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from redqueen.tinycoder._vocabulary import (
    CHARS,
    ITEMS,
    LOCALS,
    VOCABULARY,
    Draw,
    natural_value,
)

__all__ = ["IDIOM_LEVEL", "IdiomGenerator", "IdiomProgram", "natural_value"]

#: The level idiom programs carry (the grammar's levels are 1-8).
IDIOM_LEVEL = 0


@dataclass(frozen=True)
class IdiomProgram:
    """An idiom program: the same interface as :class:`~redqueen.tinycoder.GeneratedProgram`.

    Args:
        source: Python source defining ``f``.
        params: The kind of each parameter (see :func:`natural_value`).
        level: Always :data:`IDIOM_LEVEL`.
    """

    source: str
    params: tuple[str, ...]
    level: int = IDIOM_LEVEL

    def random_input(self, rng: random.Random) -> str:
        """A random argument list for ``f`` as written inside ``f(...)``."""
        return ", ".join(natural_value(kind, rng) for kind in self.params)


def _arithmetic(d: Draw) -> str:
    x = d.param("int")
    if d.rng.random() < 0.5:
        y = d.param("int")
        return f"return {x} {d.pick('+', '-', '*')} {y} {d.pick('+', '-', '*')} {d.int(1, 9)}"
    return f"return {x} {d.pick('*', '//', '%', '+', '-', '**')} {d.int(2, 12)}"


def _digits(d: Draw) -> str:
    n = d.param("nat")
    return d.pick(
        f"return sum(int(c) for c in str({n}))",
        f"return len(str({n}))",
        f"return str({n})[::-1]",
        f"return int(str({n})[::-1])",
        f"return {n} % 10 + {n} // 10 % 10",
        f"return str({n}).count('{d.int(0, 9)}')",
        f"return [int(c) for c in str({n})]",
    )


def _string_method(d: Draw) -> str:
    s = d.param(d.pick("word", "sentence"))
    plain = ("upper", "lower", "title", "capitalize", "strip", "swapcase", "isalpha", "islower")
    letter = repr(d.rng.choice(string.ascii_lowercase))
    return d.pick(
        f"return {s}.{d.rng.choice(plain)}()",
        f"return {s}.count({letter})",
        f"return {s}.find({letter})",
        f"return {s}.startswith({letter})",
        f"return {s}.endswith({letter})",
        f"return {s}.replace({letter}, {d.pick(repr(''), letter.upper(), repr('-'))})",
        f"return {s}.split({d.pick(repr(' '), letter)})",
        f"return {s} + {d.word()}",
        f"return {d.word()} + ' ' + {s}",
        f"return {s} * {d.int(2, 4)}",
        f"return {s}.upper().count({letter.upper()})",
    )


def _slice(d: Draw) -> str:
    x = d.param(d.pick("word", "sentence", "ints", "words"))
    start, stop = (d.pick("", str(d.int(1, 5)), str(-d.int(1, 3))) for _ in range(2))
    step = d.pick("", "", ":2", ":-1", ":3")
    return d.pick(
        f"return {x}[{start}:{stop}{step}]",
        f"return {x}[::-1]",
        f"return {x}[{d.pick('0', '-1', '1', str(d.int(1, 3)))}]",
        f"return {x}[len({x}) // 2:]",
        f"return {x} == {x}[::-1]",
    )


def _builtin(d: Draw) -> str:
    kind = d.pick("ints", "ints", "words", "word")
    xs = d.param(kind)
    return d.pick(
        f"return len({xs})",
        f"return sorted({xs})",
        f"return sorted({xs}, reverse=True)",
        f"return max({xs})",
        f"return min({xs})",
        f"return list(reversed({xs}))",
        f"return len(set({xs}))",
        f"return sorted(set({xs}))",
        f"return list(enumerate({xs}))",
        f"return sum({xs})" if kind == "ints" else f"return len({xs}) * {d.int(2, 5)}",
    )


def _comprehension(d: Draw) -> str:
    if d.rng.random() < 0.5:
        xs, v = d.param("ints"), d.name(ITEMS["ints"])
        k = d.int(1, 10)
        expr = d.pick(
            f"{v} * {k}",
            f"{v} + {k}",
            f"{v} % {k}",
            f"-{v}",
            f"abs({v})",
            f"{v} * {v}",
            f"str({v})",
        )
        cond = d.pick(
            "", f" if {v} > {k}", f" if {v} % 2 == 0", f" if {v} != {k}", f" if {v} < {k}"
        )
    else:
        xs, v = d.param("words"), d.name(ITEMS["words"])
        k = d.int(2, 6)
        expr = d.pick(
            f"{v}.upper()", f"len({v})", f"{v}[0]", f"{v}[::-1]", f"{v} + 's'", f"{v}[:{k}]"
        )
        letter = repr(d.rng.choice(string.ascii_lowercase))
        cond = d.pick(
            "", f" if len({v}) > {k}", f" if {v}.startswith({letter})", f" if {letter} in {v}"
        )
    if d.rng.random() < 0.2:
        return f"return {{{v}: {expr} for {v} in {xs}{cond}}}"
    return f"return [{expr} for {v} in {xs}{cond}]"


def _characters(d: Draw) -> str:
    s, c = d.param(d.pick("word", "sentence")), d.name(CHARS)
    group = d.pick("'aeiou'", d.letters())
    return d.pick(
        f"return sum(1 for {c} in {s} if {c} in {group})",
        f"return ''.join({c} for {c} in {s} if {c} not in {group})",
        f"return [ord({c}) - ord('a') for {c} in {s}]",
        f"return ''.join(sorted({s}))",
        f"return {s}.count(' ') + 1",
        f"return [{c} for {c} in {s} if {c}.isupper()]",
    )


def _letter(d: Draw) -> str:
    c = d.param("letter")
    return d.pick(
        f"return chr(ord({c}) + {d.int(1, 5)})",
        f"return ord({c}) - ord('a')",
        f"return {c}.isupper()",
        f"return 'abcdefghijklmnopqrstuvwxyz'.find({c})",
        f"return {c} in 'aeiou'",
    )


def _accumulate(d: Draw) -> str:
    xs, acc = d.param("ints"), d.name(LOCALS)
    v, k = d.name(ITEMS["ints"]), d.int(0, 9)
    start, update = d.pick(("0", f"{acc} += {v}"), ("0", f"{acc} += 1"), ("1", f"{acc} *= {v}"))
    lines = [f"{acc} = {start}", f"for {v} in {xs}:"]
    if d.rng.random() < 0.6:
        cond = d.pick(f"{v} > {k}", f"{v} < {k}", f"{v} != {k}", f"{v} % 2 == 0")
        lines += [f"    if {cond}:", f"        {update}"]
    else:
        lines += [f"    {update}"]
    return "\n".join([*lines, f"return {acc}"])


def _best(d: Draw) -> str:
    kind = d.pick("ints", "words")
    xs, best, v = d.param(kind), d.name(LOCALS), d.name(["x", "item", "v"])
    new, old = (f"len({v})", f"len({best})") if kind == "words" else (v, best)
    cmp = d.pick(">", "<")
    return "\n".join(
        [
            f"{best} = {xs}[0]",
            f"for {v} in {xs}:",
            f"    if {new} {cmp} {old}:",
            f"        {best} = {v}",
            f"return {best}",
        ]
    )


def _build_string(d: Draw) -> str:
    s, out, c = d.param(d.pick("word", "sentence")), d.name(LOCALS), d.name(CHARS)
    test = d.pick(f"{c} != ' '", f"{c} in 'aeiou'", f"{c}.isalpha()", f"{c} not in {d.letters()}")
    grow = d.pick(c, f"{c}.upper()", f"{c} * 2", f"{c} + '-'")
    body = [f"{out} = ''", f"for {c} in {s}:", f"    if {test}:", f"        {out} += {grow}"]
    return "\n".join([*body, f"return {out}"])


def _while(d: Draw) -> str:
    n, steps = d.param("nat"), d.name(["steps", "count", "k", "digits"])
    div = d.pick(2, 10, 3)
    return "\n".join(
        [
            f"{steps} = 0",
            f"while {n} > 0:",
            f"    {n} //= {div}",
            f"    {steps} += 1",
            f"return {steps}",
        ]
    )


def _counter(d: Draw) -> str:
    kind = d.pick("words", "word", "sentence", "ints")
    xs = d.param(kind)
    counts, v = d.name(["counts", "freq", "seen", "tally"]), d.name(["x", "item", "key", "c"])
    source = f"{xs}.split()" if kind == "sentence" else xs
    loop = [f"{counts} = {{}}", f"for {v} in {source}:"]
    loop += [
        d.pick(
            f"    {counts}[{v}] = {counts}.get({v}, 0) + 1", f"    {counts}[{v}] = len(str({v}))"
        )
    ]
    end = d.pick(
        f"return {counts}",
        f"return len({counts})",
        f"return max({counts}.values())",
        f"return sorted({counts})",
        f"return [k for k in {counts} if {counts}[k] > 1]",
    )
    return "\n".join([*loop, end])


def _lookup(d: Draw) -> str:
    table, k = d.param("counts"), d.int(1, 20)
    return d.pick(
        f"return {table}.get({d.word()}, 0)",
        f"return sum({table}.values())",
        f"return sorted({table})",
        f"return len({table})",
        f"return max({table}, key={table}.get)",
        f"return [key for key, val in {table}.items() if val > {k}]",
        f"return {{key: val * {d.int(2, 5)} for key, val in {table}.items()}}",
        f"return {{val: key for key, val in {table}.items()}}",
        f"return sorted({table}.items())",
    )


def _conditional(d: Draw) -> str:
    x = d.param("int")
    low, high = sorted(d.rng.sample(range(-10, 200), 2))
    a, b, c = d.rng.sample(VOCABULARY, 3)
    if d.rng.random() < 0.4:
        return f"return {a!r} if {x} > {low} else {b!r}"
    return "\n".join(
        [
            f"if {x} < {low}:",
            f"    return {a!r}",
            f"{d.pick('elif', 'if')} {x} < {high}:",
            f"    return {b!r}",
            f"return {c!r}",
        ]
    )


def _pairs(d: Draw) -> str:
    kind = d.pick("ints", "words")
    xs, ys = d.param("ints"), d.param(kind)
    a, b = d.name(["a", "x", "p"]), d.name(["b", "y", "q"])
    return d.pick(
        f"return list(zip({xs}, {ys}))",
        f"return [{a} for {a}, {b} in zip({xs}, {ys})]",
        f"return [i for i, {a} in enumerate({xs}) if {a} > {d.int(0, 9)}]",
        f"return {xs} + {ys}" if kind == "ints" else f"return dict(zip({ys}, {xs}))",
        f"return len({xs}) + len({ys})",
    )


def _keyed(d: Draw) -> str:
    xs = d.param("words")
    return d.pick(
        f"return max({xs}, key=len)",
        f"return min({xs}, key=len)",
        f"return sorted({xs}, key=len)",
        f"return sorted({xs}, key=str.lower)",
        f"return ' '.join({xs})",
        f"return {d.pick(repr(', '), repr('-'), repr(''))}.join(sorted({xs}))",
        f"return [len(w) for w in {xs}]",
    )


def _math_loop(d: Draw) -> str:
    n, acc, i = d.param("small"), d.name(LOCALS), d.name(["i", "k", "j"])
    start, update = d.pick(
        ("1", f"{acc} *= {i}"), ("0", f"{acc} += {i}"), ("0", f"{acc} += {i} * {i}")
    )
    return "\n".join(
        [f"{acc} = {start}", f"for {i} in range(1, {n} + 1):", f"    {update}", f"return {acc}"]
    )


def _grid(d: Draw) -> str:
    grid, row = d.param("matrix"), d.name(["row", "r", "line"])
    return d.pick(
        f"return [{row}[0] for {row} in {grid}]",
        f"return sum(sum({row}) for {row} in {grid})",
        f"return [max({row}) for {row} in {grid}]",
        f"return len({grid}) * len({grid}[0])",
    )


#: Every template, drawn uniformly.
TEMPLATES: tuple[Callable[[Draw], str], ...] = (
    _arithmetic,
    _digits,
    _string_method,
    _slice,
    _builtin,
    _comprehension,
    _characters,
    _letter,
    _accumulate,
    _best,
    _build_string,
    _while,
    _counter,
    _lookup,
    _conditional,
    _pairs,
    _keyed,
    _math_loop,
    _grid,
)


class IdiomGenerator:
    """Writes short natural programs, one idiom each (see the module docstring).

    Args:
        rng: Source of randomness (seed it for a reproducible stream).
    """

    def __init__(self, *, rng: random.Random) -> None:
        self.rng = rng

    def program(self) -> IdiomProgram:
        """One program from a uniformly drawn template."""
        draw = Draw(self.rng)
        body = self.rng.choice(TEMPLATES)(draw)
        params = ", ".join(name for name, _ in draw.params)
        indented = "\n".join(f"    {line}" for line in body.splitlines())
        return IdiomProgram(f"def f({params}):\n{indented}", tuple(kind for _, kind in draw.params))
