"""Hostile run directories and configurations: ids that are paths, symlinks, start-up failures,
non-finite values, YAML bombs and plug-ins that end the process. Each is refused with one line
and exit status 2, and nothing outside the run directory (or inside it) is touched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from redqueen.experiments._safe_paths import check_member_id
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

cli = CliRunner()


def _error_line(result) -> str:
    err = result.err if hasattr(result, "err") else result.stderr
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


def _resume(path: Path):
    return cli.invoke(app, ["resume", str(path), "--no-plots", "--steps", "6"])


# ------------------------------------------------------------------ G6: ids are checked before they are paths
HOSTILE_IDS = [
    "../../escape",
    "..",
    ".",
    "",
    "a/b",
    "teacher-0003/../../../escape",
    "a\nb",
    "a\x00b",
    "t\u0435acher-0003",  # a Cyrillic e
    "teacher-0003\n",
    "x" * 300,
    ".hidden",
]


@pytest.mark.parametrize("good", ["teacher-0003", "student-0000", "solo-12", "a.b_c-1"])
def test_plain_ids_pass(good):
    assert check_member_id(good) == good


@pytest.mark.parametrize("bad", [*HOSTILE_IDS, "/abs/olute", 3, None])
def test_hostile_ids_are_refused(bad):
    with pytest.raises(ValueError, match="member id"):
        check_member_id(bad)


def _rewrite_state(copy: Path, old: str, new: str) -> None:
    """Rename a member inside the latest checkpoint, keeping its SHA-256 valid."""
    ckpt = latest_checkpoint(copy / "checkpoints")
    state_path = ckpt.path / "state.json"
    text = state_path.read_text().replace(json.dumps(old), json.dumps(new))
    state_path.write_text(text)
    meta = json.loads((ckpt.path / "meta.json").read_text())
    meta["sha256"]["state.json"] = hashlib.sha256(text.encode()).hexdigest()
    (ckpt.path / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("hostile", [*HOSTILE_IDS, "ABSOLUTE"])
def test_a_member_id_in_state_json_never_becomes_a_path(copy, tmp_path, hostile):
    if hostile == "ABSOLUTE":
        hostile = str(tmp_path / "absolute-victim")
    living = RunDirectory(copy).population_ids()
    _rewrite_state(copy, living[-1], hostile)
    before = _tree(tmp_path)
    result = _resume(copy)
    assert result.exit_code == 2, result.output
    assert "id" in _error_line(result)  # an empty id is refused as the state is loaded
    assert _tree(tmp_path) == before  # nothing written inside or outside the run directory


def test_a_member_id_in_members_json_never_becomes_a_path(copy, tmp_path):
    victim = tmp_path / "victim"
    shutil.copytree(copy / "population" / RunDirectory(copy).population_ids()[0], victim)
    index = sorted((copy / "snapshots").glob("step_*/members.json"))[0]
    rows = json.loads(index.read_text())
    rows[0]["id"] = "../../../victim"
    index.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match="member id"):
        read_snapshots(copy)
    result = cli.invoke(app, ["ciao", str(copy)])
    assert result.exit_code == 2
    assert "member id" in _error_line(result)


# ------------------------------------------------------------------ G5: symlinks are never followed
FILE_LINKS = [
    ".lock",
    ".snapshot.lock",
    "metrics.jsonl",
    "tasks.jsonl",
    "ratings.jsonl",
    "config.yaml",
    "lineage.csv",
    ".lineage.csv.tmp",
    ".config.yaml.tmp",
    "plugins.json",
    "checkpoints/step_4/meta.json",
    "checkpoints/step_4/state.json",
]
DIR_LINKS = ["population", "checkpoints", "snapshots", "plots", "checkpoints/step_4", "population/MEMBER",
             ".population.tmp", "snapshots/step_00002"]


def _plant(copy: Path, name: str, victim: Path) -> None:
    if "MEMBER" in name:
        name = name.replace("MEMBER", RunDirectory(copy).population_ids()[0])
    link = copy / name
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(victim)


@pytest.mark.parametrize("name", FILE_LINKS + DIR_LINKS)
def test_a_symlink_anywhere_in_the_run_directory_is_refused_and_its_target_untouched(copy, tmp_path, name):
    victim = tmp_path / "victim"
    if name in DIR_LINKS:
        victim.mkdir()
        (victim / "precious.txt").write_text("keep me\n")
    else:
        victim.write_text("keep me\n" * 50)
    _plant(copy, name, victim)
    before_victim, before_run = _tree(tmp_path / "victim") if victim.is_dir() else victim.read_bytes(), _tree(copy)
    result = _resume(copy)
    assert result.exit_code == 2, result.output
    assert "symbolic link" in _error_line(result)
    after_victim = _tree(victim) if victim.is_dir() else victim.read_bytes()
    assert after_victim == before_victim
    assert _tree(copy) == before_run


@pytest.mark.parametrize("command", ["plot", "export", "ciao"])
def test_a_dangling_link_is_not_created_by_a_reader(copy, tmp_path, command):
    victim = tmp_path / "created-by-a-reader"
    (copy / ".snapshot.lock").unlink()
    (copy / ".snapshot.lock").symlink_to(victim)
    args = {
        "plot": ["plot", str(copy)],
        "export": ["export", str(copy), RunDirectory(copy).population_ids()[0], str(tmp_path / "out")],
        "ciao": ["ciao", str(copy)],
    }[command]
    result = cli.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "symbolic link" in _error_line(result)
    assert not victim.exists() and not victim.is_symlink()


def test_the_run_directory_itself_may_be_a_link(copy, tmp_path):
    link = tmp_path / "latest"
    link.symlink_to(copy)
    result = _resume(link)
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------ G7, G8: a failed start removes only its own
def _failing_build(action):
    def build(plan):
        action()
        raise RuntimeError("no environment today")

    return build


def test_a_failed_start_keeps_a_run_that_started_inside_the_folder_it_created(tmp_path, monkeypatch):
    shared = tmp_path / "new"
    other = shared / "other"

    def other_run_starts():
        other.mkdir(parents=True)
        (other / "config.yaml").write_text("steps: 1\n")

    monkeypatch.setattr("redqueen.experiments.build.EnvironmentPlan.build", _failing_build(other_run_starts))
    with pytest.raises(RuntimeError, match="no environment today"):
        start_run(load_config("surrogate", SETTINGS), shared / "mine" / "run", plots=False)
    assert (other / "config.yaml").read_text() == "steps: 1\n"
    assert sorted(p.name for p in shared.iterdir()) == ["other"]


def test_a_failed_start_removes_the_folders_it_created_when_nothing_else_is_there(tmp_path, monkeypatch):
    monkeypatch.setattr("redqueen.experiments.build.EnvironmentPlan.build", _failing_build(lambda: None))
    with pytest.raises(RuntimeError):
        start_run(load_config("surrogate", SETTINGS), tmp_path / "a" / "b" / "run", plots=False)
    assert list(tmp_path.iterdir()) == []


def test_a_start_that_fails_half_way_through_making_parents_removes_the_ones_it_made(tmp_path, monkeypatch):
    real_mkdir = Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self.name == "b":
            raise PermissionError(13, "Permission denied")
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    with pytest.raises(ValueError, match="Permission denied"):
        start_run(load_config("surrogate", SETTINGS), tmp_path / "a" / "b" / "run", plots=False)
    assert list(tmp_path.iterdir()) == []


def test_a_failing_clean_up_still_removes_the_staging_folder(tmp_path, monkeypatch):
    class Env:
        def close(self):
            raise RuntimeError("close failed")

    out = tmp_path / "run"

    def build(plan):
        out.mkdir()
        (out / "someone-elses").write_text("x")  # the target is no longer empty: the rename fails
        return Env()

    monkeypatch.setattr("redqueen.experiments.build.EnvironmentPlan.build", build)
    with pytest.raises(OSError):
        start_run(load_config("surrogate", SETTINGS), out, plots=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert (out / "someone-elses").read_text() == "x"


@pytest.mark.slow
def test_sigterm_during_start_up_leaves_no_staging_folder(tmp_path):
    script = textwrap.dedent(
        f"""
        import os, signal, sys, time
        import redqueen.experiments.build as build
        from redqueen.experiments.config import load_config
        from redqueen.experiments.launch import start_run

        def slow(plan):
            open({str(tmp_path / "building")!r}, "w").close()
            time.sleep(60)

        build.EnvironmentPlan.build = slow
        start_run(load_config("surrogate", []), {str(tmp_path / "out" / "run")!r})
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script], env=ENV, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not (tmp_path / "building").exists() and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 128 + signal.SIGTERM
    assert sorted(p.name for p in tmp_path.iterdir()) == ["building"]


