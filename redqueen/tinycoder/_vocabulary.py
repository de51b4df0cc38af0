"""What an idiom program is made of: an everyday vocabulary, the names people give, and values.

:func:`natural_value` draws an input of a parameter kind in the ranges people use; a
:class:`Draw` hands one template (:mod:`redqueen.tinycoder.idioms`) distinct parameter and
local names, constants, words and operators.
"""

from __future__ import annotations

import random
import string

__all__ = [
    "CAPITALISED",
    "CHARS",
    "ITEMS",
    "LOCALS",
    "NAMES",
    "VOCABULARY",
    "Draw",
    "natural_value",
]

VOCABULARY = """
apple pear plum cherry melon peach lime fig kiwi berry bread milk rice salt sugar tea
cat dog fox owl bee ant cow pig duck goat wolf bear lion crab frog
red blue green gold pink gray white black
north south east west river lake hill road park city town farm shop
sun moon star rain snow wind cloud storm
book pen desk door key lamp cup box bag hat coat shoe ring
one two three four five six seven eight nine ten
alpha beta gamma delta omega
happy sad fast slow big small hot cold new old
hello world python code data value item list name word text line
""".split()
CAPITALISED = [
    "Alice",
    "Bob",
    "Carol",
    "Dave",
    "Eve",
    "Paris",
    "London",
    "Tokyo",
    "Monday",
    "June",
]

NAMES = {
    "int": ["n", "x", "num", "k", "value", "amount", "year", "size", "limit", "total"],
    "nat": ["n", "num", "number", "x", "value"],
    "small": ["n", "k", "times", "count", "steps", "depth"],
    "word": ["word", "s", "name", "text", "w", "label", "token"],
    "sentence": ["sentence", "text", "line", "s", "phrase", "message"],
    "ints": ["nums", "numbers", "values", "xs", "data", "scores", "prices", "items", "arr", "lst"],
    "words": ["words", "names", "items", "tokens", "fruits", "tags", "animals"],
    "counts": ["counts", "stock", "scores", "prices", "inventory", "ages", "table", "d"],
    "matrix": ["grid", "matrix", "rows", "table", "board"],
    "letter": ["c", "ch", "letter", "char"],
}
LOCALS = ["total", "result", "count", "acc", "out", "best", "answer", "res", "s", "value"]
ITEMS = {"ints": ["n", "x", "v", "num", "item", "p"], "words": ["w", "word", "name", "item", "t"]}
CHARS = ["c", "ch", "letter", "char"]


def natural_value(kind: str, rng: random.Random) -> str:
    """A random input value of ``kind`` as Python source, in the ranges people use.

    Raises:
        ValueError: On an unknown kind.
    """
    if kind == "int":
        return repr(rng.choice([rng.randint(-20, 20), rng.randint(0, 500), rng.randint(0, 99999)]))
    if kind == "nat":
        return repr(rng.choice([rng.randint(0, 99), rng.randint(100, 9999), rng.randint(0, 10**6)]))
    if kind == "small":
        return repr(rng.randint(0, 12))
    if kind == "word":
        return repr(_word(rng))
    if kind == "sentence":
        return repr(" ".join(_word(rng) for _ in range(rng.randint(1, 6))))
    if kind == "ints":
        high = rng.choice([9, 50, 1000])
        return repr([rng.randint(-high // 3, high) for _ in range(rng.randint(1, 7))])
    if kind == "words":
        return repr([_word(rng) for _ in range(rng.randint(1, 6))])
    if kind == "counts":
        keys = rng.sample(VOCABULARY, rng.randint(1, 5))
        return repr({key: rng.randint(0, rng.choice([9, 100])) for key in keys})
    if kind == "matrix":
        width = rng.randint(1, 4)
        return repr([[rng.randint(-9, 30) for _ in range(width)] for _ in range(rng.randint(1, 4))])
    if kind == "letter":
        return repr(rng.choice(string.ascii_letters))
    raise ValueError(f"natural_value: unknown kind {kind!r}")


def _word(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.7:
        return rng.choice(VOCABULARY)
    if roll < 0.85:
        return rng.choice(CAPITALISED)
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 9)))


class Draw:
    """Names and constants for one program: distinct parameter and local names."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()
        self.params: list[tuple[str, str]] = []

    def name(self, pool: list[str]) -> str:
        free = [n for n in pool if n not in self.used] or [f"{pool[0]}{len(self.used)}"]
        chosen = self.rng.choice(free)
        self.used.add(chosen)
        return chosen

    def param(self, kind: str) -> str:
        name = self.name(NAMES[kind])
        self.params.append((name, kind))
        return name

    def int(self, low: int = 2, high: int = 12) -> int:
        # Now and then a constant past the usual range, as people write 100 or 365.
        return self.rng.randint(low, high * (10 if self.rng.random() < 0.3 else 1))

    def word(self) -> str:
        return repr(self.rng.choice(VOCABULARY))

    def letters(self) -> str:
        return repr(
            "".join(sorted(self.rng.sample(string.ascii_lowercase, self.rng.randint(1, 5))))
        )

    def pick(self, *options):
        return self.rng.choice(options)
