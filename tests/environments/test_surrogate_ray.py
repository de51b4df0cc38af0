"""The ``surrogate`` run on 2 Ray actors against the single-process run, a lost actor included.

Replicas rebuild the frozen model from the seed and receive genomes as tensors; the driver draws
every random number in the same order, so the logs agree exactly (floats included). A killed
actor costs a retry of its share of the step, not the run.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("ray", reason="the distributed surrogate needs the ray extra")

from redqueen.engine.distributed import connect  # noqa: E402
from redqueen.experiments.config import load_config  # noqa: E402
from redqueen.experiments.launch import start_run  # noqa: E402

STEPS = 4


def run(out, workers, callbacks=()):
    cfg = load_config("surrogate", overrides=[f"steps={STEPS}", f"engine.workers={workers}"])
    runner = start_run(cfg, out, plots=False)
    try:
        assert runner.run(callbacks).complete
        pool = runner.env._pool
        restarts = None if pool is None else pool.restarts
    finally:
        runner.close()
    logs = {}
    for name in ("metrics", "tasks", "ratings"):
        rows = [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines()]
        for row in rows:
            row.pop("seconds", None)
        logs[name] = rows
    logs["lineage"] = (out / "lineage.csv").read_text()
    return logs, restarts


@pytest.mark.slow
def test_two_actors_match_one_process_even_when_one_is_killed(tmp_path):
    import ray

    want, _ = run(tmp_path / "single", 0)
    connect(num_cpus=2, num_gpus=2)  # logical GPUs: placement only
    killed = []

    def kill_one(record, runner):
        if record.step == 1:
            ray.kill(runner.env._pool.actors[0])
            killed.append(record.step)

    got, restarts = run(tmp_path / "cluster", 2, [kill_one])
    assert killed == [1] and restarts == 1
    assert len(got["metrics"]) == STEPS
    assert got == want
    founders = 16  # the preset's 8 teachers + 8 students; replacement added children
    assert len(got["lineage"].strip().splitlines()) - 1 > founders
