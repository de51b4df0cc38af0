"""End to end on the `tiny` preset (tiny-coder co-evolution, small budgets): a complete run
directory whose adapters load with PEFT, and resume after SIGKILL to the same final metrics."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from redqueen.evo import Lineage
from redqueen.experiments.checkpoint import latest_checkpoint
from redqueen.experiments.cli import app
from redqueen.experiments.rundir import RunDirectory

STEPS = 2
SMALL = [
    f"steps={STEPS}",
    "checkpoint_every=1",
    "population.teachers=2",
    "population.students=2",
    "population.rank=4",
    "population.alpha=8",
    "environment.tasks_per_teacher=3",
    "environment.answers_per_task=2",
    "environment.references=2",
    "environment.propose_max_new_tokens=96",
    "environment.solve_max_new_tokens=48",
    "environment.executor.workers=2",
    "evolution.replace_every=1",
    "evolution.cull_fraction=0.5",
    "evolution.operators={svd_merge: 0.5, lowrank_noise: 0.5}",
    "logging.tensorboard=false",
]
ARGS = [a for s in SMALL for a in ("--set", s)]

cli = CliRunner()


def _snapshot(path) -> dict:
    run = RunDirectory(path)
    return {
        "metrics": [{k: v for k, v in row.items() if not k.startswith("seconds")} for row in run.read_log("metrics")],
        "tasks": run.read_log("tasks"),
        "ratings": run.read_log("ratings"),
        "lineage": run.lineage_path.read_text(),
        "population": run.population_ids(),
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny") / "run"
    result = cli.invoke(app, ["run", "tiny", "--out", str(out), *ARGS])
    assert result.exit_code == 0, result.output
    return out


def test_tiny_run_directory_is_complete_and_adapters_load_with_peft(reference):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from redqueen.assets import tiny_coder_path
    from redqueen.genomes import LoRAGenome

    run = RunDirectory(reference)
    metrics = run.read_log("metrics")
    assert [row["step"] for row in metrics] == list(range(STEPS))
    for key in ("kl_from_base", "weight_change", "informative_share", "clip_fraction"):
        assert all(row[key] >= 0 for row in metrics)
    for key in ("tokens_generated", "tokens_trained", "coverage_cells"):
        assert metrics[-1][key] > 0
    assert sum(row["new_cells"] for row in metrics) == metrics[-1]["coverage_cells"]
    tasks = run.read_log("tasks")
    assert {"program", "ast_nodes", "halstead_volume", "base_solve_rate"} <= set(tasks[0])
    assert {row["task_type"] for row in tasks} <= {"code_o", "code_i", "code_f"} and tasks
    lineage = Lineage.from_csv(run.lineage_path)  # every ancestor id exists
    assert any(record.parents for record in lineage.records)
    assert sorted(lineage.living()) == run.population_ids()

    base = None
    for member in run.population_ids():
        folder = run.population_dir / member
        config = json.loads((folder / "adapter_config.json").read_text())
        assert config["base_model_name_or_path"] == str(tiny_coder_path())  # loads as it stands
        if base is None:
            base = AutoModelForCausalLM.from_pretrained(config["base_model_name_or_path"])
            model = PeftModel.from_pretrained(base, folder, adapter_name=member)
        else:
            model.load_adapter(folder, adapter_name=member)
        loaded = LoRAGenome.from_peft_model(model, adapter_name=member)
        saved = LoRAGenome.from_peft(folder)
        name = saved.modules[0]
        assert torch.allclose(loaded.factors(name)[1], saved.factors(name)[1])

    pngs = {p.stem for p in run.plots_dir.glob("*.png")}
    assert {"lineage", "performance", "complexity", "ratings", "diversity", "operators"} <= pngs
    assert {"learning", "task_measures", "coverage", "solve_oscillation"} <= pngs


@pytest.mark.slow
def test_tiny_resume_after_sigkill_matches_an_uninterrupted_run(reference, tmp_path):
    out = tmp_path / "killed"
    code = "from redqueen.experiments.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "run", "tiny", "--out", str(out), "--no-plots", *ARGS],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    run = RunDirectory(out)
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            ckpt = latest_checkpoint(run.checkpoints_dir) if run.checkpoints_dir.is_dir() else None
            if ckpt is not None and ckpt.step >= 1:
                os.killpg(proc.pid, signal.SIGKILL)  # the run and its sandbox workers, at once
                break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert latest_checkpoint(run.checkpoints_dir).step < STEPS

    result = cli.invoke(app, ["resume", str(out), "--no-plots"])
    assert result.exit_code == 0, result.output
    assert _snapshot(out) == _snapshot(reference)
