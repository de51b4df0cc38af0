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
from redqueen.experiments.launch import start_run
from redqueen.experiments.rundir import RunDirectory
from redqueen.experiments.snapshots import read_snapshots

SETTINGS = [
    "steps=4",
    "checkpoint_every=2",
    "population.teachers=2",
    "population.students=2",
    "evolution.replace_every=2",
    "evolution.snapshot_every=2",
    "environment.tasks_per_teacher=4", "environment.options={hidden: 8}",
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


# ------------------------------------------------------------------ 1. outputs never go through a link
def test_compare_refuses_a_compare_link_in_the_run_directory(copy, tmp_path):
    victim = _victim_dir(tmp_path)
    (copy / "compare").symlink_to(victim)
    before = _tree(tmp_path)
    result = cli.invoke(app, ["compare", str(copy)])
    assert result.exit_code == 2, result.output
    assert "symbolic link" in _error_line(result)
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("where", ["default", "out"])
def test_compare_refuses_a_link_at_one_of_its_files_and_writes_none(copy, tmp_path, where):
    victim = tmp_path / "victim.md"
    victim.write_text("keep me\n")
    folder = copy / "compare" if where == "default" else tmp_path / "results"
    folder.mkdir()
    (folder / "compare.md").symlink_to(victim)
    before = _tree(tmp_path)
    args = ["compare", str(copy)] + (["--out", str(folder)] if where == "out" else [])
    result = cli.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "symbolic link" in _error_line(result)
    assert _tree(tmp_path) == before  # neither the victim nor compare.png / compare.json


def test_compare_walks_the_runs_it_reads(copy, tmp_path):
    victim = _victim_dir(tmp_path)
    (copy / "population" / "elsewhere").symlink_to(victim)
    result = cli.invoke(app, ["compare", str(copy), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "symbolic link" in _error_line(result)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("trial_path", ["../outside", "ABSOLUTE", "link"])
def test_a_sweep_manifest_cannot_point_compare_outside_the_sweep(finished, tmp_path, trial_path):
    outside = tmp_path / "outside"
    shutil.copytree(finished, outside)
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    if trial_path == "ABSOLUTE":
        trial_path = str(outside)
    elif trial_path == "link":
        (sweep / "link").symlink_to(outside)
    manifest = {"trials": [{"condition": "c", "seed": 0, "overrides": [], "path": trial_path}]}
    (sweep / "sweep.json").write_text(json.dumps(manifest))
    result = cli.invoke(app, ["compare", str(sweep), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "sweep.json" in _error_line(result) or "symbolic link" in _error_line(result)
    assert not (tmp_path / "out").exists()


def test_eval_reports_are_not_written_through_a_link(tmp_path):
    from redqueen.experiments.evaluation import EvalReport

    victim = tmp_path / "victim.json"
    victim.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "eval_humaneval.json").symlink_to(victim)
    report = EvalReport(suite="humaneval", run_dir="run", model="m", problems=(), scores=())
    with pytest.raises(ValueError, match="symbolic link"):
        report.write(out)
    assert victim.read_text() == "keep me\n"
    assert not (out / "eval_humaneval.md").exists()


def test_a_sweep_manifest_is_not_written_through_a_link(tmp_path):
    from redqueen.experiments.sweep import write_manifest

    victim = tmp_path / "victim.json"
    victim.write_text("keep me\n")
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "sweep.json").symlink_to(victim)
    with pytest.raises(ValueError, match="symbolic link"):
        write_manifest(out, "surrogate", {}, 1, [], [])
    assert victim.read_text() == "keep me\n"


def test_a_sweep_refuses_a_linked_condition_folder_before_any_trial(tmp_path, ray_calls):
    from redqueen.experiments.sweep import run_sweep

    victim = _victim_dir(tmp_path)
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "base").symlink_to(victim)
    before = _tree(tmp_path)
    with pytest.raises(ValueError, match="symbolic link"):
        run_sweep("surrogate", out=out, seeds=1, overrides=SETTINGS, plots=False)
    assert _tree(tmp_path) == before


def test_plots_are_written_through_directory_handles_not_paths(copy, tmp_path, monkeypatch):
    from redqueen.experiments import plots, rundir

    victim = _victim_dir(tmp_path)
    shutil.rmtree(copy / "plots", ignore_errors=True)
    (copy / "plots").symlink_to(victim)  # planted after the checks ran
    monkeypatch.setattr(rundir, "check_tree", lambda path: None)
    monkeypatch.setattr(plots, "check_links", lambda *a, **k: None, raising=False)
    before = _tree(victim)
    with pytest.raises(ValueError, match="symbolic link"):
        plots.make_plots(copy)
    assert _tree(victim) == before


def test_ciao_files_are_written_through_directory_handles_not_paths(copy, tmp_path, monkeypatch):
    from redqueen.experiments import ciao

    victim = _victim_dir(tmp_path)
    shutil.rmtree(copy / "plots", ignore_errors=True)
    (copy / "plots").symlink_to(victim)
    monkeypatch.setattr(ciao, "check_links", lambda *a, **k: None, raising=False)
    result = ciao.CiaoResult([2, 4], "teacher", "student", [[0.5, 0.5], [0.5, 0.5]], 2, 0)
    before = _tree(victim)
    with pytest.raises(ValueError, match="symbolic link"):
        ciao.write_ciao(copy, result)
    assert _tree(victim) == before


# ------------------------------------------------------------------ 2. settings that reach other machines
class _RayCalls:
    def __init__(self) -> None:
        self.addresses: list[object] = []

    def __call__(self, *args, **kwargs):
        self.addresses.append(kwargs.get("address"))
        raise ConnectionError("refused by the test")


@pytest.fixture
def ray_calls(monkeypatch):
    import ray

    calls = _RayCalls()
    monkeypatch.setattr(ray, "init", calls)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    return calls


REMOTE = "ray://198.51.100.7:10001"


def test_resume_does_not_join_the_ray_cluster_config_yaml_names(copy, ray_calls):
    _set_config(copy, engine={"workers": 1, "ray_address": REMOTE})
    before = _tree(copy)
    result = cli.invoke(app, ["resume", str(copy), "--no-plots", "--steps", "6"])
    assert result.exit_code == 2, result.output
    line = _error_line(result)
    assert "engine.ray_address" in line and "--trust-remote" in line
    assert ray_calls.addresses == []
    assert _tree(copy) == before


def test_resume_joins_it_when_confirmed(copy, ray_calls):
    _set_config(copy, engine={"workers": 1, "ray_address": REMOTE})
    result = cli.invoke(app, ["resume", str(copy), "--no-plots", "--steps", "6", "--trust-remote"])
    assert ray_calls.addresses == [REMOTE]
    assert result.exit_code == 2 and "cannot connect" in _error_line(result)


def test_resume_does_not_start_wandb_from_config_yaml(copy, monkeypatch):
    import redqueen.experiments.monitor as monitor

    started = []
    monkeypatch.setattr(monitor, "wandb_available", lambda: started.append(True) or False)
    _set_config(copy, logging={"wandb": True, "wandb_project": "p", "wandb_entity": "someone-else"})
    result = cli.invoke(app, ["resume", str(copy), "--no-plots", "--steps", "6"])
    assert result.exit_code == 2, result.output
    line = _error_line(result)
    assert "logging.wandb" in line and "someone-else" in line and "--trust-remote" in line
    assert started == []
    confirmed = cli.invoke(
        app, ["resume", str(copy), "--no-plots", "--steps", "6", "--trust-remote"]
    )
    assert confirmed.exit_code == 0, confirmed.output
    assert started == [True]


def test_ciao_does_not_join_the_ray_cluster_config_yaml_names(copy, ray_calls):
    _set_config(copy, engine={"workers": 1, "ray_address": REMOTE})
    result = cli.invoke(app, ["ciao", str(copy)])
    assert result.exit_code == 2, result.output
    assert "engine.ray_address" in _error_line(result)
    assert ray_calls.addresses == []
    assert not (copy / "ciao.json").exists()


# ------------------------------------------------------------------ 3. config.yaml is read as data
@pytest.mark.parametrize("command", ["resume", "ciao"])
def test_base_in_a_run_directorys_config_is_refused(copy, tmp_path, command):
    outside = tmp_path / "outside.yaml"
    outside.write_text("{}\n")
    _set_config(copy, base=str(outside))
    before = _tree(copy)
    args = (
        ["resume", str(copy), "--no-plots", "--steps", "6"]
        if command == "resume"
        else ["ciao", str(copy)]
    )
    result = cli.invoke(app, args)
    assert result.exit_code == 2, result.output
    line = _error_line(result)
    assert "base" in line and "config.yaml" in line
    assert _tree(copy) == before


@pytest.mark.parametrize("command", ["resume", "ciao"])
def test_config_yaml_is_read_without_following_a_link_planted_after_the_walk(
    copy, tmp_path, monkeypatch, command
):
    from redqueen.experiments import rundir

    outside = tmp_path / "outside.yaml"
    outside.write_text((copy / "config.yaml").read_text())
    (copy / "config.yaml").unlink()
    (copy / "config.yaml").symlink_to(outside)
    monkeypatch.setattr(rundir, "check_tree", lambda path: None)  # the walk ran before the link
    args = (
        ["resume", str(copy), "--no-plots", "--steps", "6"]
        if command == "resume"
        else ["ciao", str(copy)]
    )
    result = cli.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "symbolic link" in _error_line(result)


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
            f"environment.options={{hidden: 8, lr: {value}}}",
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


# ------------------------------------------------------------------ 7. eval of a folder that is no run
def test_eval_of_a_folder_that_is_not_a_run_creates_nothing(tmp_path):
    folder = tmp_path / "not-a-run"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    before = _tree(folder)
    result = cli.invoke(app, ["eval", str(folder), "--limit", "1"])
    assert result.exit_code == 2, result.output
    assert "config.yaml" in _error_line(result)
    assert _tree(folder) == before


# ------------------------------------------------------------------ 8. names are shown escaped
def _no_raw_control(result) -> str:
    text = result.output + _stderr(result)
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert "\\x1b" in text, text
    return text


@pytest.fixture
def odd_named(finished, tmp_path):
    target = tmp_path / f"run{ESC}"
    shutil.copytree(finished, target)
    return target


@pytest.mark.parametrize(
    "args",
    [
        ["plot", "DIR"],
        ["resume", "DIR", "--no-plots"],
        ["compare", "DIR"],
        ["eval", "MISSING"],
        ["ciao", "MISSING"],
        ["resume", "MISSING"],
        ["export", "DIR", "student-0000", "OUT"],
    ],
)
def test_folder_names_are_printed_escaped(odd_named, tmp_path, args):
    missing = tmp_path / f"missing{ESC}"
    out = tmp_path / f"out{ESC}"
    args = [
        str(odd_named)
        if a == "DIR"
        else str(missing)
        if a == "MISSING"
        else str(out)
        if a == "OUT"
        else a
        for a in args
    ]
    if args[0] == "export":
        args[2] = RunDirectory(odd_named).population_ids()[0]
    result = cli.invoke(app, args)
    _no_raw_control(result)


def test_member_folder_names_are_printed_escaped(copy, tmp_path):
    _set_config(copy, environment={"name": "coevolution"})  # export refuses surrogate runs first
    (copy / "population" / f"x{ESC}").mkdir()
    result = cli.invoke(app, ["export", str(copy), "nobody", str(tmp_path / "out")])
    assert result.exit_code == 2
    _no_raw_control(result)


def test_condition_labels_are_printed_escaped(finished, tmp_path):
    sweep = tmp_path / "sweep"
    shutil.copytree(finished, sweep / "seed0")
    manifest = {"trials": [{"condition": f"c{ESC}", "seed": 0, "overrides": [], "path": "seed0"}]}
    (sweep / "sweep.json").write_text(json.dumps(manifest))
    result = cli.invoke(app, ["compare", str(sweep), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    _no_raw_control(result)
    assert "\x1b" not in (tmp_path / "out" / "compare.md").read_text()


def test_log_messages_show_names_escaped(finished, tmp_path):
    target = tmp_path / f"run{ESC}"
    shutil.copytree(finished, target)
    shutil.rmtree(target / "checkpoints")  # resume warns, naming the folder, and starts over
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from redqueen.experiments.cli import main; main()",
            "resume",
            str(target),
            "--no-plots",
        ],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "no checkpoint" in result.stderr
    assert "\x1b" not in result.stdout + result.stderr


# ------------------------------------------------------------------ 9. baselines are walked like runs
@pytest.mark.parametrize("kind", ["run", "adapter"])
def test_an_eval_baseline_with_a_link_inside_is_refused(copy, finished, tmp_path, kind):
    victim = tmp_path / "victim-adapter"
    member = RunDirectory(finished).population_ids()[0]
    shutil.copytree(finished / "population" / member, victim)
    baseline = tmp_path / "baseline"
    if kind == "run":
        shutil.copytree(finished, baseline)
        shutil.rmtree(baseline / "population" / member)
        (baseline / "population" / member).symlink_to(victim)
    else:
        baseline.mkdir()
        for name in os.listdir(victim):
            (baseline / name).symlink_to(victim / name)
    result = cli.invoke(app, ["eval", str(copy), "--baseline", str(baseline), "--limit", "1"])
    assert result.exit_code == 2, result.output
    assert "symbolic link" in _error_line(result)


# ------------------------------------------------------------------ 11. a plug-in that tells the check apart
@pytest.mark.slow
def test_a_plugin_that_exits_only_in_the_real_import_is_reported(tmp_path):
    plugin = tmp_path / "two_faced.py"
    plugin.write_text(
        "import os\n"
        "if not os.path.samestat(os.fstat(2), os.stat(os.devnull)):  # not the forked check\n"
        "    os._exit(0)\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from redqueen.experiments.cli import main; main()",
            "run",
            "surrogate",
            "--out",
            str(tmp_path / "run"),
            "--plugin",
            str(plugin),
        ],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    line = _error_line(result)
    assert "two_faced.py" in line and "os._exit" in line
    assert not (tmp_path / "run").exists()
