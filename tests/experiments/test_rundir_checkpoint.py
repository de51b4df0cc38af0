"""Run-directory logs, offsets and truncation; atomic checkpoints."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from redqueen.experiments.checkpoint import (
    CheckpointError,
    latest_checkpoint,
    list_checkpoints,
    remove_partial_checkpoints,
    save_checkpoint,
)
from redqueen.experiments.rundir import RunDirectory, RunDirectoryError


def _rows(step: int) -> list[dict]:
    return [{"step": step, "value": float(step) / 3, "np": np.float32(step), "nan": math.nan}]


def test_logs_append_truncate_and_read(tmp_path):
    run = RunDirectory(tmp_path)
    run.open_logs()
    run.append("metrics", _rows(0))
    run.sync_logs()
    offsets = run.log_offsets()
    run.append("metrics", _rows(1))
    run.append("tasks", [{"step": 1, "task_type": "code_o"}])
    run.close_logs()
    assert [r["step"] for r in run.read_log("metrics")] == [0, 1]
    row = run.read_log("metrics")[0]
    assert row["np"] == 0.0 and row["nan"] is None  # numpy scalars and NaN become plain JSON

    run.truncate_logs(offsets)
    assert [r["step"] for r in run.read_log("metrics")] == [0]
    assert run.read_log("tasks") == []
    run.open_logs()
    run.append("metrics", _rows(5))
    run.close_logs()
    assert [r["step"] for r in run.read_log("metrics")] == [0, 5]


def test_read_log_skips_a_torn_last_line_but_not_a_bad_middle_line(tmp_path):
    run = RunDirectory(tmp_path)
    path = run.log_path("ratings")
    path.write_text('{"step": 0}\n{"step": 1, "mu": 2')
    assert run.read_log("ratings") == [{"step": 0}]
    path.write_text('{"step": 0}\nnot json\n{"step": 2}\n')
    with pytest.raises(RunDirectoryError, match="ratings.jsonl: line 2"):
        run.read_log("ratings")


def test_require_names_the_missing_path(tmp_path):
    with pytest.raises(RunDirectoryError, match="does not exist"):
        RunDirectory(tmp_path / "nope").require()
    with pytest.raises(RunDirectoryError, match="config.yaml is missing"):
        RunDirectory(tmp_path).require()
    run = RunDirectory(tmp_path)
    run.write_config({"steps": 3, "nested": {"x": (1, 2)}})
    assert run.read_config() == {"steps": 3, "nested": {"x": [1, 2]}}


def test_checkpoint_roundtrip_keep_and_latest(tmp_path):
    root = tmp_path / "checkpoints"
    generator = torch.Generator().manual_seed(3)
    for step in (2, 4, 6):
        save_checkpoint(
            root,
            step=step,
            state={"step": step, "rng": generator.get_state(), "w": torch.full((2,), float(step))},
            offsets={"metrics.jsonl": 10 * step},
            extra={"elapsed": 0.5 * step},
            keep=2,
        )
    assert [c.step for c in list_checkpoints(root)] == [4, 6]
    latest = latest_checkpoint(root)
    assert latest.step == 6 and latest.offsets == {"metrics.jsonl": 60}
    assert latest.extra == {"elapsed": 3.0}
    state = latest.load_state()
    assert torch.equal(state["w"], torch.full((2,), 6.0))
    assert torch.equal(state["rng"], generator.get_state())


def test_partial_checkpoint_is_ignored_and_removed(tmp_path):
    root = tmp_path / "checkpoints"
    save_checkpoint(root, step=1, state={"a": 1}, offsets={})
    # A write cut short: the temporary directory exists but was never renamed.
    partial = root / ".step_2.tmp"
    partial.mkdir()
    (partial / "state.pt").write_bytes(b"half")
    assert latest_checkpoint(root).step == 1
    remove_partial_checkpoints(root)
    assert not partial.exists()
    assert latest_checkpoint(tmp_path / "absent") is None


def test_a_checkpoints_path_that_is_not_a_directory_is_named(tmp_path):
    root = tmp_path / "checkpoints"
    root.write_bytes(b"")  # taken for "no checkpoint yet", a resume started the run over
    with pytest.raises(CheckpointError, match="checkpoints is not a directory"):
        latest_checkpoint(root)


def test_corrupt_checkpoint_names_the_file(tmp_path):
    root = tmp_path / "checkpoints"
    ckpt = save_checkpoint(root, step=3, state={"a": 1}, offsets={})
    (ckpt.path / "tensors.safetensors").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="tensors.safetensors is damaged"):
        ckpt.load_state()
    (ckpt.path / "meta.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(CheckpointError, match="unsupported checkpoint format"):
        latest_checkpoint(root)


@pytest.mark.parametrize(
    ("key", "value"),
    [("offsets", {"metrics.jsonl": -5}), ("offsets", {"metrics.jsonl": "12"}), ("step", -4), ("step", 2.5)],
)
def test_a_negative_or_non_integer_step_or_offset_names_meta_json(tmp_path, key, value):
    root = tmp_path / "checkpoints"
    ckpt = save_checkpoint(root, step=3, state={"a": 1}, offsets={"metrics.jsonl": 10})
    meta = json.loads((ckpt.path / "meta.json").read_text())
    meta[key] = value  # -5 was read as a length and failed naming no file
    (ckpt.path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"meta.json: missing or malformed step/offsets"):
        latest_checkpoint(root)


def test_write_population_replaces_the_folder(tmp_path):
    from redqueen.genomes import LoRAGenome

    rng = torch.Generator().manual_seed(0)
    genomes = {
        f"teacher-000{i}": LoRAGenome.random({"layer.q": (6, 5)}, rank=2, alpha=4.0, rng=rng, init="gaussian")
        for i in range(3)
    }
    run = RunDirectory(tmp_path)
    assert run.write_population(genomes.items(), base_model="/models/base") == sorted(genomes)
    run.write_population([("teacher-0001", genomes["teacher-0001"]), ("x", None)], base_model=None)
    assert run.population_ids() == ["teacher-0001"]
    loaded = LoRAGenome.from_peft(run.population_dir / "teacher-0001")
    a, b = genomes["teacher-0001"].factors("layer.q")
    la, lb = loaded.factors("layer.q")
    assert torch.allclose(a, la) and torch.allclose(b, lb)
