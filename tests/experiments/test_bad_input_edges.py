"""Bad input at the edges: values the checks once let through to fail later, deep in a run or a
command, now exit 2 with one ``error:`` line naming the input, leaving nothing behind."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from redqueen.experiments.cli import EXIT_BAD_INPUT, app

runner = CliRunner()


def _one_error_line(result) -> str:
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0].removeprefix("error: ")


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("learner.betas=[2, 3]", "learner.betas.0: Input should be less than 1 (got 2)"),
        ("learner.betas=[0.9, 1]", "learner.betas.1: Input should be less than 1 (got 1)"),
        ("learner.betas=[0.9, -0.1]", "learner.betas.1: Input should be greater than or equal to 0"),
        ("learner.betas=[true, false]", "learner.betas: Input should be two numbers, not true/false"),
        ("model.target_modules=[]", "model.target_modules: Tuple should have at least 1 item"),
    ],
)
def test_settings_the_model_would_refuse_later_exit_2_at_load(tmp_path, override, expected):
    out = tmp_path / "runs" / "bad"
    result = runner.invoke(app, ["run", "tiny", "--set", override, "--out", str(out), "--no-plots"])
    assert expected in _one_error_line(result)
    assert not (tmp_path / "runs").exists()
