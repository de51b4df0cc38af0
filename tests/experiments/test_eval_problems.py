"""``redqueen eval --problems FILE.jsonl``: one's own code_o / code_i problems."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from redqueen.engine import AdapterHost
from redqueen.experiments.evaluation import ProblemFileSuite, read_problem_file
from redqueen.experiments.evaluation.command import eval_command
from redqueen.verifiers import Executor
from tests.experiments.test_eval_run import _make_run

ROWS = [
    {"program": "def f(x):\n    return x * 3", "input": "4", "output": "12"},
    {"program": "def f(s):\n    return s[::-1] + s[0]", "input": "'abc'", "id": "mine/rev"},
    {"task": "code_i", "program": "def f(xs):\n    return sum(xs)", "input": "[1, 2]"},
]


@pytest.fixture(scope="module")
def executor():
    with Executor(workers=2) as ex:
        yield ex


def _write(path, rows) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def test_outputs_are_computed_in_the_sandbox_when_absent(tmp_path, executor) -> None:
    rows = read_problem_file(_write(tmp_path / "p.jsonl", ROWS), executor)
    assert [r["output"] for r in rows] == ["12", "'cbaa'", "3"]
    assert [r["task"] for r in rows] == ["code_o", "code_o", "code_i"]


def test_a_given_output_is_kept_in_the_sandbox_s_spelling(tmp_path, executor) -> None:
    row = {"program": "def f(x):\n    return [x, x]", "input": "1", "output": "[1,1]"}
    assert read_problem_file(_write(tmp_path / "p.jsonl", [row]), executor)[0]["output"] == "[1, 1]"


@pytest.mark.parametrize("given", ["1.0", "True"])
def test_a_given_output_of_another_type_is_refused(tmp_path, executor, given) -> None:
    """A problem file's output is judged as answers are: ``1.0`` and ``True`` are not ``1``."""
    row = {"program": "def f(x):\n    return x - 1", "input": "2", "output": given}
    with pytest.raises(ValueError, match="the program returns '1'"):
        read_problem_file(_write(tmp_path / "p.jsonl", [row]), executor)


def test_suite_judges_like_the_rewards(tmp_path, executor) -> None:
    suite = ProblemFileSuite.from_file(_write(tmp_path / "mine.jsonl", ROWS), executor)
    assert suite.name == "problems-mine"
    problems = suite.problems()
    assert [p.id for p in problems] == ["problems-mine/0", "mine/rev", "problems-mine/2"]
    assert problems[2].prompt.startswith("<solve code_i>")
    right = ["12\n</answer>", "'cbaa'</answer>", "[3, 0]\n</answer>"]
    wrong = ["13", "'abc'", "[1]"]
    done = [suite.completion(p, t) for p, t in zip(problems, right, strict=True)]
    assert suite.check(problems, done, executor) == [True, True, True]
    assert suite.check(problems, wrong, executor) == [False, False, False]
    assert len(suite.problems(limit=1)) == 1


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("not json", "not JSON"),
        ('{"program": "def f(x): return x"}', "'input'"),
        ('{"program": "def f(x): return x", "input": "1", "task": "code_f"}', "'task'"),
        ('{"program": "def f(x): return x", "input": "1", "expected": "1"}', "'expected'"),
        ('{"program": "def f(x): return x", "input": "1)("}', ":2:"),
        ('{"program": "import os\\ndef f(x): return x", "input": "1"}', "not a valid task"),
        ('{"program": "def f(x): return 1 // x", "input": "0"}', "runtime_error"),
        ('{"program": "def f(x): return x + 1", "input": "1", "output": "1"}', "returns '2'"),
        ('{"program": "import os\\ndef f(x): return x", "input": "1", "output": "1"}', "banned_import"),
    ],
)
def test_bad_lines_are_named(tmp_path, executor, line, named) -> None:
    path = _write(tmp_path / "bad.jsonl", [ROWS[0], line])
    with pytest.raises(ValueError, match="bad.jsonl:2") as info:
        read_problem_file(path, executor)
    assert named in str(info.value)


app = typer.Typer(add_completion=False)


@app.callback()
def _root() -> None:
    """Stand-in for the ``redqueen`` root command."""


app.command("eval")(eval_command)


def test_command_end_to_end_and_bad_files(tmp_path) -> None:
    run = _make_run(tmp_path / "run", AdapterHost(), {"student-0": "student"})
    good = _write(tmp_path / "own.jsonl", ROWS)
    result = CliRunner().invoke(app, ["eval", str(run), "--problems", good, "--workers", "2"])
    assert result.exit_code == 0, result.output
    report = json.loads((run / "eval_problems-own.json").read_text())
    assert report["suite"] == "problems-own"
    for args, named in (
        (["--problems", str(tmp_path / "missing.jsonl")], "missing.jsonl"),
        (["--problems", _write(tmp_path / "bad.jsonl", ["{"])], "bad.jsonl:1"),
    ):
        result = CliRunner().invoke(app, ["eval", str(run), *args])
        assert result.exit_code == 2
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and named in lines[0] and "Traceback" not in result.output


def test_eval_without_a_run_directory_saves_answers_statuses_and_a_breakdown(tmp_path) -> None:
    """``eval --model ID --adapter DIR --problems FILE``: the bare model and the adapter, each
    problem's status and parsed answer saved (wrong and unparseable apart), and scores broken
    down by level and task type."""
    run = _make_run(tmp_path / "run", AdapterHost(), {"student-0": "student"})
    rows = [{**row, "level": level} for row, level in zip(ROWS, (1, 2, 2), strict=True)]
    good = _write(tmp_path / "own.jsonl", rows)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, [
        "eval", "--model", "tiny-coder", "--adapter", str(run / "population" / "student-0"),
        "--problems", good, "--workers", "2", "--out", str(out),
    ])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "eval_problems-own.json").read_text())
    assert [s["member"] for s in report["scores"]] == ["base", "student-0"]
    extra = report["extra"]
    for member in ("base", "student-0"):
        answers = extra["answers"][member]
        assert [a["id"] for a in answers] == report["problems"]
        assert all(a["status"] in ("correct", "wrong", "unparseable") for a in answers)
        assert all((a["answer"] is None) == (a["status"] == "unparseable") for a in answers)
        assert sum(extra["statuses"][member].values()) == 3
        breakdown = extra["breakdown"][member]
        assert {k: v[1] for k, v in breakdown["level"].items()} == {"1": 1, "2": 2}
        assert {k: v[1] for k, v in breakdown["task"].items()} == {"code_o": 2, "code_i": 1}
    assert "| model | correct | wrong | unparseable |" in result.stdout
    assert "by level: 1 " in result.stdout
    for args, named in (
        ([], "give run directories or --model"),
        (["--model", "tiny-coder", str(run)], "not both"),
        (["--model", "tiny-coder", "--adapter", str(tmp_path / "absent")], "absent"),
        (["--model", "tiny-coder", "--adapter", str(tmp_path)], "adapter_config.json"),
    ):
        result = CliRunner().invoke(app, ["eval", *args, "--problems", good])
        assert result.exit_code == 2, result.output
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and named in lines[0] and "Traceback" not in result.output
