"""Task types and answer checking: code_o by value, code_i by running f(answer), code_f on hidden pairs."""

from __future__ import annotations

import pytest

from redqueen.verifiers import (
    TASK_TYPES,
    AnswerStatus,
    CodeTask,
    Triplet,
    check_answer,
    check_answers,
    make_task,
    validate_program,
)

MOD3 = "def f(a):\n    return a % 3"


def test_task_types_and_triplet():
    assert TASK_TYPES == ("code_o", "code_i", "code_f")
    task = make_task("code_o", MOD3, ["7"], ["1"])
    assert task.triplet == Triplet(MOD3, "7", "1")
    assert task.n_visible == 0 and task.hidden_pairs == (("7", "1"),)


def test_code_f_default_visible_half_and_pairs():
    inputs = [str(i) for i in range(10)]
    outputs = [str(i % 3) for i in range(10)]
    task = make_task("code_f", MOD3, inputs, outputs)
    assert task.n_visible == 5
    assert task.visible_pairs == tuple(zip(inputs[:5], outputs[:5], strict=True))
    assert task.hidden_pairs == tuple(zip(inputs[5:], outputs[5:], strict=True))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("code_x", MOD3, ["1"], ["1"]), "task_type"),
        (("code_o", MOD3, ["1", "2"], ["1", "2"]), "exactly one pair"),
        (("code_o", MOD3, ["1"], []), "inputs/outputs"),
        (("code_f", MOD3, ["1", "2"], ["1", "2"], 2), "n_visible"),
        (("code_f", MOD3, ["1", "2"], ["1", "2"], 0), "n_visible"),
    ],
)
def test_bad_tasks_are_refused_with_the_field_named(args, match):
    with pytest.raises(ValueError, match=match):
        CodeTask(*args)


def test_code_o_compares_values_not_text(executor):
    task = make_task(
        "code_o",
        "def f(x):\n    return {'a': [1, 2.0], 'b': (3,)}",
        ["0"],
        ["{'a': [1, 2.0], 'b': (3,)}"],
    )
    answers = [
        "{'b': (3,), 'a': [1, 2.0]}",
        " {'a':[1,2.0],'b':(3,)} ",
        "{'a': [1, 2.0], 'b': [3]}",
        "{'b': (3,), 'a': [1, 2]}",  # 2 is not the float 2.0 the program returns
        "{'a': [1, 2]",
        None,
        "f(0)",
    ]
    assert check_answers([(task, a) for a in answers], executor) == [
        AnswerStatus.CORRECT,
        AnswerStatus.CORRECT,
        AnswerStatus.WRONG,
        AnswerStatus.WRONG,
        AnswerStatus.UNPARSEABLE,
        AnswerStatus.UNPARSEABLE,
        AnswerStatus.UNPARSEABLE,
    ]


def test_code_i_accepts_any_input_that_gives_the_gold_output(executor):
    program = "def f(xs, k):\n    return sum(xs) % k"
    validation = validate_program(program, ["[4, 5], 3"], executor)
    task = make_task("code_i", program, ["[4, 5], 3"], validation.outputs)
    answers = [
        "[4, 5], 3",
        "[0], 3",
        "[10], 5",
        "[1], 3",
        "xs=[9], k=9",
        "[1, 2]",
        "[1], 3)",
        "*[1, 2]",
        "[1], len",
    ]
    assert check_answers([(task, a) for a in answers], executor) == [
        AnswerStatus.CORRECT,
        AnswerStatus.CORRECT,
        AnswerStatus.CORRECT,
        AnswerStatus.WRONG,
        AnswerStatus.CORRECT,
        AnswerStatus.WRONG,
        AnswerStatus.UNPARSEABLE,
        AnswerStatus.UNPARSEABLE,
        AnswerStatus.UNPARSEABLE,
    ]


def test_code_i_answer_cannot_smuggle_code(executor):
    task = make_task("code_i", MOD3, ["4"], ["1"])
    for answer in (
        "__import__('os').getpid() * 0 + 1",
        "1) or (1",
        "(lambda: 1)()",
        "1 if True else 0",
    ):
        assert check_answer(task, answer, executor) == AnswerStatus.UNPARSEABLE


def test_code_f_is_judged_on_hidden_pairs_only(executor):
    program = "def f(n):\n    return n * n"
    inputs = [str(i) for i in range(6)]
    outputs = validate_program(program, inputs, executor).outputs
    task = make_task("code_f", program, inputs, outputs, n_visible=3)
    memorises_visible = "def f(n):\n    return {0: 0, 1: 1, 2: 4}.get(n, -1)"
    memorises_hidden = "def f(n):\n    return {3: 9, 4: 16, 5: 25}.get(n, -1)"
    answers = [
        "def f(n):\n    return n ** 2",
        memorises_visible,
        memorises_hidden,  # right on every hidden pair: correct by construction of the task
        "def square(n):\n    return n * n",
        "def f(n):\n    return n *",
        "import os\ndef f(n):\n    return n * n",
        "def f(n):\n    while n == 5:\n        pass\n    return n * n",
    ]
    assert check_answers([(task, a) for a in answers], executor) == [
        AnswerStatus.CORRECT,
        AnswerStatus.WRONG,
        AnswerStatus.CORRECT,
        AnswerStatus.UNPARSEABLE,
        AnswerStatus.UNPARSEABLE,
        AnswerStatus.WRONG,
        AnswerStatus.WRONG,
    ]


def test_check_answer_matches_batch_and_rejects_non_tasks(executor):
    task = make_task("code_o", MOD3, ["4"], ["1"])
    assert check_answer(task, "1", executor) is AnswerStatus.CORRECT
    assert str(AnswerStatus.WRONG) == "wrong"
    with pytest.raises(TypeError, match="CodeTask"):
        check_answers([("code_o", "1")], executor)


@pytest.mark.parametrize(
    ("program", "outputs", "error", "match"),
    [
        (
            "def f(x):\n    return x",
            ["nan"],
            ValueError,
            r"CodeTask.outputs\[0\]: 'nan' is not a literal",
        ),
        ("def f(x):\n    return x", [None], TypeError, r"CodeTask.outputs\[0\]: must be a string"),
        (None, ["1"], TypeError, "CodeTask.program: must be source text"),
    ],
)
def test_a_malformed_task_is_refused_when_built_not_when_judged(program, outputs, error, match):
    with pytest.raises(error, match=match):
        make_task("code_o", program, ["1"], outputs)
