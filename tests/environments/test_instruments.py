"""Program measures (radon), behaviour cells and the checkpointed coverage of task space."""

from __future__ import annotations

import pytest

from redqueen.engine import Generation
from redqueen.environments._instruments import behaviour_cell, program_measures
from redqueen.environments._round import PlayedTask
from redqueen.verifiers import complexity

LOOP = """def f(xs):
    total = 0
    for x in xs:
        if x > 2:
            total += x
    return total
"""
FLAT = "def f(x):\n    return x + 1\n"


def played(program: str, *, base_rate: float | None, task_type: str = "code_o") -> PlayedTask:
    gen = Generation(text="", prompt_ids=[1], token_ids=[2], logprobs=[-0.1], finished=True)
    item = PlayedTask("t", "s", task_type, gen, task=object(), program=program)
    item.measures = program_measures(program, complexity(program))
    item.base_solve_rate = base_rate
    return item


def test_program_measures_come_from_radon_and_the_ast():
    flat, loop = (program_measures(p, complexity(p)) for p in (FLAT, LOOP))
    assert flat["loc"] == 2 and loop["loc"] == 6
    assert flat["cyclomatic"] == 1 and loop["cyclomatic"] == 3  # one loop, one branch
    assert loop["ast_nodes"] > flat["ast_nodes"] > flat["ast_depth"] > 1
    assert loop["halstead_volume"] > flat["halstead_volume"] > 0


def test_behaviour_cells_discretise_type_size_difficulty_and_features():
    assert behaviour_cell(played(LOOP, base_rate=0.0)) == "code_o/c9/d0/branch+loop"
    assert behaviour_cell(played(FLAT, base_rate=1.0, task_type="code_i")).endswith("/d1/-")
    assert "/dm/" in behaviour_cell(played(FLAT, base_rate=0.5))
    assert "/dx/" in behaviour_cell(played(FLAT, base_rate=None))
    assert behaviour_cell(played(FLAT, base_rate=0.0)).split("/")[1] == "c6"  # 10 nodes
    invalid = played(FLAT, base_rate=None)
    invalid.task = None
    assert behaviour_cell(invalid) is None


@pytest.mark.parametrize("program", [FLAT, LOOP])
def test_a_helper_function_is_a_feature(program):
    helper = "def g(y):\n    return y\n\n" + program
    assert "helper" in behaviour_cell(played(helper, base_rate=0.0)).split("/")[3].split("+")
