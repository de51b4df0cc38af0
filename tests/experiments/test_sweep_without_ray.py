"""``redqueen sweep`` where Ray is not installed: the trials run one after another, each done
trial is one line, and ``compare`` reads the sweep as it reads one run on Ray."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from redqueen.experiments.cli import app
from redqueen.experiments.rundir import RunDirectory

SMALL = [
    "--set",
    "steps=2",
    "--set",
    "population.teachers=2",
    "--set",
    "population.students=2",
    "--set",
    "environment.tasks_per_teacher=2",
    "--set",
    "environment.options={hidden: 8}",
]


def test_sweep_runs_its_trials_in_turn_without_ray(tmp_path, monkeypatch, caplog):
    for name in ("ray", "ray.tune"):
        monkeypatch.setitem(sys.modules, name, None)  # `import ray` now raises ImportError
    out = tmp_path / "sweep"
    with caplog.at_level(logging.INFO, logger="redqueen"):
        result = CliRunner().invoke(
            app, ["sweep", "surrogate", "--seeds", "2", "--out", str(out), "--no-plots", *SMALL]
        )
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("Ray is not installed") for line in lines)
    assert [line.split(" (")[0] for line in lines if line.startswith("trials done")] == [
        "trials done: 1/2",
        "trials done: 2/2",
    ]
    manifest = json.loads((out / "sweep.json").read_text())
    for trial in manifest["trials"]:
        rows = RunDirectory(out / trial["path"]).read_log("metrics")
        assert len(rows) == 2
    assert "sweep complete" in result.stdout


def _files(path) -> dict:
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_another_sweep_in_a_sweep_directory_is_refused_and_changes_nothing(tmp_path, monkeypatch):
    for name in ("ray", "ray.tune"):
        monkeypatch.setitem(sys.modules, name, None)
    out = tmp_path / "sweep"
    runner = CliRunner()
    first = runner.invoke(app, ["sweep", "surrogate", "--out", str(out), "--no-plots", *SMALL])
    assert first.exit_code == 0, first.output
    before = _files(out)
    for other in (["--grid", "evolution.selection=truncation"], ["--set", "evolution.grace=1"]):
        result = runner.invoke(
            app, ["sweep", "surrogate", "--out", str(out), "--no-plots", *SMALL, *other]
        )
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "holds another sweep" in lines[0], result.stderr
        assert _files(out) == before
    # More seeds of the same sweep continue it.
    more = runner.invoke(
        app, ["sweep", "surrogate", "--seeds", "2", "--out", str(out), "--no-plots", *SMALL]
    )
    assert more.exit_code == 0, more.output
    assert len(json.loads((out / "sweep.json").read_text())["trials"]) == 2


def test_a_ray_address_that_cannot_be_reached_writes_nothing(tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "sweep"
    # A process of its own: Ray started by another test here would make the address unused.
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from redqueen.experiments.cli import main; main()",
            "sweep",
            "surrogate",
            "--out",
            str(out),
            "--no-plots",
            "--address",
            "not-an-address",
            *SMALL,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "not-an-address" in result.stderr.strip().splitlines()[-1]
    assert "Traceback" not in result.stderr
    assert not out.exists()