# ------------------------------------------------------------------ G9: non-finite values
@pytest.mark.parametrize(
    "setting",
    [
        "population.init_std=.inf",
        "population.init_std=1e39",
        "population.init_std=.nan",
        "population.alpha=1e300",
        "population.alpha=.inf",
        "learner.lr=.inf",
        "learner.lr=1e30",
        "learner.clip=.nan",
        "sampling.temperature=.inf",
        "matchmaking.floor=.nan",
    ],
)
def test_non_finite_or_absurd_config_values_are_refused(setting):
    with pytest.raises(ConfigError, match=setting.split("=")[0].split(".")[-1]):
        load_config("surrogate", [setting])


def test_a_non_finite_operator_parameter_is_refused():
    with pytest.raises(ConfigError, match="sigma"):
        load_config("surrogate", ["evolution.operator_params={gaussian: {sigma: .inf}}"])


def test_an_operator_that_returns_nan_factors_is_named_and_nothing_is_exported(tmp_path):
    plugin = tmp_path / "nan_mutation.py"
    plugin.write_text(
        "from redqueen.evo.operators import MUTATIONS\n\n\n"
        "@MUTATIONS.register('nan_noise')\n"
        "def nan_noise(genome, *, rng):\n"
        "    child = genome.clone()\n"
        "    for name in child.modules:\n"
        "        a, b = child.factors(name)\n"
        "        a.mul_(float('nan'))\n"
        "    return child\n"
    )
    out = tmp_path / "run"
    from redqueen.evo.operators import MUTATIONS

    try:
        result = cli.invoke(
            app,
            ["run", "surrogate", "--out", str(out), "--no-plots", "--plugin", str(plugin), *SET_ARGS,
             "--set", "evolution.operators={nan_noise: 1.0}"],
        )
    finally:
        if "nan_noise" in MUTATIONS:  # the plug-in's mutation leaves with it
            MUTATIONS.unregister("nan_noise")
    assert result.exit_code == 2, result.output
    line = _error_line(result)
    assert "nan_noise" in line and "non-finite" in line
    from redqueen.genomes import LoRAGenome

    for member in RunDirectory(out).population_ids():
        assert LoRAGenome.from_peft(out / "population" / member).is_finite()


