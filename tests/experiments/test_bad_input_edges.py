"""Bad input at the edges: values the checks once let through to fail later, deep in a run or a
command, now exit 2 with one ``error:`` line naming the input, leaving nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from redqueen.experiments.cli import EXIT_BAD_INPUT, app
from redqueen.experiments.rundir import RunDirectory

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
        (
            "learner.betas=[0.9, -0.1]",
            "learner.betas.1: Input should be greater than or equal to 0",
        ),
        (
            "learner.betas=[true, false]",
            "learner.betas: Input should be two numbers, not true/false",
        ),
        ("model.target_modules=[]", "model.target_modules: Tuple should have at least 1 item"),
        # Empty names: found when the model loaded, after the run folder's line.
        ("model.name=''", "model.name: String should have at least 1 character (got '')"),
        (
            "model.target_modules=[q_proj, '']",
            "model.target_modules.1: String should have at least 1 character (got '')",
        ),
        ("engine.ray_address=''", "engine.ray_address: String should have at least 1 character"),
    ],
)
def test_settings_the_model_would_refuse_later_exit_2_at_load(tmp_path, override, expected):
    out = tmp_path / "runs" / "bad"
    result = runner.invoke(app, ["run", "tiny", "--set", override, "--out", str(out), "--no-plots"])
    assert expected in _one_error_line(result)
    assert result.stdout == ""  # no run folder's line before it
    assert not (tmp_path / "runs").exists()


def _small_run(path: Path, extra_row: str | None = None) -> Path:
    """A run directory with a config and two metrics rows (no model needed), plus ``extra_row``
    appended to metrics.jsonl as a whole line."""
    run = RunDirectory(path)
    run.path.mkdir(parents=True)
    run.write_config({"seed": 0})
    run.open_logs()
    run.append("metrics", [{"step": 0, "solve_rate": 0.25}, {"step": 1, "solve_rate": 0.5}])
    run.close_logs()
    if extra_row is not None:
        with open(path / "metrics.jsonl", "a") as handle:
            handle.write(extra_row + "\n")
    return path


def _tree(path: Path) -> dict[str, bytes | None]:
    """Every entry under ``path`` with its bytes; a reader's empty lock file is not data."""
    return {
        str(p.relative_to(path)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(path.rglob("*"))
        if not p.name.endswith(".lock")
    }


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ('{"step": null, "solve_rate": 1}', "line 3: step is not a number (got null)"),
        ('{"step": "two", "solve_rate": 1}', 'line 3: step is not a number (got "two")'),
        ('{"step": true, "solve_rate": 1}', "line 3: step is not a number (got true)"),
        ('{"step": 2, "solve_rate": NaN}', "line 3: solve_rate is not a finite number (nan)"),
        ('{"step": 2, "solve_rate": 1e999}', "line 3: solve_rate is not a finite number (inf)"),
        ('{"step": 2, "x": {"y": [-Infinity]}}', "line 3: x.y.0 is not a finite number (-inf)"),
    ],
)
@pytest.mark.parametrize("command", ["plot", "compare", "export-table"])
def test_a_metrics_row_its_writer_never_writes_is_named_by_every_reader(
    tmp_path, row, expected, command
):
    run = _small_run(tmp_path / "run", row)
    good = _small_run(tmp_path / "good")
    before = _tree(tmp_path)
    args = {
        "plot": ["plot", str(run)],
        "compare": ["compare", str(good), str(run), "--out", str(tmp_path / "cmp")],
        "export-table": ["export-table", str(good), str(run), "--out", str(tmp_path / "t.csv")],
    }[command]
    line = _one_error_line(runner.invoke(app, args))
    assert line.startswith(f"{run / 'metrics.jsonl'}: {expected}"), line
    assert _tree(tmp_path) == before


def test_plots_where_a_file_stands_names_the_full_path(tmp_path):
    run = _small_run(tmp_path / "run")
    (run / "plots").write_text("not a folder")
    before = _tree(tmp_path)
    line = _one_error_line(runner.invoke(app, ["plot", str(run)]))
    assert str(run / "plots") in line and "Not a directory" in line, line
    assert _tree(tmp_path) == before


