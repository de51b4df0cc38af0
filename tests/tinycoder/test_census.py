"""The census: distinct canonical forms per level, and difficulty measured in the sandbox."""

from __future__ import annotations

import json

from redqueen.tinycoder import MAX_LEVEL
from redqueen.tinycoder.census import count_distinct, execute_sample, main
from redqueen.verifiers import Executor


def test_counts_add_up_and_size_grows_with_level() -> None:
    census = count_distinct(800, seed=2)
    assert [row.level for row in census] == list(range(1, MAX_LEVEL + 1))
    assert sum(row.candidates for row in census) == 800
    assert all(0 < row.distinct <= row.candidates for row in census)
    nodes = [row.mean_ast_nodes for row in census]
    assert nodes == sorted(nodes) and nodes[0] < nodes[-1] / 5
    # Level 1 is a small space (one expression); level 6 programs hardly ever repeat.
    assert census[0].distinct < census[0].candidates
    assert census[5].distinct == census[5].candidates


def test_steps_are_counted_inside_the_sandbox() -> None:
    with Executor(workers=2) as executor:
        kept_low, steps_low = execute_sample(1, 8, executor, seed=1)
        kept_high, steps_high = execute_sample(MAX_LEVEL, 8, executor, seed=1)
    assert 0.0 < kept_low <= 1.0 and 0.0 < kept_high <= 1.0
    assert 1.0 <= steps_low < steps_high


def test_command_prints_one_object_per_level(capsys) -> None:
    main(["--programs", "160", "--execute", "0"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == MAX_LEVEL + 1
    assert lines[-1]["candidates"] == 160
    assert lines[-1]["distinct"] == sum(row["distinct"] for row in lines[:-1])
