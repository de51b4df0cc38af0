"""``redqueen sweep`` where Ray is not installed: the trials run one after another, each done
trial is one line, and ``compare`` reads the sweep as it reads one run on Ray."""

from __future__ import annotations

import json
import logging
import sys

from typer.testing import CliRunner

from redqueen.experiments.cli import app
from redqueen.experiments.rundir import RunDirectory

SMALL = ["--set", "steps=2", "--set", "population.teachers=2", "--set", "population.students=2",
         "--set", "environment.tasks_per_teacher=2", "--set", "environment.options={hidden: 8}"]


def test_sweep_runs_its_trials_in_turn_without_ray(tmp_path, monkeypatch, caplog):
    for name in ("ray", "ray.tune"):
        monkeypatch.setitem(sys.modules, name, None)  # `import ray` now raises ImportError
    out = tmp_path / "sweep"
    with caplog.at_level(logging.INFO, logger="redqueen"):
        result = CliRunner().invoke(app, ["sweep", "surrogate", "--seeds", "2", "--out", str(out),
                                          "--no-plots", *SMALL])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("Ray is not installed") for line in lines)
    assert [line.split(" (")[0] for line in lines if line.startswith("trials done")] == [
        "trials done: 1/2", "trials done: 2/2"]
    manifest = json.loads((out / "sweep.json").read_text())
    for trial in manifest["trials"]:
        rows = RunDirectory(out / trial["path"]).read_log("metrics")
        assert len(rows) == 2
    assert "sweep complete" in result.stdout
