"""Everything a run directory holds is data: it cannot steer where redqueen writes, which
machines it talks to, which files it reads, how big a resource it takes, or what a terminal
does with the names it holds. Each refusal is one line and exit status 2, and nothing inside
or outside the directory changes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from redqueen.experiments.checkpoint import latest_checkpoint
from redqueen.experiments.cli import app
from redqueen.experiments.config import ConfigError, load_config
from redqueen.experiments.rundir import RunDirectory
from redqueen.experiments.runner import start_run
from redqueen.experiments.snapshots import read_snapshots

SETTINGS = [
    "steps=4",
    "checkpoint_every=2",
    "population.teachers=2",
    "population.students=2",
    "evolution.replace_every=2",
    "evolution.snapshot_every=2",
    "environment.options={tasks_per_teacher: 4, hidden: 8}",
]
SET_ARGS = [a for s in SETTINGS for a in ("--set", s)]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}
ESC = "\x1b]0;owned\x07\x1b[2J"  # sets the terminal's title and clears the screen

cli = CliRunner()


def _stderr(result) -> str:
    return result.err if hasattr(result, "err") else result.stderr


def _error_line(result) -> str:
    err = _stderr(result)
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and err.rstrip().endswith(errors[0]), err
    assert "Traceback" not in err, err
    return errors[0]


def _tree(path: Path) -> dict[str, bytes | None]:
    """Every entry under ``path`` (links not followed) with the bytes of its files."""
    found: dict[str, bytes | None] = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            entry = Path(root) / name
            rel = str(entry.relative_to(path))
            if entry.is_symlink():
                found[rel] = b"link:" + os.readlink(entry).encode()
            elif entry.is_file():
                found[rel] = entry.read_bytes()
            else:
                found[rel] = None
    return found


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("finished") / "run"
    runner = start_run(load_config("surrogate", SETTINGS), out, plots=False)
    try:
        runner.run()
    finally:
        runner.close()
    return out


@pytest.fixture
def copy(finished, tmp_path):
    target = tmp_path / "box" / "copy"
    shutil.copytree(finished, target)
    return target


def _victim_dir(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me\n")
    return victim


def _set_config(copy: Path, **sections) -> None:
    """Merge ``sections`` into the run's config.yaml (a hand edit of the file)."""
    import yaml

    path = copy / "config.yaml"
    data = yaml.safe_load(path.read_text())
    for key, value in sections.items():
        if isinstance(value, dict):
            data.setdefault(key, {}).update(value)
        else:
            data[key] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False))


# ------------------------------------------------------------------ 4. numeric strings are finite too
@pytest.mark.parametrize("value", ["1e400", "'1e400'", "-1e999", "'nan'", "'-inf'", "'Infinity'"])
def test_a_non_finite_numeric_string_in_environment_options_is_refused(tmp_path, value):
    out = tmp_path / "run"
    result = cli.invoke(
        app,
        [
            "run",
            "surrogate",
            "--out",
            str(out),
            "--no-plots",
            *SET_ARGS,
            "--set",
            f"environment.options={{tasks_per_teacher: 4, hidden: 8, lr: {value}}}",
        ],
    )
    assert result.exit_code == 2, result.output
    line = _error_line(result)
    assert "environment.options.lr" in line and "finite" in line
    assert not out.exists()


def test_numeric_strings_in_domain_params_and_finite_ones_in_options(tmp_path):
    with pytest.raises(ConfigError, match="domain_params.max_source_chars"):
        load_config("tiny", ["environment.domain_params={max_source_chars: '1e400'}"])
    config = load_config("surrogate", ["environment.options={lr: '0.5', note: 'not a number'}"])
    assert config.environment.options == {"lr": "0.5", "note": "not a number"}


# ------------------------------------------------------------------ 5. resources have upper bounds
@pytest.mark.parametrize(
    "setting",
    [
        "environment.executor.timeout=1e300",
        "environment.executor.workers=1000000000",
        "environment.executor.memory_mb=1000000000000",
        "engine.workers=1000000000",
        "engine.cpus_per_worker=1e300",
        "engine.gpus_per_worker=1e300",
        "model.cpu_threads=1000000000",
        "population.teachers=1000000000",
        "population.rank=1000000000",
        "environment.tasks_per_teacher=1000000000",
        "environment.answers_per_task=1000000000",
        "environment.solve_max_new_tokens=1000000000000",
        "learner.micro_batch_size=1000000000000",
        "steps=1000000000000",
        "seed=100000000000000000000000",
    ],
)
def test_resource_settings_have_upper_bounds(setting):
    key = setting.split("=")[0]
    with pytest.raises(ConfigError, match=key.replace(".", r"\.") + ": Input should be less than"):
        load_config("tiny", [setting])


def test_a_huge_timeout_is_one_line_before_anything_is_built(tmp_path):
    out = tmp_path / "run"
    result = cli.invoke(
        app,
        [
            "run",
            "tiny",
            "--out",
            str(out),
            "--no-plots",
            "--set",
            "environment.executor.timeout=1e300",
        ],
    )
    assert result.exit_code == 2, result.output
    assert "environment.executor.timeout" in _error_line(result)
    assert not out.exists()


# ------------------------------------------------------------------ 6. checkpoint names are ASCII digits
ODD_STEPS = [
    "step_99\n",
    "step_\u0669\u0669",
    "step_\uff19\uff19",
    "step_99 ",
    "step_+99",
    "step_9_9",
]


@pytest.mark.parametrize("name", ODD_STEPS)
def test_a_checkpoint_folder_with_an_odd_name_never_becomes_the_latest(copy, name):
    checkpoints = copy / "checkpoints"
    shutil.copytree(checkpoints / "step_4", checkpoints / name)
    assert latest_checkpoint(checkpoints).path.name == "step_4"
    result = cli.invoke(app, ["resume", str(copy), "--no-plots", "--steps", "6"])
    assert result.exit_code == 0, result.output
    assert latest_checkpoint(checkpoints).step == 6


@pytest.mark.parametrize("name", ["step_\u0669\u0669", "step_00099\n"])
def test_a_snapshot_folder_with_an_odd_name_is_not_a_snapshot(copy, name):
    snapshots = copy / "snapshots"
    shutil.copytree(snapshots / "step_00002", snapshots / name)
    assert sorted(read_snapshots(copy)) == [2, 4]
