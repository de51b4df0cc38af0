"""Canonical forms: equal up to names and formatting, different otherwise."""

from __future__ import annotations

import pytest

from redqueen.tinycoder.canonical import canonical_form, canonical_key

BASE = "def g(v):\n    return v * 2\n\n\ndef f(x, s):\n    a = len(s) + g(x)\n    return [a for i in range(a)]"
RENAMED = (
    "def helper(value):   return (value*2)\n"
    "def f(n, word):\n"
    "    total = (len(word) + helper(n))  # a comment\n"
    "    return [total for k in range(total)]\n"
)


def test_names_and_formatting_do_not_matter() -> None:
    assert canonical_form(BASE) == canonical_form(RENAMED)
    assert canonical_key(BASE) == canonical_key(RENAMED)
    assert len(canonical_key(BASE)) == 16
    quoted = 'def f(s):\n    return s + "ab"'
    assert canonical_key(quoted) == canonical_key("def f(t):\n    return t + 'ab'")


def test_structure_constants_builtins_and_entry_name_matter() -> None:
    others = [
        BASE.replace("* 2", "* 3"),
        BASE.replace("len(s)", "sum(s)"),
        BASE.replace("len(s) + g(x)", "g(x) + len(s)"),
        BASE.replace("def f(", "def main("),
    ]
    keys = {canonical_key(BASE)} | {canonical_key(o) for o in others}
    assert len(keys) == 1 + len(others)


def test_parameter_order_matters_but_consistent_swaps_do_not() -> None:
    a = "def f(x, y):\n    return x - y"
    b = "def f(p, q):\n    return p - q"
    c = "def f(x, y):\n    return y - x"
    assert canonical_key(a) == canonical_key(b) != canonical_key(c)


def test_shadowed_builtin_is_renamed_like_any_local() -> None:
    a = "def f(x):\n    len = x + 1\n    return len"
    b = "def f(x):\n    y = x + 1\n    return y"
    assert canonical_key(a) == canonical_key(b)


def test_syntax_error_propagates() -> None:
    with pytest.raises(SyntaxError):
        canonical_key("def f(:\n")
