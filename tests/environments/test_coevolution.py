"""CoevolutionEnv on tiny-coder: two steps with replacement, row schemas, bit-for-bit resume."""

from __future__ import annotations

import io

import pytest
import torch

from redqueen.environments import CoevolutionEnv, StepRecord
from redqueen.experiments.build import build_environment
from redqueen.experiments.config import load_config

# 2 teachers + 2 students, tiny budgets, replacement after every step.
SMALL = [
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
    "evolution.selection=tournament",
    "evolution.selection_params={tournsize: 2}",
    "evolution.operators={svd_merge: 0.5, lowrank_noise: 0.5}",
    "evolution.elitism=1",
    "seed=3",
]

METRIC_KEYS = {
    "step",
    "seconds",
    "solve_rate",
    "teacher_reward",
    "valid_share",
    "best_rating",
    "genotypic_diversity",
    "behavioural_diversity",
    "phylogenetic_diversity",
    "coverage",
    "kl_from_base",
    "weight_change",
    "informative_share",
    "whiten_pooled_share",
    "clip_fraction",
    "tokens_generated",
    "tokens_trained",
    "coverage_cells",
    "new_cells",
    "probe_tokens",
}
MEASURES = ("ast_depth", "ast_nodes", "cyclomatic", "halstead_volume", "loc")
TASK_KEYS = {
    "step",
    "teacher",
    "student",
    "task_type",
    "valid",
    "reason",
    "complexity",
    "solve_rate",
    "signature",
    "program",
    *MEASURES,
    "base_solve_rate",
}
RATING_KEYS = {
    "step",
    "id",
    "role",
    "mu",
    "sigma",
    "lcb",
    "objectives",
    "tokens_generated",
    "tokens_trained",
    "kl_from_base",
    "weight_change",
    "clip_fraction",
}


def _snapshot(state: dict) -> dict:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


@pytest.fixture(scope="module")
def played():
    """Run step 0, snapshot the state, run step 1; both steps replace members."""
    env = build_environment(load_config("tiny", SMALL))
    try:
        first = env.step()
        state = _snapshot(env.state_dict())
        second = env.step()
        yield env, first, state, second
    finally:
        env.close()


def test_built_from_the_config(played):
    env = played[0]
    assert isinstance(env, CoevolutionEnv)
    assert [len(env.population.members(r)) for r in ("teacher", "student")] == [2, 2]


def test_rows_follow_the_schema(played):
    env, first, _, second = played
    for record in (first, second):
        assert isinstance(record, StepRecord)
        assert METRIC_KEYS <= set(record.metrics)
        phases = [f"seconds_{p}" for p in ("propose", "verify", "solve", "grade", "learn", "other")]
        assert all(record.metrics[k] >= 0 for k in phases[:-1])
        assert sum(record.metrics[k] for k in phases) == pytest.approx(record.metrics["seconds"])
        assert all(isinstance(v, float | int) for v in record.metrics.values())
        assert 0.0 <= record.metrics["valid_share"] <= 1.0
        assert len(record.tasks) == 2 * 3  # every teacher proposes its batch
        for row in record.tasks:
            assert set(row) == TASK_KEYS
            assert row["step"] == record.step
            assert row["task_type"] in ("code_o", "code_i", "code_f")
            if row["valid"]:
                assert row["reason"] is None and isinstance(row["complexity"], float)
                assert 0.0 <= row["solve_rate"] <= 1.0 and len(row["signature"]) == 12
                assert "def f" in row["program"] and 0.0 <= row["base_solve_rate"] <= 1.0
                assert all(row[key] >= 0.0 for key in MEASURES) and row["loc"] >= 1.0
                assert row["ast_nodes"] > row["ast_depth"]
            else:
                assert (
                    isinstance(row["reason"], str)
                    and row["complexity"] is None
                    and row["solve_rate"] is None
                )
                assert row["base_solve_rate"] is None and row["ast_nodes"] is None
        assert len({row["id"] for row in record.ratings}) == len(record.ratings) == 4
        for row in record.ratings:
            assert set(row) == RATING_KEYS and row["lcb"] == pytest.approx(
                row["mu"] - 3 * row["sigma"]
            )
    # tiny-coder proposes mostly valid tasks: the step exercised verification, solving and grading.
    assert any(row["valid"] for record in (first, second) for row in record.tasks)
    assert first.metrics["answers"] + second.metrics["answers"] > 0
    assert [row["task_type"] for row in first.tasks[:3]] == ["code_o", "code_i", "code_f"]
    assert second.metrics["coverage"] >= first.metrics["coverage"]
    assert {row["id"] for row in second.ratings} == {ind.id for ind in env.population.living}


def test_learning_and_compute_are_accounted(played):
    env, first, state, second = played
    for record in (first, second):
        metrics = record.metrics
        # Every sampled token belongs to one adapter; the learner ran forward and backward.
        assert metrics["tokens_generated"] == metrics["generated_tokens"] > 0
        assert metrics["tokens_trained"] > 0
        members = [row for row in record.ratings if row["kl_from_base"] is not None]
        assert members and all(row["weight_change"] >= 0 for row in members)
        assert 0.0 <= metrics["informative_share"] <= 1.0
        # Each member's own (adapter, role, task type) group is far below 16 samples here.
        assert metrics["whiten_pooled_share"] == 1.0
        assert metrics["kl_from_base"] >= 0.0 and metrics["weight_change"] > 0.0
    assert second.metrics["kl_from_base"] > 0.0  # sampled after an update with lr > 0
    # Coverage cells: cumulative, the new ones counted once, kept in the checkpoint as strings.
    assert first.metrics["coverage_cells"] == first.metrics["new_cells"]
    assert (
        second.metrics["coverage_cells"]
        == first.metrics["coverage_cells"] + (second.metrics["new_cells"])
    )
    assert len(state["cells"]) == first.metrics["coverage_cells"]
    assert all(isinstance(cell, str) and cell.count("/") == 3 for cell in state["cells"])
    assert set(state["cells"]) <= env.cells


def test_replacement_follows_into_the_host(played):
    env, first, _, second = played
    for record in (first, second):
        assert len(record.births) == 2 and len(record.deaths) == 2  # one per role per step
    living = {ind.id for ind in env.population.living}
    assert set(env.host.adapter_ids) == living
    assert len(living) == 4 and not living & set(first.deaths + second.deaths)
    for child_id in second.births:
        record = env.lineage[child_id]
        assert record.parents and all(p in env.lineage for p in record.parents)
        assert env.population.get(child_id).genome.rank == 4
    assert env.step_count == 2


def test_resume_gives_the_identical_next_step(played):
    _, _, state, second = played
    resumed = build_environment(load_config("tiny", SMALL))
    try:
        resumed.load_state_dict(state)
        again = resumed.step()
    finally:
        resumed.close()
    def timeless(metrics):  # timing columns (seconds, seconds_<phase>) differ run to run
        return {k: v for k, v in metrics.items() if not k.startswith("seconds")}

    assert timeless(again.metrics) == timeless(second.metrics)
    assert again.tasks == second.tasks
    assert again.ratings == second.ratings
    assert (again.births, again.deaths) == (second.births, second.deaths)