def test_registering_something_that_cannot_be_called_is_refused_at_once():
    from redqueen.evo.operators import MUTATIONS

    with pytest.raises(TypeError, match="mutation 'not_callable': expected a function or class"):
        MUTATIONS.register("not_callable")(42)
    assert "not_callable" not in MUTATIONS


def test_a_plugin_registering_a_non_callable_stops_the_run_before_its_folder(tmp_path):
    plugin = tmp_path / "numbers.py"
    plugin.write_text(
        "from redqueen.evo.operators import MUTATIONS\nMUTATIONS.register('numbers_x')(42)\n"
    )
    out = tmp_path / "runs" / "bad"
    args = ["run", "tiny", "--plugin", str(plugin), "--set", "evolution.operators={numbers_x: 1}"]
    line = _one_error_line(runner.invoke(app, [*args, "--out", str(out), "--no-plots"]))
    assert "mutation 'numbers_x': expected a function or class to register, got int" in line
    assert not (tmp_path / "runs").exists()


def test_a_plugin_registering_a_taken_name_is_named(tmp_path):
    plugin = tmp_path / "taken.py"
    plugin.write_text(
        "from redqueen.evo.operators import MUTATIONS\n"
        "MUTATIONS.register('gaussian')(lambda genome, *, rng: genome)\n"
    )
    line = _one_error_line(runner.invoke(app, ["list", "--plugin", str(plugin)]))
    assert line.startswith(f"plugin {plugin}: cannot import (ValueError: "), line
    assert "'gaussian' is already registered" in line


def test_a_plugin_path_that_is_a_directory_is_named_as_one(tmp_path):
    folder = tmp_path / "plugin.py"
    folder.mkdir()
    line = _one_error_line(runner.invoke(app, ["list", "--plugin", str(folder)]))
    assert line == f"plugin {folder}: a directory, not a .py file"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("", "--model: give a Hugging Face id, a local model folder or tiny-coder"),
        ("  ", "--model: give a Hugging Face id, a local model folder or tiny-coder"),
        ("{tmp}/absent", "--model {tmp}/absent does not exist"),
        ("{tmp}/file", "--model {tmp}/file is a file, not a model folder"),
        ("{tmp}/folder", "--model {tmp}/folder: no config.json, not a model folder"),
    ],
)
def test_eval_model_that_cannot_load_is_named_before_any_log_line(tmp_path, model, expected):
    (tmp_path / "file").write_text("weights?")
    (tmp_path / "folder").mkdir()
    out = tmp_path / "out"
    model = model.format(tmp=tmp_path)
    result = runner.invoke(app, ["eval", "--model", model, "--out", str(out), "--limit", "1"])
    assert _one_error_line(result) == expected.format(tmp=tmp_path)
    assert not out.exists()


def test_eval_model_that_is_not_found_is_the_one_line_said(tmp_path):
    out = tmp_path / "out"
    args = ["eval", "--model", "no-such-org/no-such-model", "--out", str(out), "--limit", "1"]
    line = _one_error_line(runner.invoke(app, args))  # the count of models came first
    assert line.startswith("AdapterHost: cannot load model 'no-such-org/no-such-model'"), line
    assert not out.exists()


