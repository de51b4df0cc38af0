"""End to end on the shipped tiny-coder: a small run directory, HumanEval and code_output."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
import yaml

from redqueen.engine import AdapterHost
from redqueen.experiments.evaluation import (
    EvalReport,
    HumanEvalSuite,
    compare_runs,
    evaluate_run,
)
from redqueen.genomes import LoRAGenome


def _make_run(path, host, members: dict[str, str], seed: int = 0):
    """A run directory as the runner writes it: config, lineage with roles, PEFT adapters."""
    (path / "population").mkdir(parents=True)
    (path / "config.yaml").write_text(
        yaml.safe_dump(
            {"seed": seed, "model": {"name": "tiny-coder", "dtype": "float32", "cpu_threads": 1}}
        )
    )
    # As Lineage.to_csv writes it: numeric ids, the member id under "name".
    rows = ["id,ancestor_list,origin_time,destruction_time,name,role,operator"]
    for index, (member, role) in enumerate(members.items()):
        genome = LoRAGenome.random(
            host.module_shapes,
            rank=4,
            alpha=8.0,
            rng=torch.Generator().manual_seed(seed * 100 + index),
            init="gaussian",
            std=0.05,
        )
        genome.save_peft(path / "population" / member, base_model="tiny-coder")
        rows.append(f"{index},[none],0,,{member},{role},")
    (path / "lineage.csv").write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def host() -> AdapterHost:
    return AdapterHost()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, host):
    return _make_run(tmp_path_factory.mktemp("coevo") / "run", host, {"student-0": "student"})


def test_humaneval_end_to_end(run_dir) -> None:
    suite = HumanEvalSuite(max_new_tokens=24)
    report = evaluate_run(run_dir, suite, limit=2)
    print("\n" + report.to_markdown())  # tiny-coder's honest HumanEval numbers (-s shows them)
    assert report.problems == ("HumanEval/0", "HumanEval/1")
    assert [(s.member, s.role, s.source) for s in report.scores] == [
        ("student-0", "student", "population"),
        ("base", "base", "base"),
    ]
    assert all(s.total == 2 and 0 <= s.passed <= 2 for s in report.scores)
    assert report.extra["max_new_tokens"] == 24
    assert 0 <= report.truncated_prompts <= 2
    saved = json.loads((run_dir / "eval_humaneval.json").read_text())
    assert EvalReport.from_dict(saved).scores == report.scores
    assert "| student-0 | student |" in (run_dir / "eval_humaneval.md").read_text()


@pytest.fixture(scope="module")
def code_output_report(run_dir, host, tmp_path_factory) -> EvalReport:
    twin = tmp_path_factory.mktemp("exported") / "exported-student-0"
    shutil.copytree(run_dir / "population" / "student-0", twin)
    report = evaluate_run(run_dir, "code_output", limit=16, baselines=[twin], host=host)
    print("\n" + report.to_markdown())
    return report


def test_code_output_scores_and_baseline_matches_its_twin(code_output_report, host) -> None:
    report = code_output_report
    assert report.base.passed > 0, "tiny-coder should solve some held-out code_o problems"
    (student,) = report.population
    (baseline,) = report.baselines
    assert baseline.member == "exported-student-0"
    # The same adapter, evaluated twice in one mixed batch, must score identically.
    assert baseline.solved == student.solved
    assert host.adapter_ids == []  # evaluation leaves a shared host as it found it


def test_compare_runs_reuses_reports(run_dir, code_output_report, tmp_path) -> None:
    host = AdapterHost()
    selfplay = _make_run(tmp_path / "selfplay", host, {"solo-0": "solo"}, seed=1)
    table = compare_runs(run_dir, selfplay, ["code_output"], limit=16, echo=False)
    population = EvalReport.load(run_dir / "eval_code_output.json")
    assert population.scores == code_output_report.scores  # reused, not re-evaluated
    baseline = EvalReport.load(selfplay / "eval_code_output.json")
    row = next(line for line in table.splitlines() if line.startswith("| code_output"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == f"{100 * population.base.pass_at_1:.1f}"
    assert cells[2] == f"{100 * baseline.headline().mean:.1f}"
    assert cells[3] == f"{100 * population.headline().mean:.1f}"
    # Both runs share the base model: the base rows agree problem by problem.
    assert population.base.solved == baseline.base.solved


def test_eval_command_over_several_runs_reports_a_ci_over_runs(tmp_path, host) -> None:
    from typer.testing import CliRunner

    from redqueen.experiments.cli import app

    runs = [_make_run(tmp_path / f"seed{seed}", host, {"student-0": "student"}, seed=seed) for seed in range(2)]
    result = CliRunner().invoke(app, ["eval", *map(str, runs), "--benchmark", "code_output", "--limit", "3"])
    assert result.exit_code == 0, result.output
    assert "over 2 runs: headline mean pass@1" in result.stdout and "t interval over runs" in result.stdout
    assert all((run / "eval_code_output.json").is_file() for run in runs)
