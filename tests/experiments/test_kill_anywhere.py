"""SIGKILL at random moments: after every kill, resume brings the logs back to exactly the checkpoint.

A ``surrogate`` run is forked off and killed at a random instant (mid-step, mid-log-append,
mid-checkpoint, mid-rename), again and again, each time continuing from what the last kill left;
after each kill the run directory is resumed and checked: ``metrics.jsonl``, ``tasks.jsonl`` and
``ratings.jsonl`` hold exactly the rows of the steps before the checkpoint (the same rows an
uninterrupted run wrote) and ``lineage.csv`` exactly the checkpoint's lineage. At the end the run
is finished and must equal the uninterrupted one. The loop is bounded in time.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import time

import pytest

from redqueen.evo import Lineage
from redqueen.experiments.checkpoint import latest_checkpoint
from redqueen.experiments.config import load_config
from redqueen.experiments.launch import resume_run, start_run
from redqueen.experiments.rundir import RunDirectory

SETTINGS = [
    "steps=12",
    "checkpoint_every=1",
    "population.teachers=4",
    "population.students=4",
    "evolution.replace_every=2",
    "environment.tasks_per_teacher=4", "environment.options={hidden: 8}",
]
BUDGET_SECONDS = 20.0


def _rows(path, kind: str) -> list[dict]:
    rows = RunDirectory(path).read_log(kind)
    return [{k: v for k, v in row.items() if not k.startswith("seconds")} for row in rows]


def _run_in_child(out, first: bool) -> int:
    """Fork a process that starts (or resumes) the run; returns its pid."""
    pid = os.fork()
    if pid == 0:  # the child: run, and never return into pytest
        code = 1
        try:
            runner = (
                start_run(load_config("surrogate", SETTINGS), out, plots=False)
                if first
                else resume_run(out, plots=False)
            )
            runner.run()
            runner.close()
            code = 0
        finally:
            os._exit(code)
    return pid


def _check_resumed_matches_checkpoint(out, reference) -> int:
    runner = resume_run(out, plots=False)  # cuts the logs back, rewrites lineage and population
    try:
        ckpt = latest_checkpoint(RunDirectory(out).checkpoints_dir)
        step = ckpt.step if ckpt is not None else 0
        assert runner.step_count == step
        for kind in ("metrics", "tasks", "ratings"):
            expected = [row for row in reference[kind] if row["step"] < step]
            assert _rows(out, kind) == expected, f"{kind} after a kill at checkpoint {step}"
        names = {r.name for r in Lineage.from_csv(RunDirectory(out).lineage_path).records}
        assert names == {r.name for r in runner.env.lineage.records}
    finally:
        runner.close()
    return step


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_sigkill_at_random_moments_never_leaves_logs_that_disagree_with_the_checkpoint(tmp_path):
    warm_up = start_run(
        load_config("surrogate", [*SETTINGS, "steps=1"]), tmp_path / "warm-up", plots=False
    )
    warm_up.run()  # imports what checkpoints need, so the timing below is of the run alone
    warm_up.close()
    reference_dir = tmp_path / "reference"
    runner = start_run(load_config("surrogate", SETTINGS), reference_dir, plots=False)
    started = time.perf_counter()
    try:
        runner.run()
    finally:
        runner.close()
    run_seconds = time.perf_counter() - started
    reference = {kind: _rows(reference_dir, kind) for kind in ("metrics", "tasks", "ratings")}

    out, rng = tmp_path / "killed", random.Random(20)
    deadline = time.monotonic() + BUDGET_SECONDS
    kills, steps_seen, first = 0, set(), True
    while time.monotonic() < deadline:
        pid = _run_in_child(out, first)
        time.sleep(rng.uniform(0.0, 0.5 * run_seconds))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        first = False
        if os.WIFEXITED(status):  # it finished before the kill: check it, then start over
            assert os.WEXITSTATUS(status) == 0
            _check_finished_matches_reference(out, reference_dir)
            shutil.rmtree(out)
            first = True
            continue
        if not out.exists():  # killed while building its staging directory: nothing was created
            first = True
            continue
        kills += 1
        steps_seen.add(_check_resumed_matches_checkpoint(out, reference))
    assert kills >= 5, f"only {kills} kills in {BUDGET_SECONDS:.0f} s"
    assert len(steps_seen) >= 2, "every kill landed at the same checkpoint"
    if out.exists():
        runner = resume_run(out, plots=False)
        try:
            runner.run()
        finally:
            runner.close()
        _check_finished_matches_reference(out, reference_dir)


def _check_finished_matches_reference(out, reference_dir) -> None:
    for kind in ("metrics", "tasks", "ratings"):
        assert _rows(out, kind) == _rows(reference_dir, kind)
    assert (
        RunDirectory(out).lineage_path.read_text()
        == RunDirectory(reference_dir).lineage_path.read_text()
    )
    assert RunDirectory(out).population_ids() == RunDirectory(reference_dir).population_ids()
