"""A run on a shared machine: threads from the free cores, a warning when none is free, a time
left from the mean step, a first line before the model loads and a last line naming the plots;
unknown keys get a "did you mean"."""

from __future__ import annotations

import logging

import pytest
from typer.testing import CliRunner

from redqueen.experiments import _cpu
from redqueen.experiments._cpu import CpuLoad, busy_warning, choose_threads, resolve_cpu_threads
from redqueen.experiments._run_lines import time_left
from redqueen.experiments.cli import app, main
from redqueen.experiments.config import ConfigError, load_config

SMALL = ["--set", "steps=2", "--set", "population.teachers=2", "--set", "population.students=2",
         "--set", "environment.tasks_per_teacher=2", "--set", "environment.options={hidden: 8}", "--no-plots"]


@pytest.mark.parametrize(
    ("cores", "busy", "threads", "warned"),
    [(2, 0.1, 2, False), (2, 1.0, 1, False), (2, 1.6, 1, True), (2, 2.0, 1, True), (8, 2.2, 6, False)],
)
def test_threads_follow_the_free_cores_and_a_full_machine_is_named(cores, busy, threads, warned):
    load = CpuLoad(cores=cores, busy=busy, load1=7.2)
    assert choose_threads(load) == threads
    warning = busy_warning(load)
    assert (warning is not None) == warned
    if warning:
        assert "\n" not in warning and "(load 7.2)" in warning and len(warning) <= 70


def test_the_tiny_demo_measures_its_threads(monkeypatch, caplog):
    assert load_config("tiny").model.cpu_threads == "auto"
    monkeypatch.setattr(_cpu, "measure_load", lambda seconds=0.3: CpuLoad(2, 2.0, 9.0))
    with caplog.at_level(logging.INFO, logger="redqueen"):
        assert resolve_cpu_threads("auto") == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith("machine busy: others use 2.0 of 2 cores")
    assert resolve_cpu_threads(3) == 3 and resolve_cpu_threads(None) is None
    with pytest.raises(ConfigError, match=r"model\.cpu_threads: Input should be a number of threads or 'auto'"):
        load_config("tiny", ["model.cpu_threads=fast"])


def test_measured_load_is_within_the_cores():
    load = _cpu.measure_load(0.05)
    assert load.cores >= 1 and 0.0 <= load.busy <= load.cores


def test_time_left_comes_from_the_mean_step():
    assert time_left(15, 0, None) == "-:--:--"
    assert time_left(15, 3, 95.0) == "0:19:00"  # steps of 95 s: rich's 30 s window shows none


def test_first_line_before_the_model_loads_and_last_line_names_the_plots(tmp_path, monkeypatch, capsys):
    from redqueen.experiments import build, monitor

    monkeypatch.setattr(monitor, "tensorboard_available", lambda: False)
    seen_before_build: list[str] = []
    real_build = build.EnvironmentPlan.build

    def build_and_look(plan):
        seen_before_build.append(capsys.readouterr().out)
        return real_build(plan)

    monkeypatch.setattr(build.EnvironmentPlan, "build", build_and_look)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        main(["run", "surrogate", "--out", str(out), "--set", "logging.tensorboard=null", *SMALL])
    assert exit_.value.code == 0
    first = seen_before_build[0].splitlines()
    assert first[0].startswith(f"run folder {out}; logs: metrics.jsonl")
    assert "tensorboard: not installed (pip install tensorboard" in first[0]
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == f"run complete: 2 steps in {out}; no plots (draw them with: redqueen plot {out})"


@pytest.mark.parametrize(
    ("setting", "line"),
    [
        ("stpes=3", "stpes: unknown key (did you mean steps?)"),
        ("evolution.selectoin=nsga2", "evolution.selectoin: unknown key (did you mean selection?)"),
        ("environment.executor.timout=1", "environment.executor.timout: unknown key (did you mean timeout?)"),
        ("evolution.zzz=1", "evolution.zzz: unknown key [preset"),
    ],
)
def test_unknown_keys_get_a_did_you_mean(tmp_path, setting, line):
    result = CliRunner().invoke(app, ["run", "surrogate", "--out", str(tmp_path / "r"), "--set", setting])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert line in result.stderr and result.stdout == ""
