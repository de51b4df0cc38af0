"""validate_program and check_source: every rejection carries its reason code."""

from __future__ import annotations

import pytest

from redqueen.verifiers import (
    AnswerStatus,
    RejectReason,
    Validation,
    check_answers,
    check_source,
    make_task,
    validate_program,
    validate_programs,
)

GOOD = "def f(xs, k):\n    return sorted(xs)[:k]"


def test_valid_program_gets_gold_outputs_from_execution(executor):
    result = validate_program(GOOD, ["[3, 1, 2], 2", "[], 1", "xs=[5, 4], k=1"], executor)
    assert result == Validation(ok=True, reason=None, detail="", outputs=("[1, 2]", "[]", "[4]"))


def test_helpers_and_classes_are_allowed(executor):
    program = (
        "import math\nfrom collections import deque\n"
        "class Acc:\n    def __init__(self):\n        self.total = 0\n"
        "    def add(self, x):\n        self.total += x\n        return self\n"
        "def helper(x):\n    return math.isqrt(x)\n"
        "def f(xs):\n    acc = Acc()\n    for x in deque(xs):\n        acc.add(helper(x))\n    return acc.total"
    )
    assert validate_program(program, ["[4, 9, 16]"], executor).outputs == ("9",)


@pytest.mark.parametrize(
    ("program", "reason"),
    [
        ("", RejectReason.EMPTY),
        ("def f(:\n    pass", RejectReason.SYNTAX_ERROR),
        ("def g(x):\n    return x", RejectReason.NO_ENTRY_FUNCTION),
        ("f = lambda x: x", RejectReason.NO_ENTRY_FUNCTION),
        ("import os\ndef f(x):\n    return x", RejectReason.BANNED_IMPORT),
        ("def f(x):\n    import subprocess\n    return x", RejectReason.BANNED_IMPORT),
        ("from os.path import join\ndef f(x):\n    return x", RejectReason.BANNED_IMPORT),
        ("import random\ndef f(x):\n    return random.random()", RejectReason.BANNED_IMPORT),
        ("import time\ndef f(x):\n    return time.time()", RejectReason.BANNED_IMPORT),
        ("def f(x):\n    return open('/etc/passwd').read()", RejectReason.BANNED_CALL),
        ("def f(x):\n    return eval('1 + x')", RejectReason.BANNED_CALL),
        ("def f(x):\n    return __import__('o' + 's')", RejectReason.BANNED_CALL),
        ("def f(x):\n    return globals()", RejectReason.BANNED_CALL),
        ("def f(x):\n    return id(object()) + x", RejectReason.BANNED_CALL),
        ("def f(x):\n    return hash(object()) % 1000 + x", RejectReason.BANNED_CALL),
        ("def f(x):\n    return getattr(x, 'imag')", None),
        ("def f(x):\n    return getattr(x, '__class__')", RejectReason.DUNDER_ACCESS),
        ("def f(x):\n    return getattr(x, '_' * 2 + 'class' + '_' * 2)", RejectReason.BANNED_CALL),
        (
            "def f(x):\n    return ().__class__.__base__.__subclasses__()",
            RejectReason.DUNDER_ACCESS,
        ),
        ("def f(x):\n    return f.__globals__", RejectReason.DUNDER_ACCESS),
        ("def f(x):\n    return __builtins__", RejectReason.DUNDER_ACCESS),
        (
            "import operator\ndef f(x):\n    return operator.attrgetter('__class__')(x)",
            RejectReason.DUNDER_ACCESS,
        ),
        ("def f(x):\n    return x\n" + "#" * 5000, RejectReason.SOURCE_TOO_LARGE),
    ],
)
def test_static_rejections(program, reason):
    result = check_source(program)
    if reason is None:
        assert result.ok
    else:
        assert (result.ok, result.reason) == (False, reason), result.detail
        assert result.detail


def test_reason_codes_are_strings():
    assert RejectReason.BANNED_IMPORT == "banned_import"
    assert str(RejectReason.TIMEOUT) == "timeout"


