"""Literal parsing/comparison (property-based) and complexity metrics."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redqueen.verifiers import (
    COMPLEXITY_KEYS,
    LiteralParseError,
    complexity,
    format_args,
    literal_equal,
    parse_args,
    parse_literal,
    values_equal,
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.floats(allow_nan=False, allow_infinity=False),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.integers(), st.text(max_size=4)), inner, max_size=4),
        st.frozensets(st.integers(), max_size=4).map(set),
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(values)
def test_repr_round_trips_through_parse_literal(value):
    assert values_equal(parse_literal(repr(value)), value)
    assert literal_equal(repr(value), repr(value))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(values, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "k"]), values, max_size=2),
)
def test_format_args_inverts_parse_args(args, kwargs):
    parsed_args, parsed_kwargs = parse_args(format_args(tuple(args), kwargs))
    assert values_equal(list(parsed_args), list(args)) and parsed_kwargs.keys() == kwargs.keys()
    assert all(values_equal(parsed_kwargs[k], kwargs[k]) for k in kwargs)


def test_literal_equal_semantics():
    assert literal_equal("[1, 2]", " [1,2] ")
    assert not literal_equal("1", "1.0")  # types count: tests/verifiers/test_typed_equality.py
    assert literal_equal("{1, 2}", "{2, 1}")
    assert literal_equal("set()", "set()")
    assert not literal_equal("[1, 2]", "(1, 2)")
    assert not literal_equal("True", "1")
    assert not literal_equal("f(1)", "f(1)")
    assert not literal_equal("'a'", "'b'")
    assert values_equal(float("nan"), float("nan")) and not values_equal(math.inf, 1.0)


@pytest.mark.parametrize(
    "text", ["x", "1 +", "__import__('os')", "[1, len]", "lambda: 1", "a" * 200_000]
)
def test_parse_literal_refuses_code(text):
    with pytest.raises(LiteralParseError):
        parse_literal(text)


def test_an_int_too_long_to_write_in_decimal_is_not_a_literal():
    # Base 16 escapes the parser's decimal digit limit; repr of the int would then raise.
    long_hex = "0x" + "f" * 4000
    for text in (long_hex, f"[1, -{long_hex}]", f"{{'a': {long_hex}}}"):
        with pytest.raises(LiteralParseError):
            parse_literal(text)
    with pytest.raises(LiteralParseError):
        parse_args(f"1, k={long_hex}")
    assert parse_literal("0x10") == 16 and parse_literal("'0x" + "f" * 4000 + "'")
    assert parse_args("0b101, 0o7") == ((5, 7), {})


@pytest.mark.parametrize(
    "text",
    [
        "1e999",
        "[1, -1e999]",
        "{'a': 2e400j}",
        "1" * 400 + ".0",
        "...",
        "1.e999",
        "[1., -2.E999j]",
        "1_" * 400 + "1.0",
    ],
)
def test_a_value_whose_repr_is_not_a_literal_is_not_a_literal(text):
    # 1e999 parses to inf and ... to Ellipsis, whose reprs ('inf', 'Ellipsis') do not parse; so
    # do an exponent after a bare point and digits split by underscores.
    with pytest.raises(LiteralParseError):
        parse_literal(text)
    assert parse_literal(repr(text)) == text and parse_literal("1e300") == 1e300


def test_parse_args_forms():
    assert parse_args("[3, 1], 'ab'") == (([3, 1], "ab"), {})
    assert parse_args("") == ((), {})
    assert parse_args("1, k={'a': set()}") == ((1,), {"k": {"a": set()}})
    for bad in ("*[1]", "**{'a': 1}", "1) + (2", "x", "1,, 2"):
        with pytest.raises(LiteralParseError):
            parse_args(bad)


def test_complexity_grows_with_structure():
    simple = complexity("def f(x):\n    return x")
    branchy = complexity(
        "def helper(y):\n    return [i * y for i in range(y) if i % 2]\n"
        "def f(x):\n    total = 0\n    for i in range(x):\n        if i > 3 and i < 9:\n"
        "            total += helper(i)[0] if helper(i) else 0\n        elif i == 1:\n"
        "            total -= 1\n    return total"
    )
    assert set(simple) == set(COMPLEXITY_KEYS) and all(
        isinstance(v, float) for v in simple.values()
    )
    assert simple["cyclomatic"] == 1.0 and simple["lines"] == 2.0 and simple["n_variables"] == 1.0
    for key in (
        "ast_depth",
        "cyclomatic",
        "halstead_volume",
        "halstead_effort",
        "lines",
        "n_variables",
    ):
        assert branchy[key] > simple[key], key
    with pytest.raises(SyntaxError):
        complexity("def f(:")
