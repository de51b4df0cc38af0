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


def test_tensorboard_is_off_without_a_word_when_not_installed(tmp_path, monkeypatch, caplog):
    """The base install has no tensorboard: the default (tiny included) must not warn about it."""
    import sys

    from redqueen.experiments.config import load_config

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import now fails
    assert load_config("tiny", []).logging.tensorboard is None
    with caplog.at_level("WARNING", logger="redqueen"):
        quiet = Monitor(log_dir=tmp_path, tensorboard=None)
        assert quiet.backends == [] and quiet.notes == [] and not caplog.records
        asked = Monitor(log_dir=tmp_path, tensorboard=True)
    assert asked.notes == ["tensorboard is enabled but not installed; skipping it"]
    assert [r.name for r in caplog.records] == ["redqueen.experiments.monitor"]


def test_library_users_silence_or_redirect_the_package_logger(tmp_path, caplog):
    import logging

    logger = logging.getLogger("redqueen")
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)
    with caplog.at_level("WARNING", logger="redqueen"):
        Monitor(log_dir=tmp_path, tensorboard=False, wandb=True)
    assert "wandb is enabled but not installed" in caplog.text
    caplog.clear()
    with caplog.at_level("CRITICAL", logger="redqueen"):
        Monitor(log_dir=tmp_path, tensorboard=False, wandb=True)
    assert not caplog.records
