"""Prompt/answer formats: every (role, task type) pair round-trips; garbage parses to None."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redqueen.tinycoder.programs import ProgramGenerator, random_value
from redqueen.verifiers import Triplet, make_task
from redqueen.verifiers.formats import (
    N_CODE_F_INPUTS,
    PROPOSE_STOP,
    SOLVE_STOP,
    STOP_STRINGS,
    TASK_TYPES,
    Proposal,
    parse_proposal,
    parse_solution,
    propose_completion,
    propose_prompt,
    solve_completion,
    solve_prompt,
)


def _programs(n: int, seed: int = 0):
    gen = ProgramGenerator(rng=random.Random(seed))
    rng = random.Random(seed + 1)
    for i in range(n):
        prog = gen.program(1 + i % 6)
        yield prog.source, [prog.random_input(rng) for _ in range(N_CODE_F_INPUTS)]


def _n_inputs(task_type: str) -> int:
    return N_CODE_F_INPUTS if task_type == "code_f" else 1


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_proposal_round_trip_with_and_without_stop(task_type):
    for source, inputs in _programs(30):
        proposal = Proposal(task_type, source, tuple(inputs[: _n_inputs(task_type)]))
        text = propose_completion(task_type, proposal)
        assert text.endswith(PROPOSE_STOP)
        assert parse_proposal(task_type, text) == proposal
        # Samplers may strip the stop string; trailing junk after it is ignored.
        assert parse_proposal(task_type, text[: -len(PROPOSE_STOP)]) == proposal
        assert parse_proposal(task_type, text + "\n<prog>\njunk") == proposal


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_solution_round_trip(task_type):
    for source, inputs in _programs(30, seed=3):
        outputs = [repr(len(x)) for x in inputs]  # any literal works for the format itself
        if task_type == "code_f":
            task = make_task(task_type, source, inputs, outputs, n_visible=N_CODE_F_INPUTS // 2)
            gold = source
        else:
            task = make_task(task_type, source, inputs[:1], outputs[:1])
            gold = outputs[0] if task_type == "code_o" else inputs[0]
        prompt = solve_prompt(task)
        assert prompt.startswith(f"<solve {task_type}>\n") and prompt.endswith("<answer>\n")
        text = solve_completion(task)
        assert text.endswith(SOLVE_STOP)
        assert parse_solution(task_type, text) == gold
        assert parse_solution(task_type, text[: -len(SOLVE_STOP)]) == gold


def test_solve_prompt_shows_only_what_the_student_may_see():
    source = "def f(x):\n    return x * 7"
    inputs = [str(i) for i in range(N_CODE_F_INPUTS)]
    outputs = [str(7 * i) for i in range(N_CODE_F_INPUTS)]
    f_prompt = solve_prompt(make_task("code_f", source, inputs, outputs, n_visible=3))
    assert "return x * 7" not in f_prompt
    assert "<in>2</in>\n<out>14</out>" in f_prompt and "<out>35</out>" not in f_prompt
    o_prompt = solve_prompt(make_task("code_o", source, ["3"], ["21"]))
    assert "<in>3</in>" in o_prompt and "21" not in o_prompt
    i_prompt = solve_prompt(make_task("code_i", source, ["3"], ["21"]))
    assert "<out>21</out>" in i_prompt and "<in>" not in i_prompt


def test_propose_prompt_lists_references_in_order():
    refs = [
        Triplet("def f(x):\n    return x", "3", "3"),
        Triplet("def f(s):\n    return s[::-1]", "'ab'", "'ba'"),
    ]
    prompt = propose_prompt("code_i", refs)
    assert prompt.startswith("<propose code_i>\n") and prompt.endswith("<task>\n")
    assert prompt.count("<ref>") == 2
    assert prompt.index("return x") < prompt.index("return s[::-1]")
    assert "<in>'ab'</in>\n<out>'ba'</out>" in prompt


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.integers(), st.text(max_size=12), st.lists(st.integers(), max_size=4)),
        min_size=N_CODE_F_INPUTS,
        max_size=N_CODE_F_INPUTS,
    )
)
def test_code_f_inputs_survive_any_literal(values):
    proposal = Proposal("code_f", "def f(x):\n    return x", tuple(repr(v) for v in values))
    assert parse_proposal("code_f", propose_completion("code_f", proposal)) == proposal


GARBAGE = [
    "",
    "hello world",
    "<prog>\ndef f(x):\n    return x\n",  # never closed
    "<prog>\ndef f(x:\n    return x\n</prog>\n<in>1</in>\n</task>",  # not Python
    "<prog>\ndef g(x):\n    return x\n</prog>\n<in>1</in>\n</task>",  # no entry f
    "<prog>\ndef f(x):\n    return x\n</prog>\n</task>",  # no input
    "<prog>\ndef f(x):\n    return x\n</prog>\n<in>1), g(2</in>\n</task>",  # not one call
    "<prog>\ndef f(x):\n    return x\n</prog>\n<in></in>\n</task>",  # empty input
]


@pytest.mark.parametrize("text", GARBAGE)
@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_garbage_proposals_are_none(task_type, text):
    assert parse_proposal(task_type, text) is None


def test_code_f_proposal_needs_all_inputs():
    short = "<prog>\ndef f(x):\n    return x\n</prog>\n" + "<in>1</in>\n" * (N_CODE_F_INPUTS - 1)
    assert parse_proposal("code_f", short + PROPOSE_STOP) is None
    assert parse_proposal("code_o", short + PROPOSE_STOP) is not None


@pytest.mark.parametrize(
    ("task_type", "text"),
    [
        ("code_o", ""),
        ("code_o", "x + 1\n</answer>"),
        ("code_o", "[1, 2\n</answer>"),
        ("code_o", "1\n2\n</answer>"),
        ("code_o", "__import__('os')\n</answer>"),
        ("code_i", "\n</answer>"),
        ("code_i", "1), g(2\n</answer>"),
        ("code_i", "(((\n</answer>"),
        ("code_f", "def g(x):\n    return x\n</answer>"),
        ("code_f", "def f(:\n</answer>"),
        ("code_f", "   \n</answer>"),
    ],
)
def test_garbage_solutions_are_none(task_type, text):
    assert parse_solution(task_type, text) is None


def test_unknown_task_type_and_bad_proposal_raise():
    with pytest.raises(ValueError, match="unknown task type"):
        propose_prompt("code_x", [])
    with pytest.raises(ValueError, match="unknown task type"):
        parse_solution("code_x", "1")
    with pytest.raises(ValueError, match="takes 6 input"):
        Proposal("code_f", "def f(x):\n    return x", ("1",))
    with pytest.raises(ValueError, match="proposal is"):
        propose_completion("code_o", Proposal("code_i", "def f(x):\n    return x", ("1",)))


def test_stop_strings_and_random_values():
    assert set(STOP_STRINGS) == {PROPOSE_STOP, SOLVE_STOP}
    rng = random.Random(0)
    for kind in ("int", "str", "list", "dict"):
        assert parse_solution("code_o", random_value(kind, rng)) is not None