# ------------------------------------------------------------------ G10: YAML bombs
def test_a_yaml_alias_bomb_is_refused_before_it_is_expanded(tmp_path):
    levels = ['&a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level in range(1, 10):
        levels.append(f"&a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    bomb = tmp_path / "bomb.yaml"  # 10**10 strings once expanded, under a key that is read
    bomb.write_text("environment:\n  name: surrogate\n  options:\n    notes: [" + ", ".join(levels) + "]\n")
    start = time.perf_counter()
    result = cli.invoke(app, ["run", str(bomb), "--out", str(tmp_path / "run")])
    assert time.perf_counter() - start < 10
    assert result.exit_code == 2
    assert "alias" in _error_line(result) and "bomb.yaml" in _error_line(result)
    assert not (tmp_path / "run").exists()


def test_a_huge_config_file_is_refused(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("steps: 1\n" + "# padding\n" * 1_000_000)
    result = cli.invoke(app, ["run", str(big), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "big.yaml" in _error_line(result)


def test_a_recursive_alias_is_refused(tmp_path):
    loop = tmp_path / "loop.yaml"
    loop.write_text("environment: &e\n  options: {inner: *e}\n")
    result = cli.invoke(app, ["run", str(loop), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "loop.yaml" in _error_line(result)


# ------------------------------------------------------------------ G11: a plug-in that ends the process
@pytest.mark.parametrize("code", ["import os\nos._exit(0)\n", "import os\nos._exit(3)\n",
                                  "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"])
@pytest.mark.slow
def test_a_plugin_that_ends_the_process_at_import_is_reported(tmp_path, code):
    plugin = tmp_path / "hard_exit.py"
    plugin.write_text(code)
    result = subprocess.run(
        [sys.executable, "-c", "from redqueen.experiments.cli import main; main()", "run", "surrogate",
         "--out", str(tmp_path / "run"), "--plugin", str(plugin)],
        env=ENV, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2, result.stderr
    line = _error_line(result)
    assert "hard_exit.py" in line and "ended the process" in line
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------ the same rules on the writing side
def _genome(finite: bool = True):
    import torch

    from redqueen.genomes import LoRAGenome

    genome = LoRAGenome.random(
        {"model.layers.0.self_attn.q_proj": (8, 8)}, rank=2, alpha=4.0,
        rng=torch.Generator().manual_seed(0), init="gaussian",
    )
    if not finite:
        genome.factors("model.layers.0.self_attn.q_proj")[0].fill_(float("nan"))
    return genome


def _bare_run(tmp_path: Path) -> RunDirectory:
    run = RunDirectory(tmp_path / "run")
    run.path.mkdir()
    run.write_config({"steps": 1})
    return run


@pytest.mark.parametrize("bad", ["../escape", "ABSOLUTE", "a\nb"])
def test_writing_a_population_checks_every_id_before_writing_any(tmp_path, bad):
    bad = str(tmp_path / "escape") if bad == "ABSOLUTE" else bad
    run = _bare_run(tmp_path)
    with pytest.raises(ValueError, match="member id"):
        run.write_population([("student-0000", _genome()), (bad, _genome())], base_model=None)
    assert not run.population_dir.exists() and not (tmp_path / "escape").exists()


def test_writing_a_snapshot_checks_every_id_before_writing_any(tmp_path):
    from types import SimpleNamespace

    from redqueen.experiments.snapshots import write_snapshots

    run = _bare_run(tmp_path)
    members = [SimpleNamespace(id=i, role="student", genome=_genome(), rating=None)
               for i in ("student-0000", "../../escape")]
    with pytest.raises(ValueError, match="member id"):
        write_snapshots(run.path, {2: members}, base_model=None)
    assert not (run.path / "snapshots").exists() and not (tmp_path / "escape").exists()


def test_export_refuses_an_adapter_with_non_finite_factors(tmp_path):
    run = _bare_run(tmp_path)
    run.write_population([("student-0001", _genome(finite=False))], base_model="base")
    result = cli.invoke(app, ["export", str(run.path), "student-0001", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "non-finite" in _error_line(result)
    assert not (tmp_path / "out").exists()


def test_a_link_planted_while_a_run_goes_is_refused_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    runner = start_run(load_config("surrogate", SETTINGS), tmp_path / "run", plots=False)
    try:
        (runner.run_dir.path / "metrics.jsonl").unlink()
        (runner.run_dir.path / "metrics.jsonl").symlink_to(victim)
        with pytest.raises(ValueError, match="symbolic link"):
            runner.run()
    finally:
        runner.close()
    assert victim.read_text() == "keep me\n"
