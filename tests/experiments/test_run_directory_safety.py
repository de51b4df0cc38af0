"""Run directories that are safe to share: nothing in them runs code, one process writes at a time,
errors are one line naming the file, SIGTERM checkpoints, and ``resume --steps`` continues a run."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from redqueen.experiments.checkpoint import CheckpointError, latest_checkpoint, save_checkpoint
from redqueen.experiments.cli import app
from redqueen.experiments.config import load_config
from redqueen.experiments.launch import resume_run, start_run
from redqueen.experiments.rundir import RunDirectory, RunDirectoryBusyError, RunLock, writer_active

SETTINGS = [
    "steps=8",
    "checkpoint_every=2",
    "population.teachers=4",
    "population.students=4",
    "evolution.replace_every=2",
    "environment.tasks_per_teacher=4", "environment.options={hidden: 8}",
]
CLI = [sys.executable, "-c", "from redqueen.experiments.cli import main; main()"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}

cli = CliRunner()


def _run(out: Path, settings=SETTINGS):
    runner = start_run(load_config("surrogate", list(settings)), out, plots=False)
    try:
        return runner.run()
    finally:
        runner.close()


def _content(path: Path) -> dict:
    """What a run must reproduce exactly (wall-clock seconds left out)."""
    run = RunDirectory(path)
    return {
        "metrics": [
            {k: v for k, v in row.items() if not k.startswith("seconds")} for row in run.read_log("metrics")
        ],
        "tasks": run.read_log("tasks"),
        "ratings": run.read_log("ratings"),
        "lineage": run.lineage_path.read_text(),
        "population": run.population_ids(),
    }


def _error_line(result) -> str:
    """The one error line on stderr (a progress bar drawn before it may precede it)."""
    err = result.err if hasattr(result, "err") else result.stderr
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and err.rstrip().endswith(errors[0]), err
    assert "Traceback" not in err, err
    return errors[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("finished") / "run"
    _run(out)
    return out


@pytest.fixture
def copy(finished, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(finished, target)
    return target


class _Payload:
    """A pickle that creates a file when it is loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


# --------------------------------------------------------------- 1. nothing in a run directory runs code
@pytest.mark.parametrize("name", ["state.json", "tensors.safetensors", "meta.json", "state.pt"])
def test_a_crafted_pickle_in_any_checkpoint_file_never_runs(copy, tmp_path, name):
    marker = tmp_path / "pwned"
    ckpt = latest_checkpoint(RunDirectory(copy).checkpoints_dir)
    if name == "state.pt":  # an old-format checkpoint whose state.pt is the payload
        meta = json.loads((ckpt.path / "meta.json").read_text())
        (ckpt.path / "meta.json").write_text(json.dumps({**meta, "format": 1}))
    (ckpt.path / name).write_bytes(pickle.dumps(_Payload(marker)))
    result = cli.invoke(app, ["resume", str(copy), "--no-plots"])
    assert result.exit_code == 2
    assert name in _error_line(result)
    assert not marker.exists()


def test_an_old_pickled_checkpoint_of_plain_data_is_still_read(tmp_path):
    root = tmp_path / "checkpoints"
    ckpt = save_checkpoint(root, step=2, state={"w": torch.ones(2)}, offsets={})
    torch.save({"w": torch.ones(2), "rng": (1, 2)}, ckpt.path / "state.pt")
    meta = json.loads((ckpt.path / "meta.json").read_text())
    (ckpt.path / "meta.json").write_text(json.dumps({**meta, "format": 1}))
    state = latest_checkpoint(root).load_state()
    assert torch.equal(state["w"], torch.ones(2)) and state["rng"] == (1, 2)


def test_resume_imports_recorded_plugins_only_when_confirmed(copy, tmp_path):
    marker = tmp_path / "imported"
    plugin = tmp_path / "evil.py"
    plugin.write_text(f"open({str(marker)!r}, 'w').close()\n")
    RunDirectory(copy).write_plugins([str(plugin), "redqueen.environments.surrogate"])
    refused = cli.invoke(app, ["resume", str(copy), "--no-plots"])
    assert refused.exit_code == 2
    line = _error_line(refused)
    assert str(plugin) in line and "--trust-plugins" in line and "surrogate" not in line
    assert not marker.exists()
    assert (
        cli.invoke(app, ["resume", str(copy), "--no-plots", "--plugin", str(plugin)]).exit_code == 0
    )
    assert marker.exists()


# --------------------------------------------------------------- 2. one process per run directory
def test_a_second_writer_is_refused_naming_the_holder_and_a_killed_holder_frees_it(copy):
    with RunLock(copy):
        assert writer_active(copy)
        result = cli.invoke(app, ["resume", str(copy), "--no-plots"])
        assert result.exit_code == 2
        assert f"in use by process {os.getpid()}" in _error_line(result)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from redqueen.experiments.runlock import RunLock;"
            f"lock = RunLock({str(copy)!r}); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(RunDirectoryBusyError, match=f"process {holder.pid}"):
        RunLock(copy)
    holder.kill()
    holder.wait()
    RunLock(copy).release()  # the kernel dropped the dead holder's lock: nothing stale remains


