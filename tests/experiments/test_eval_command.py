"""``redqueen eval`` bad input: exit status 2 and one line naming what is wrong."""

from __future__ import annotations

import typer
import yaml
from typer.testing import CliRunner

from redqueen.experiments.evaluation.command import eval_command

app = typer.Typer(add_completion=False)


@app.callback()
def _root() -> None:
    """Stand-in for the ``redqueen`` root command."""


app.command("eval")(eval_command)


def _invoke(*args: str):
    return CliRunner().invoke(app, ["eval", *args])


def _one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def test_missing_run_directory(tmp_path) -> None:
    result = _invoke(str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "nope" in _one_error_line(result)


def test_unknown_benchmark(tmp_path) -> None:
    result = _invoke(str(tmp_path), "--benchmark", "mbpp-nonexistent")
    assert result.exit_code == 2
    line = _one_error_line(result)
    assert "mbpp-nonexistent" in line and "humaneval" in line and "code_output" in line


def test_not_a_run_directory(tmp_path) -> None:
    result = _invoke(str(tmp_path), "--limit", "1")
    assert result.exit_code == 2
    assert "config.yaml" in _one_error_line(result)


def test_run_without_population(tmp_path) -> None:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"model": {"name": "tiny-coder"}}))
    result = _invoke(str(tmp_path), "--limit", "1")
    assert result.exit_code == 2
    assert "population" in _one_error_line(result)


def test_corrupt_adapter_is_named(tmp_path) -> None:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"model": {"name": "tiny-coder"}}))
    member = tmp_path / "population" / "student-0"
    member.mkdir(parents=True)
    (member / "adapter_config.json").write_text("{not json")
    result = _invoke(str(tmp_path), "--benchmark", "humaneval", "--limit", "1")
    assert result.exit_code == 2
    assert "student-0" in _one_error_line(result)


def test_missing_baseline(tmp_path) -> None:
    result = _invoke(str(tmp_path), "--baseline", str(tmp_path / "selfplay"))
    assert result.exit_code == 2
    assert "selfplay" in _one_error_line(result)


def test_bad_limit_is_a_usage_error(tmp_path) -> None:
    result = _invoke(str(tmp_path), "--limit", "0")
    assert result.exit_code == 2


def test_missing_plugin_file_is_named(tmp_path) -> None:
    result = _invoke(str(tmp_path), "--plugin", str(tmp_path / "absent_suite.py"))
    assert result.exit_code == 2
    assert "absent_suite.py" in _one_error_line(result)


def test_a_device_this_process_lacks_is_named_before_anything_loads(tmp_path) -> None:
    import torch

    bad = ["nosuchdevice", "cuda:64"] + ([] if torch.cuda.is_available() else ["cuda"])
    for device in bad:
        result = _invoke("--model", "tiny-coder", "--device", device, "--out", str(tmp_path))
        assert result.exit_code == 2, result.output
        line = _one_error_line(result)
        assert "--device" in line and device in line
    assert list(tmp_path.iterdir()) == []


def test_a_problem_file_that_is_not_text_names_the_file_and_line(tmp_path) -> None:
    problems = tmp_path / "problems.jsonl"
    problems.write_bytes(b'{"program": "def f(x):\\n    return x", "input": "1"}\n\xff\xfe\n')
    result = _invoke("--model", "tiny-coder", "--problems", str(problems), "--out", str(tmp_path))
    assert result.exit_code == 2, result.output
    assert f"{problems}:2: not UTF-8 text" in _one_error_line(result)


def test_an_out_that_is_a_file_is_named_before_the_evaluation(tmp_path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("keep")
    result = _invoke("--model", "tiny-coder", "--out", str(taken), "--limit", "1")
    assert result.exit_code == 2, result.output
    assert "is a file, not a folder" in _one_error_line(result)
    assert taken.read_text() == "keep"