def test_eval_out_under_a_file_is_named_before_the_model_loads(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("keep me")
    out = taken / "sub"
    args = ["eval", "--model", "tiny-coder", "--out", str(out), "--benchmark", "code_output"]
    result = runner.invoke(app, [*args, "--limit", "1"])  # a bare OSError after every answer
    assert _one_error_line(result) == f"--out {out}: {taken} is a file, not a folder"
    assert result.stdout == "" and taken.read_text() == "keep me"


def test_eval_adapter_that_does_not_fit_the_model_is_the_one_line_said(tmp_path):
    import torch

    from redqueen.genomes import LoRAGenome

    adapter = tmp_path / "mlp-adapter"
    LoRAGenome({"layers.0": (torch.zeros(2, 4), torch.zeros(4, 2))}, rank=2, alpha=4).save_peft(adapter)
    out = tmp_path / "out"
    args = ["eval", "--model", "tiny-coder", "--adapter", str(adapter), "--out", str(out)]
    args += ["--benchmark", "code_output", "--limit", "1"]
    line = _one_error_line(runner.invoke(app, args))  # the count of models came first
    assert line.startswith(f"{adapter}: adapter does not fit the base model"), line
    assert not out.exists()


@pytest.mark.parametrize("option", ["--workers", "--cpu-threads"])
def test_eval_counts_beyond_the_configurations_range_are_refused(tmp_path, capsys, option):
    from redqueen.experiments.cli import main

    args = ["eval", "--model", "tiny-coder", "--out", str(tmp_path / "out"), "--limit", "1"]
    with pytest.raises(SystemExit) as exit_info:  # they failed deep in select() and torch
        main([*args, option, "99999999999"])
    assert exit_info.value.code == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: Invalid value for '{option}': Input should be less than or equal to 1024"
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--cpus-per-trial", "inf"],
            "--cpus-per-trial: expected a positive number of CPUs, got inf",
        ),
        (
            ["--cpus-per-trial", "1e999"],
            "--cpus-per-trial: expected a positive number of CPUs, got inf",
        ),
        (["--out", "{taken}"], "--out {taken} is a file, not a sweep directory"),
        (["--seeds", "99999999999999999999"], "--seeds must be <= 10000, got 99999999999999999999"),
        (  # both trials took the one folder: a traceback, the second found it locked
            ["--grid", "population.rank=2,2"],
            "--grid: population.rank=2 and population.rank=2 would share the folder population.rank=2",
        ),
        (  # each trial's seed replaced it: two conditions, the same runs
            ["--grid", "seed=1,2"],
            "--grid seed: a sweep runs seeds 0..N-1 at every grid point; use --seeds",
        ),
        (["--set", "seed=3"], "--set seed: a sweep runs seeds 0..N-1 at every grid point; use --seeds"),
    ],
)
def test_sweep_options_are_checked_before_ray_or_any_trial_starts(tmp_path, args, expected):
    taken = tmp_path / "taken"
    taken.write_text("keep me")
    args = [a.format(taken=taken) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "sweep")]
    result = runner.invoke(app, ["sweep", "tiny", "--set", "steps=1", *args])
    assert _one_error_line(result) == expected.format(taken=taken)
    assert taken.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_compare_out_that_is_a_file_is_named_and_kept(tmp_path):
    run = _small_run(tmp_path / "run")
    taken = tmp_path / "taken"
    taken.write_text("keep me")
    before = _tree(tmp_path)
    line = _one_error_line(runner.invoke(app, ["compare", str(run), "--out", str(taken)]))
    assert line == f"--out {taken} is a file, not a folder"
    assert _tree(tmp_path) == before


@pytest.mark.parametrize(
    "text", ["", "\n\n", "# every line a comment\n", "null\n", "~", "---\n", "--- null\n"]
)
@pytest.mark.parametrize("command", ["run", "sweep"])
def test_an_empty_config_file_is_named_not_taken_for_every_default(tmp_path, text, command):
    # A truncated or blanked file would otherwise run silently on every default.
    config = tmp_path / "empty.yaml"
    config.write_text(text)
    out = tmp_path / "runs" / "out"
    line = _one_error_line(runner.invoke(app, [command, str(config), "--out", str(out)]))
    assert line == f"{config}: the file is empty (write {{}} to take every default)"
    assert not (tmp_path / "runs").exists()


def test_an_empty_base_file_is_named(tmp_path):
    empty = tmp_path / "base.yaml"
    empty.write_text("# nothing yet\n")
    config = tmp_path / "child.yaml"
    config.write_text(f"base: {empty}\nsteps: 2\n")
    line = _one_error_line(runner.invoke(app, ["run", str(config), "--out", str(tmp_path / "r")]))
    assert line == f"{empty}: the file is empty (write {{}} to take every default)"
    assert not (tmp_path / "r").exists()


def test_an_empty_config_file_raises_config_error_and_an_empty_mapping_is_every_default(tmp_path):
    from redqueen.experiments.config import ConfigError, ExperimentConfig, load_config

    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(ConfigError, match="empty.yaml: the file is empty"):
        load_config(empty)
    explicit = tmp_path / "defaults.yaml"
    explicit.write_text("{}\n")
    assert load_config(explicit) == ExperimentConfig()