GATED_OPERATOR = """
import os, time
from redqueen.evo.operators import MUTATIONS, mutate


@MUTATIONS.register("gated")
def gated(genome, *, rng):
    while not os.path.exists({gate!r}):  # hold the run mid-step until the test opens the gate
        time.sleep(0.01)
    return mutate("gaussian", genome, rng=rng)
"""


@pytest.mark.slow
def test_a_resume_alongside_a_running_run_is_refused_and_the_run_writes_each_step_once(tmp_path):
    out, gate, plugin = tmp_path / "run", tmp_path / "gate", tmp_path / "gated.py"
    plugin.write_text(GATED_OPERATOR.format(gate=str(gate)))
    first = subprocess.Popen(
        [
            *CLI,
            "run",
            "surrogate",
            "--out",
            str(out),
            "--no-plots",
            "--plugin",
            str(plugin),
            *[a for s in SETTINGS for a in ("--set", s)],
            "--set",
            "evolution.operators={gated: 1.0}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        deadline = time.monotonic() + 120
        while not RunDirectory(out).log_path("metrics").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        second = cli.invoke(app, ["resume", str(out), "--no-plots", "--trust-plugins"])
    finally:
        gate.touch()
    _, err = first.communicate(timeout=180)
    assert second.exit_code == 2 and f"in use by process {first.pid}" in _error_line(second)
    assert first.returncode == 0, err
    assert [row["step"] for row in RunDirectory(out).read_log("metrics")] == list(range(8))


def test_readers_see_the_logs_as_of_the_latest_checkpoint_while_a_run_goes(copy):
    run = RunDirectory(copy)
    ckpt = latest_checkpoint(run.checkpoints_dir)
    with open(run.log_path("metrics"), "a") as handle:
        handle.write(json.dumps({"step": 99}) + "\n")
    with RunLock(copy), run.snapshot():
        assert len(run.read_log("metrics")) == ckpt.step
    assert run.read_log("metrics")[-1] == {"step": 99}  # no writer: the whole file


# --------------------------------------------------------------- 4. errors as sentences, SIGTERM
def test_a_non_utf8_config_names_the_file(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_bytes(b"steps: 2\nseed: \xff\n")
    result = cli.invoke(app, ["run", str(config), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "bad.yaml" in _error_line(result) and "UTF-8" in _error_line(result)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("lineage.csv", b"id,ancestor_list\n\xff\n"),
        ("metrics.jsonl", b'{"step": 0}\nnot json\n{"step": 1}\n'),
    ],
)
def test_plot_of_a_damaged_file_names_it(copy, name, data):
    (copy / name).write_bytes(data)
    result = cli.invoke(app, ["plot", str(copy)])
    assert result.exit_code == 2
    assert name in _error_line(result)


def test_a_checkpoint_that_does_not_fit_an_edited_config_is_named(copy):
    config = RunDirectory(copy).config_path
    config.write_text(config.read_text().replace("seed: 0", "seed: 1"))
    result = cli.invoke(app, ["resume", str(copy), "--no-plots"])
    assert result.exit_code == 2
    line = _error_line(result)
    assert "step_8" in line and "config.yaml" in line and "edited" in line


def test_a_checkpoint_without_step_count_is_named_not_answered_with_a_key(tmp_path, copy):
    run = RunDirectory(copy)
    ckpt = latest_checkpoint(run.checkpoints_dir)
    state = ckpt.load_state()
    del state["step_count"]
    save_checkpoint(
        run.checkpoints_dir, step=ckpt.step, state=state, offsets=ckpt.offsets, extra=ckpt.extra
    )
    result = cli.invoke(app, ["resume", str(copy), "--no-plots"])
    assert result.exit_code == 2
    assert "step_count" in _error_line(result) and str(ckpt.path) in _error_line(result)


def test_a_full_disk_stops_the_run_with_one_line_and_resume_is_exact(
    finished, tmp_path, capsys, monkeypatch
):
    import typer

    from redqueen.experiments import _run_logs
    from redqueen.experiments.cli import _drive

    out = tmp_path / "full"
    runner = start_run(load_config("surrogate", SETTINGS), out, plots=False)
    real_open = _run_logs.open_in

    def full_disk(root, rel, flags, mode=0o644):  # every write to metrics.jsonl fails with ENOSPC
        if str(rel) == "metrics.jsonl" and flags & os.O_APPEND:
            return os.open("/dev/full", os.O_WRONLY)
        return real_open(root, rel, flags, mode)

    monkeypatch.setattr(_run_logs, "open_in", full_disk)
    with pytest.raises(typer.Exit) as stopped:
        _drive(runner)
    assert stopped.value.exit_code == 2
    line = _error_line(capsys.readouterr())
    assert (
        "metrics.jsonl" in line and "No space left on device" in line and "redqueen resume" in line
    )
    monkeypatch.undo()
    assert cli.invoke(app, ["resume", str(out), "--no-plots"]).exit_code == 0
    assert _content(out) == _content(finished)


@pytest.mark.parametrize(
    ("code", "match"),
    [
        ("import sys\nsys.exit(0)\n", "called sys.exit(0)"),
        ("raise RuntimeError('broken plug-in')\n", "RuntimeError: broken plug-in"),
    ],
)
def test_a_plugin_that_exits_or_raises_at_import_is_one_line(tmp_path, code, match):
    plugin = tmp_path / "bad_plugin.py"
    plugin.write_text(code)
    result = cli.invoke(
        app, ["run", "surrogate", "--out", str(tmp_path / "run"), "--plugin", str(plugin)]
    )
    assert result.exit_code == 2
    assert match in _error_line(result) and "bad_plugin.py" in _error_line(result)
    assert not (tmp_path / "run").exists()


def test_a_plugin_that_raises_mid_run_stops_it_with_one_line_naming_the_plugin(tmp_path):
    plugin = tmp_path / "raising.py"
    plugin.write_text(
        "from redqueen.evo.operators import MUTATIONS\n\n\n"
        "@MUTATIONS.register('explode')\n"
        "def explode(genome, *, rng):\n"
        "    raise RuntimeError('no children today')\n"
    )
    out = tmp_path / "run"
    result = cli.invoke(
        app,
        [
            "run",
            "surrogate",
            "--out",
            str(out),
            "--no-plots",
            "--plugin",
            str(plugin),
            *[a for s in SETTINGS for a in ("--set", s)],
            "--set",
            "evolution.operators={explode: 1.0}",
        ],
    )
    assert result.exit_code == 2
    line = _error_line(result)
    assert "no children today" in line and "raising.py" in line and "redqueen resume" in line


def test_sigterm_checkpoints_and_exits_143_with_the_resume_command(finished, tmp_path):
    import threading

    out = tmp_path / "preempted"
    metrics = RunDirectory(out).log_path("metrics")

    def preempt_after_the_first_step():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if metrics.exists() and metrics.read_text().count("\n") >= 1:
                os.kill(os.getpid(), signal.SIGTERM)  # what a scheduler sends before pre-empting
                return
            time.sleep(0.005)

    previous = signal.signal(signal.SIGTERM, lambda *_: None)  # a late signal must not end pytest
    try:
        presser = threading.Thread(target=preempt_after_the_first_step, daemon=True)
        presser.start()
        result = cli.invoke(
            app,
            [
                "run",
                "surrogate",
                "--out",
                str(out),
                "--no-plots",
                *[a for s in SETTINGS for a in ("--set", s)],
            ],
        )
        presser.join()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if result.exit_code == 0:
        pytest.skip("the run finished before SIGTERM arrived")
    assert result.exit_code == 143, result.output
    assert f"Continue with: redqueen resume {out}" in result.stderr
    done = len(RunDirectory(out).read_log("metrics"))
    assert latest_checkpoint(RunDirectory(out).checkpoints_dir).step == done < 8
    assert cli.invoke(app, ["resume", str(out), "--no-plots"]).exit_code == 0
    assert _content(out) == _content(finished)


# --------------------------------------------------------------- 6. resume --steps
def test_resume_steps_continues_a_finished_run_bit_exact_with_a_longer_one(finished, tmp_path):
    short = tmp_path / "short"
    _run(short, [s if not s.startswith("steps=") else "steps=5" for s in SETTINGS])
    result = cli.invoke(app, ["resume", str(short), "--no-plots", "--steps", "8"])
    assert result.exit_code == 0, result.output
    assert _content(short) == _content(finished)
    assert load_config(str(RunDirectory(short).config_path)).steps == 8
    below = cli.invoke(app, ["resume", str(short), "--no-plots", "--steps", "3"])
    assert below.exit_code == 2 and "--steps 3 is below the 8 steps" in _error_line(below)


def test_resume_run_api_holds_the_lock_until_closed(copy):
    runner = resume_run(copy, plots=False)
    try:
        with pytest.raises(RunDirectoryBusyError):
            resume_run(copy, plots=False)
    finally:
        runner.close()
    resume_run(copy, plots=False).close()


def test_a_damaged_checkpoint_names_its_file(copy):
    ckpt = latest_checkpoint(RunDirectory(copy).checkpoints_dir)
    data = bytearray((ckpt.path / "tensors.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (ckpt.path / "tensors.safetensors").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="tensors.safetensors is damaged"):
        ckpt.load_state()
