"""Live monitoring: TensorBoard receives the numeric metrics; missing backends leave a note."""

from __future__ import annotations

import math

import pytest

from redqueen.experiments.monitor import Monitor, tensorboard_available, wandb_available


@pytest.mark.skipif(not tensorboard_available(), reason="tensorboard is not installed")
def test_tensorboard_receives_numeric_metrics(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monitor = Monitor(log_dir=tmp_path, tensorboard=True)
    assert monitor.backends == ["tensorboard"]
    for step in range(3):
        monitor.log(step, {"solve_rate": 0.25 * step, "task": "code_o", "nan": math.nan, "flag": True})
    monitor.close()
    monitor.close()  # safe twice
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert events.Tags()["scalars"] == ["solve_rate"]
    assert [(e.step, e.value) for e in events.Scalars("solve_rate")] == [(0, 0.0), (1, 0.25), (2, 0.5)]


@pytest.mark.skipif(wandb_available(), reason="wandb is installed")
def test_disabled_and_missing_backends(tmp_path):
    monitor = Monitor(log_dir=tmp_path, tensorboard=False, wandb=True)
    assert monitor.backends == []
    assert monitor.notes == ["wandb is enabled but not installed; skipping it"]
    monitor.log(0, {"solve_rate": 1.0})
    monitor.close()
    assert not (tmp_path / "tensorboard").exists()