@pytest.mark.parametrize(
    ("program", "inputs", "reason"),
    [
        (GOOD, [], RejectReason.NO_INPUTS),
        (GOOD, ["[1], len"], RejectReason.INPUT_NOT_LITERAL),
        (GOOD, ["*[1, 2]"], RejectReason.INPUT_NOT_LITERAL),
        (GOOD, ["[1], 1", "[1],1"], RejectReason.DUPLICATE_INPUT),
        (GOOD, ["[" + "1, " * 600 + "], 1"], RejectReason.INPUT_TOO_LARGE),
        ("def f(x):\n    return 1 // x", ["0"], RejectReason.RUNTIME_ERROR),
        ("def f(x):\n    while True:\n        x += 1", ["0"], RejectReason.TIMEOUT),
        ("def f(x):\n    return lambda: x", ["0"], RejectReason.OUTPUT_NOT_LITERAL),
        ("def f(x):\n    return float('nan')", ["0"], RejectReason.OUTPUT_NOT_LITERAL),
        ("def f(x):\n    return 'a' * x", ["5000"], RejectReason.OUTPUT_TOO_LARGE),
    ],
)
def test_dynamic_rejections(executor, program, inputs, reason):
    result = validate_program(program, inputs, executor)
    assert (result.ok, result.reason) == (False, reason), result.detail
    assert result.outputs == ()


# ``id`` and ``hash`` are refused before anything runs (test_static_rejections); an address
# still shows in the repr of an object without its own, so the two runs must catch these.
NONDETERMINISTIC = {
    "repr_address_number": "def f(x):\n    return int(repr(object())[-13:-1], 16) // 16 + x",
    "object_set_order": (
        "class Node:\n    def __init__(self, v):\n        self.v = v\n"
        "def f(n):\n    return [node.v for node in {Node(i) for i in range(n)}]"
    ),
    "repr_address": "def f(x):\n    return str(object())",
    # Fifty objects made one after another: in address order they fill a run of a set's table,
    # and only where that run wraps does the set's order show the addresses.
    "object_set_rotation": (
        "def f(n):\n    xs = [object() for i in range(n)]\n    return [xs.index(o) for o in set(xs)]"
    ),
}


@pytest.mark.parametrize("name", sorted(NONDETERMINISTIC))
def test_nondeterministic_programs_are_rejected_every_time(executor, name):
    inputs = {"object_set_order": ["100"], "object_set_rotation": ["50"]}.get(name, ["1"])
    for _ in range(3):
        result = validate_program(NONDETERMINISTIC[name], inputs, executor)
        assert (result.ok, result.reason) == (False, RejectReason.NONDETERMINISTIC), result.detail


def test_string_sets_are_deterministic_under_the_fixed_hash_seed(executor):
    program = "def f(n):\n    return list({str(i) * 2 for i in range(n)})"
    first = validate_program(program, ["30"], executor)
    second = validate_program(program, ["30"], executor)
    assert first.ok and first.outputs == second.outputs


def test_inputs_must_be_a_sequence_of_strings(executor):
    with pytest.raises(TypeError, match="inputs"):
        validate_program(GOOD, "[1], 1", executor)


def test_an_int_too_long_to_write_back_is_rejected_not_raised(executor):
    # With limits above the defaults, a hex literal (input or output) fits, but its value has
    # no decimal repr: validation rejects it instead of raising from the round trip.
    long_hex = "0x" + "f" * 4000
    program = (
        f"class H:\n    def __repr__(self):\n        return '{long_hex}'\ndef f(x):\n    return H()"
    )
    limits = {"max_output_chars": 10_000, "max_input_chars": 10_000, "max_source_chars": 10_000}
    result = validate_program(program, ["1"], executor, **limits)
    assert result.reason is RejectReason.OUTPUT_NOT_LITERAL
    result = validate_program("def f(x):\n    return 1", [long_hex], executor, **limits)
    assert result.reason is RejectReason.INPUT_NOT_LITERAL


