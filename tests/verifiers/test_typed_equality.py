"""Answers are equal to gold outputs only with the same types: ``True`` is not ``1``, ``1.0`` is
not ``1``, all the way down through containers, dict keys and set members."""

from __future__ import annotations

import math

import pytest

from redqueen.verifiers import (
    AnswerStatus,
    ExecResult,
    check_answers,
    literal_equal,
    make_task,
    values_equal,
)

# (answer, gold): equal as Python values, of different types somewhere.
UNEQUAL = {
    "bool_int": ("True", "1"),
    "int_bool": ("0", "False"),
    "complex_int": ("(1+0j)", "1"),
    "float_int": ("1.0", "1"),
    "int_float": ("2", "2.0"),
    "set_members": ("{True, 2}", "{1, 2}"),
    "frozen_members_in_tuple": ("(1, {0, 2})", "(1, {False, 2})"),
    "dict_keys": ("{True: 'a'}", "{1: 'a'}"),
    "dict_keys_nested": ("{(1, True): 0}", "{(1, 1): 0}"),
    "dict_float_key": ("{1.0: 'a'}", "{1: 'a'}"),
    "dict_values": ("{'a': True}", "{'a': 1}"),
    "list_items": ("[1, 2, True]", "[1, 2, 1]"),
    "tuple_items": ("(0.0, 1)", "(0, 1)"),
    "set_of_tuples": ("{(1, 2.0)}", "{(1, 2)}"),
}


@pytest.mark.parametrize("name", sorted(UNEQUAL))
def test_values_of_other_types_are_unequal(name):
    answer, gold = UNEQUAL[name]
    assert not literal_equal(answer, gold)
    assert not literal_equal(gold, answer)


EQUAL = {
    "spacing": ("[1,2]", " [1, 2] "),
    "set_order": ("{3, 1, 2}", "{1, 2, 3}"),
    "dict_order": ("{'b': 2, 'a': 1}", "{'a': 1, 'b': 2}"),
    "nested": ("{'k': [(1, 'x'), {2.5}]}", "{'k': [(1, 'x'), {2.5}]}"),
    "empty_set": ("set()", "set()"),
    "negative_zero": ("-0.0", "0.0"),
    "bools": ("[True, False]", "[True, False]"),
    "same_complex": ("(1+2j)", "(1+2j)"),
    "bytes_and_none": ("(b'x', None)", "(b'x', None)"),
}


@pytest.mark.parametrize("name", sorted(EQUAL))
def test_equal_values_of_equal_types(name):
    answer, gold = EQUAL[name]
    assert literal_equal(answer, gold)


def test_nan_equals_nan_only_as_float():
    assert values_equal(math.nan, math.nan)
    assert values_equal([math.nan], [math.nan])
    assert values_equal(complex(math.nan, 1), complex(math.nan, 1))
    assert not values_equal(math.nan, 1.0)


class _Runner:
    """Answers every run with the value the test chose, as a sandbox would."""

    def __init__(self, value: str) -> None:
        self.value = value

    def execute_many(self, pairs, *, heap_jitter=None):
        return [ExecResult(True, self.value, None, False, "") for _ in pairs]


@pytest.mark.parametrize(("answer", "gold"), [("True", "1"), ("1.0", "1"), ("{True, 2}", "{1, 2}")])
def test_code_o_answer_of_another_type_is_wrong(answer, gold):
    task = make_task("code_o", "def f(x):\n    return x", ["0"], [gold])
    assert check_answers([(task, answer)], _Runner(gold)) == [AnswerStatus.WRONG]
    assert check_answers([(task, gold)], _Runner(gold)) == [AnswerStatus.CORRECT]


@pytest.mark.parametrize(
    ("produced", "gold"), [("True", "1"), ("(1+0j)", "1"), ("{1: 0}", "{True: 0}")]
)
def test_code_i_input_giving_another_type_is_wrong(produced, gold):
    task = make_task("code_i", "def f(x):\n    return x", ["0"], [gold])
    assert check_answers([(task, "5")], _Runner(produced)) == [AnswerStatus.WRONG]
    assert check_answers([(task, "5")], _Runner(gold)) == [AnswerStatus.CORRECT]


def test_code_f_output_of_another_type_is_wrong():
    task = make_task("code_f", "def f(x):\n    return {1, 2}", ["1", "2", "3", "4"], ["{1, 2}"] * 4)
    answer = "def f(x):\n    return {True, 2}"
    assert check_answers([(task, answer)], _Runner("{True, 2}")) == [AnswerStatus.WRONG]
    assert check_answers([(task, answer)], _Runner("{1, 2}")) == [AnswerStatus.CORRECT]
