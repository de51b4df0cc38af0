"""End to end on the surrogate preset: a complete run directory; resume after SIGKILL and SIGINT."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from redqueen.evo import Lineage
from redqueen.experiments.checkpoint import latest_checkpoint
from redqueen.experiments.cli import app
from redqueen.experiments.config import load_config
from redqueen.experiments.launch import start_run
from redqueen.experiments.rundir import RunDirectory

STEPS = 8
SETTINGS = [
    f"steps={STEPS}",
    "checkpoint_every=2",
    "population.teachers=4",
    "population.students=4",
    "evolution.replace_every=2",
    "environment.tasks_per_teacher=4",
    "environment.options={hidden: 8}",
]
ARGS = ["--plugin", "redqueen.environments.surrogate"] + [a for s in SETTINGS for a in ("--set", s)]
METRIC_KEYS = {
    "step",
    "seconds",
    "solve_rate",
    "teacher_reward",
    "valid_share",
    "best_rating",
    "genotypic_diversity",
    "behavioural_diversity",
}

cli = CliRunner()


def _invoke(*args: str) -> None:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 0, result.output


def _snapshot(path) -> dict:
    """Everything a resumed run must reproduce; wall-clock seconds excluded."""
    run = RunDirectory(path)
    return {
        "metrics": [
            {k: v for k, v in row.items() if k != "seconds"} for row in run.read_log("metrics")
        ],
        "tasks": run.read_log("tasks"),
        "ratings": run.read_log("ratings"),
        "lineage": run.lineage_path.read_text(),
        "population": run.population_ids(),
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "run"
    _invoke("run", "surrogate", "--out", str(out), *ARGS)
    return out


def test_run_directory_is_complete_and_valid(reference):
    from redqueen.genomes import LoRAGenome

    run = RunDirectory(reference)
    config = load_config(str(run.config_path))
    assert config.steps == STEPS and config.population.teachers == 4
    assert config.to_yaml_dict() == run.read_config()  # fully resolved: reloads to itself

    metrics = run.read_log("metrics")
    assert [int(row["step"]) for row in metrics] == list(range(STEPS))
    assert all(METRIC_KEYS <= set(row) for row in metrics)
    ratings = run.read_log("ratings")
    assert ratings and all(
        {"step", "id", "role", "mu", "sigma", "lcb", "objectives"} <= set(r) for r in ratings
    )
    assert all({"step", "teacher", "task_type", "valid"} <= set(r) for r in run.read_log("tasks"))

    lineage = Lineage.from_csv(run.lineage_path)  # raises if an ancestor id is missing
    names = [record.name for record in lineage.records]
    assert len(names) == len(set(names)) > 8  # replacement made children
    assert any(record.parents for record in lineage.records)
    assert sorted(lineage.living()) == run.population_ids()
    for member in run.population_ids():
        genome = LoRAGenome.from_peft(run.population_dir / member)
        assert genome.rank == config.population.rank

    assert latest_checkpoint(run.checkpoints_dir).step == STEPS
    pngs = sorted(run.plots_dir.glob("*.png"))
    assert {p.stem for p in pngs} >= {"lineage", "diversity", "performance", "ratings", "operators"}
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)
    assert json.loads(run.plugins_path.read_text()) == ["redqueen.environments.surrogate"]


@pytest.mark.slow
def test_resume_after_sigkill_matches_an_uninterrupted_run(reference, tmp_path):
    out = tmp_path / "killed"
    code = "from redqueen.experiments.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "run", "surrogate", "--out", str(out), "--no-plots", *ARGS],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    run = RunDirectory(out)
    deadline = time.monotonic() + 120
    try:
        # Kill once a checkpoint exists and rows of later steps have been written after it.
        while time.monotonic() < deadline and proc.poll() is None:
            ckpt = latest_checkpoint(run.checkpoints_dir) if run.checkpoints_dir.is_dir() else None
            # The raw file: read_log stops at the checkpoint while the run holds its lock.
            if (
                ckpt is not None
                and ckpt.step >= 2
                and run.log_path("metrics").read_text().count("\n") > ckpt.step
            ):
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.01)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    killed_at = latest_checkpoint(run.checkpoints_dir).step
    assert killed_at < STEPS

    _invoke("resume", str(out), "--no-plots")
    assert _snapshot(out) == _snapshot(reference)


def test_sigint_stops_after_a_checkpoint_and_resume_completes(reference, tmp_path):
    out = tmp_path / "interrupted"
    config = load_config("surrogate", SETTINGS)
    runner = start_run(config, out, plots=False)

    def interrupt_at_step_3(record, current):
        if current.step_count == 3:
            os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C would, mid-run

    try:
        result = runner.run(callbacks=[interrupt_at_step_3])
    finally:
        runner.close()
    assert result.interrupted and result.steps_done == 3
    assert latest_checkpoint(RunDirectory(out).checkpoints_dir).step == 3  # off the 2-step grid
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    _invoke("resume", str(out), "--no-plots")
    assert _snapshot(out) == _snapshot(reference)


def test_resume_of_a_finished_run_changes_nothing(reference, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(reference, copy)
    before = _snapshot(copy)
    _invoke("resume", str(copy), "--no-plots")
    assert _snapshot(copy) == before


def test_readme_plugin_example_runs(tmp_path):
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    code = re.search(r"```python\n(# my_plugins.py\n.*?)```", readme, re.S).group(1)
    plugin = tmp_path / "my_plugins.py"
    plugin.write_text(code)
    out = tmp_path / "run"
    _invoke(
        "run",
        "surrogate",
        "--out",
        str(out),
        "--no-plots",
        "--plugin",
        str(plugin),
        "--plugin",
        "redqueen.environments.surrogate",
        "--set",
        "steps=2",
        "--set",
        "population.teachers=4",
        "--set",
        "population.students=4",
        "--set",
        "evolution.replace_every=1",
        "--set",
        "evolution.selection=youngest_best",
        "--set",
        "evolution.operators={scale_b: 1.0}",
    )
    operators = {r.operator for r in Lineage.from_csv(out / "lineage.csv").records if r.parents}
    assert operators == {"scale_b"}
    assert RunDirectory(out).read_plugins()[0] == str(plugin.resolve())


def test_ctrl_c_on_the_command_line_exits_130_after_a_checkpoint(tmp_path):
    import threading

    out = tmp_path / "ctrl-c"
    metrics = RunDirectory(out).log_path("metrics")

    def press_ctrl_c_after_the_first_step():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if metrics.exists() and metrics.read_text().count("\n") >= 1:
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.005)

    presser = threading.Thread(target=press_ctrl_c_after_the_first_step, daemon=True)
    presser.start()
    args = [a if a != f"steps={STEPS}" else "steps=40" for a in ARGS]
    result = cli.invoke(app, ["run", "surrogate", "--out", str(out), "--no-plots", *args])
    presser.join()
    assert result.exit_code == 130, result.output
    assert "redqueen resume" in result.stderr
    done = len(RunDirectory(out).read_log("metrics"))
    assert 1 <= done < 40
    assert latest_checkpoint(RunDirectory(out).checkpoints_dir).step == done


def test_resume_before_the_first_checkpoint_starts_over(reference, tmp_path):
    out = tmp_path / "fresh"
    runner = start_run(load_config("surrogate", SETTINGS), out, plots=False)
    runner.close()  # killed before any step: a run directory without checkpoints
    assert latest_checkpoint(RunDirectory(out).checkpoints_dir) is None
    _invoke("resume", str(out), "--no-plots")
    assert _snapshot(out) == _snapshot(reference)


def test_resume_without_a_checkpoint_says_it_discards_logged_steps(reference, tmp_path, caplog):
    out = tmp_path / "lost"
    shutil.copytree(reference, out)
    shutil.rmtree(RunDirectory(out).checkpoints_dir)
    with caplog.at_level("WARNING", logger="redqueen.experiments.runner"):
        _invoke("resume", str(out), "--no-plots")
    assert f"the {STEPS} step(s) in its logs are discarded" in caplog.text
    assert _snapshot(out) == _snapshot(reference)


def _refused(*args: str) -> str:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def _files(path) -> dict:
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_a_refused_resume_with_new_steps_leaves_config_yaml_as_it_was(reference, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(reference, copy)
    metrics = copy / "metrics.jsonl"
    metrics.write_bytes(metrics.read_bytes()[:50])  # shorter than the checkpoint records
    before = _files(copy)
    assert "metrics.jsonl is shorter" in _refused("resume", str(copy), "--steps", str(STEPS + 2))
    assert _files(copy) == before


def test_a_checkpoints_path_that_is_a_file_is_refused_before_the_logs_are_cut(reference, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(reference, copy)
    shutil.rmtree(copy / "checkpoints")
    (copy / "checkpoints").write_bytes(b"")  # read as no checkpoint, the run started over
    before = _files(copy)
    assert _refused("resume", str(copy), "--no-plots").endswith("checkpoints is not a directory")
    assert _files(copy) == before


@pytest.mark.parametrize("log", ["metrics.jsonl", "tasks.jsonl"])
def test_a_missing_log_is_named_and_not_created(reference, tmp_path, log):
    copy = tmp_path / "copy"
    shutil.copytree(reference, copy)
    (copy / log).unlink()
    before = _files(copy)
    line = _refused("resume", str(copy), "--steps", str(STEPS + 2))
    assert f"{log} is missing, but the checkpoint records" in line
    assert _files(copy) == before  # the check made it an empty file


def test_a_damaged_log_is_named_before_the_environment_is_built(reference, tmp_path, caplog):
    copy = tmp_path / "copy"
    shutil.copytree(reference, copy)
    metrics = copy / "metrics.jsonl"
    rows = metrics.read_bytes().split(b"\n")
    metrics.write_bytes(b"\n".join([rows[0], b"garbage{{{", *rows[1:]]))
    config = copy / "config.yaml"
    config.write_text(config.read_text().replace("cpu_threads: 1", "cpu_threads: auto", 1))
    before = _files(copy)
    with caplog.at_level("INFO", logger="redqueen"):
        assert "metrics.jsonl" in _refused("resume", str(copy), "--steps", str(STEPS + 2))
    assert not caplog.records  # nothing said before the one line (the build's thread note)
    assert _files(copy) == before


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("teachers: 4", "teachers: 2", "population.teachers"),
        ("rank: 4", "rank: 2", "population.rank"),
        ("seed: 0", "seed: 1", "seed"),
    ],
)
def test_a_config_yaml_edited_after_the_start_is_named_on_resume(
    reference, tmp_path, old, new, key
):
    copy = tmp_path / "copy"
    shutil.copytree(reference, copy)
    config = copy / "config.yaml"
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new, 1))
    before = _files(copy)
    line = _refused("resume", str(copy), "--steps", str(STEPS + 2), "--no-plots")
    assert key in line and "edited" in line
    assert _files(copy) == before


def test_a_resume_may_change_where_and_how_long_a_run_goes(reference, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(reference, copy)
    config = copy / "config.yaml"
    config.write_text(config.read_text().replace("checkpoint_every: 2", "checkpoint_every: 1"))
    _invoke("resume", str(copy), "--steps", str(STEPS + 1), "--no-plots")
    assert len(RunDirectory(copy).read_log("metrics")) == STEPS + 1


def test_logs_damaged_inside_the_checkpointed_part_are_refused_before_anything_is_cut(
    reference, tmp_path
):
    copy = tmp_path / "copy"
    shutil.copytree(reference, copy)
    ckpt = latest_checkpoint(copy / "checkpoints")
    size = ckpt.offsets["metrics.jsonl"]
    metrics = copy / "metrics.jsonl"
    metrics.write_bytes(os.urandom(size + 10))
    before = _files(copy)
    assert "metrics.jsonl" in _refused("resume", str(copy), "--no-plots")
    assert _files(copy) == before
    # Text that stops mid-row at the checkpoint's offset is damage too.
    metrics.write_bytes(b'{"step": 1}\n' + b"x" * size)
    assert "whole row" in _refused("resume", str(copy), "--no-plots")


def test_a_row_damaged_in_the_middle_of_a_log_is_named_on_resume(reference, tmp_path):
    # The damage keeps every byte count, so only reading each row finds it; a resume that
    # went on would write more steps behind a log that plot then refuses.
    copy = tmp_path / "copy"
    shutil.copytree(reference, copy)
    metrics = copy / "metrics.jsonl"
    rows = metrics.read_bytes().split(b"\n")
    assert len(rows) > 3
    rows[1] = b"#" * len(rows[1])
    metrics.write_bytes(b"\n".join(rows))
    before = _files(copy)
    line = _refused("resume", str(copy), "--no-plots")
    assert "metrics.jsonl: line 2" in line and "not JSON" in line
    assert _files(copy) == before
    rows[1] = b'{"step": NaN' + b" " * (len(rows[1]) - 13) + b"}"
    metrics.write_bytes(b"\n".join(rows))
    before = _files(copy)
    line = _refused("resume", str(copy), "--no-plots")
    assert "metrics.jsonl: line 2: step is not a finite number" in line
    assert _files(copy) == before