@pytest.mark.parametrize("text", ["1e999", "[1, -1e999j]", "(1, ...)"])
def test_an_output_whose_value_has_no_literal_form_is_rejected_not_raised(executor, text):
    # The program's __repr__ writes a literal whose value (inf, Ellipsis) writes back as a
    # non-literal: the round trip rejects the output instead of raising out of validation.
    program = (
        f"class H:\n    def __repr__(self):\n        return {text!r}\ndef f(x):\n    return H()"
    )
    result = validate_program(program, ["1"], executor)
    assert result.reason is RejectReason.OUTPUT_NOT_LITERAL


def test_batched_validation_matches_one_at_a_time(executor):
    items = [
        (GOOD, ["[3, 1, 2], 2", "[], 1"]),
        ("import os\ndef f(x):\n    return x", ["1"]),
        ("def f(x):\n    return 1 // x", ["1", "0"]),
        ("def f(s):\n    return s[::-1]", ["'abc'"]),
        (NONDETERMINISTIC["repr_address_number"], ["1"]),
    ]
    batched = validate_programs(items, executor)
    assert batched == [validate_program(p, i, executor) for p, i in items[:4]] + [batched[4]]
    assert [v.reason for v in batched] == [
        None,
        RejectReason.BANNED_IMPORT,
        RejectReason.RUNTIME_ERROR,
        None,
        RejectReason.NONDETERMINISTIC,
    ]
    assert batched[3].outputs == ("'cba'",)
    assert validate_programs([], executor) == []


def test_gold_outputs_belong_to_the_inputs_as_written(executor):
    # ``-1j`` is complex(-0.0, -1.0); its repr, ``(-0-1j)``, reads back as complex(0.0, -1.0).
    # The gold must be what the task's own input gives, as check_answers runs it.
    program = "def f(z):\n    return str(z)\n"
    result = validate_program(program, ["1", "-1j"], executor)
    assert result.ok, result.detail
    assert result.outputs == ("'1'", "'(-0-1j)'")
    code_o = make_task("code_o", program, ["-1j"], result.outputs[1:])
    code_i = make_task("code_i", program, ["-1j"], result.outputs[1:])
    code_f = make_task("code_f", program, ["1", "-1j"], result.outputs, n_visible=1)
    cheat = "def f(z):\n    return '1' if z == 1 else '-1j'\n"
    statuses = check_answers(
        [(code_o, "'(-0-1j)'"), (code_i, "-1j"), (code_f, program), (code_f, cheat)], executor
    )
    assert statuses == [AnswerStatus.CORRECT] * 3 + [AnswerStatus.WRONG]


@pytest.mark.parametrize("text", ["[1, 2]  # the answer", "[1,\n 2]", "'a'\t", "5 #"], ids=repr)
def test_an_output_written_with_a_comment_or_a_line_break_is_refused(executor, text):
    # Such text parses as a literal, but no builtin value's repr holds it; as a gold output it
    # would carry the program's words into prompts.
    program = (
        f"class H:\n    def __repr__(self):\n        return {text!r}\ndef f(x):\n    return H()"
    )
    result = validate_program(program, ["1"], executor)
    assert result.reason is RejectReason.OUTPUT_NOT_LITERAL, result
    assert "comment" in result.detail


def test_outputs_with_a_hash_or_unicode_inside_strings_are_kept(executor):
    program = "def f(s):\n    return [s + '#1', 'é', {'#': s}]"
    result = validate_program(program, ["'x'"], executor)
    assert result.ok and result.outputs == ("['x#1', 'é', {'#': 'x'}]",)


def test_an_exception_whose_message_raises_is_reported_by_its_type(executor):
    program = (
        "class Boom(Exception):\n    def __str__(self):\n        raise ValueError('no')\n"
        "def f(x):\n    raise Boom()"
    )
    result = validate_program(program, ["1"], executor)
    assert result.reason is RejectReason.RUNTIME_ERROR
    assert "Boom" in result.detail, result.detail
