"""The code_output suite: frozen problems are valid, held out, and judged like the reward."""

from __future__ import annotations

import pytest

from redqueen.experiments.evaluation import SUITES, CodeOutputSuite, make_suite
from redqueen.experiments.evaluation._code_output import frozen_problems
from redqueen.experiments.evaluation._held_out import HELD_OUT_SEED, build_held_out, write_frozen
from redqueen.verifiers import Executor, literal_equal


@pytest.fixture(scope="module")
def executor():
    with Executor(workers=2) as ex:
        yield ex


def test_registered_with_frozen_problems() -> None:
    from redqueen.experiments.evaluation import _code_output_problems as frozen

    assert SUITES["code_output"] is CodeOutputSuite
    rows = frozen_problems()
    assert len(rows) == frozen.HEADER["n"] >= 128
    assert len({row["program"] for row in rows}) == len(rows)
    problems = make_suite("code_output").problems(limit=5)
    assert [p.id for p in problems] == [f"code_output/{i}" for i in range(5)]
    assert problems[0].prompt.startswith("<solve code_o>\n<prog>\n")
    assert problems[0].prompt.endswith("<answer>\n")


def test_gold_outputs_reproduce_in_the_sandbox(executor) -> None:
    rows = frozen_problems()
    results = executor.execute_many([(row["program"], f"f({row['input']})") for row in rows])
    assert all(r.ok for r in results)
    assert all(literal_equal(r.value, row["output"]) for r, row in zip(results, rows, strict=True))


def test_held_out_builder_excludes_every_training_form(tmp_path, executor) -> None:
    from redqueen.tinycoder.canonical import canonical_key
    from redqueen.tinycoder.corpus import build_corpus, save_corpus

    training = build_corpus(8, seed=HELD_OUT_SEED, executor=executor)
    save_corpus(training, tmp_path / "train.jsonl")
    problems, header = build_held_out(6, training_corpus=tmp_path / "train.jsonl", workers=2)
    assert header["n"] == 6 and header["training_forms_excluded"] == 8
    # Same seed as the training programs: without the exclusion the first 6 would be theirs.
    assert not {canonical_key(p["program"]) for p in problems} & {
        canonical_key(e.program) for e in training
    }
    module = write_frozen(problems, header, tmp_path / "frozen.py")
    assert '"training_forms_excluded": 8' in module.read_text()


def test_levels_filter_and_checker(executor) -> None:
    suite = CodeOutputSuite(levels=[3])
    problems = suite.problems(limit=4)
    assert len(problems) == 4 and all(p.data["level"] == 3 for p in problems)
    gold = [p.data["output"] + "\n</answer>" for p in problems]
    completions = [suite.completion(p, text) for p, text in zip(problems, gold, strict=True)]
    assert suite.check(problems, completions, executor) == [True] * 4
    wrong = ["not a literal(", "", "'definitely not the output'", "[1, 2"]
    assert suite.check(problems, wrong, executor) == [False] * 4
