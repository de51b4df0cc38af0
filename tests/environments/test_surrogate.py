"""The surrogate environment: protocol, row schemas, reward shapes, determinism, resume."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from redqueen.environments.base import ENVIRONMENTS
from redqueen.environments.surrogate import SurrogateEnv, SurrogateOptions
from redqueen.evo import ReplacementConfig
from redqueen.fitness import TeacherReward
from redqueen.settings import ObjectiveSettings

REPLACEMENT = ReplacementConfig(replace_every=2, operators={"svd_merge": 1.0, "gaussian": 1.0}, selection="tournament")
SMALL = dict(
    population=SurrogateEnv.default_population.updated(teachers=3, students=3, rank=2, alpha=4.0),
    match=SurrogateEnv.default_match.updated(tasks_per_teacher=4, answers_per_task=3),
    replacement=REPLACEMENT,
)


def _strip(metrics):
    return {k: v for k, v in metrics.items() if k != "seconds"}


def test_registered_and_reports_every_row_schema():
    assert ENVIRONMENTS["surrogate"] is SurrogateEnv
    env = SurrogateEnv(seed=0, **SMALL)
    first = env.step()
    assert first.step == 0 and env.step_count == 1 and not first.births
    for key in ("step", "seconds", "solve_rate", "teacher_reward", "valid_share", "best_rating",
                "genotypic_diversity", "behavioural_diversity", "coverage"):
        assert np.isfinite(first.metrics[key]), key
    assert len(first.tasks) == 3 * 4
    row = first.tasks[0]
    assert set(row) == {"step", "teacher", "student", "task_type", "valid", "reason", "complexity", "solve_rate", "signature"}
    assert {r["id"] for r in first.ratings} == {m.id for m in env.population.living}
    assert all({"mu", "sigma", "lcb", "role", "objectives"} <= set(r) for r in first.ratings)
    second = env.step()  # replacement is due after step 1
    assert len(second.births) == 2 and len(second.deaths) == 2
    for child in second.births:
        assert child in env.lineage and set(env.lineage[child].parents) <= set(env.lineage.records[i].name for i in range(len(env.lineage)))
        assert env.population.get(child).genome.rank == 2
    assert all(env.lineage[d].destruction_time == 2 for d in second.deaths)


def test_rewards_have_the_real_shapes():
    env = SurrogateEnv(seed=1, options=SurrogateOptions(domain=0.3), **SMALL)
    record = env.step()
    invalid = [r for r in record.tasks if not r["valid"]]
    valid = [r for r in record.tasks if r["valid"]]
    assert invalid and all(r["reason"] == "out_of_domain" and r["solve_rate"] is None for r in invalid)
    assert all(0.0 <= r["solve_rate"] <= 1.0 for r in valid)
    expected = np.mean([TeacherReward()(r["valid"], r["solve_rate"]) for r in record.tasks])
    assert record.metrics["teacher_reward"] == pytest.approx(expected)
    assert record.metrics["valid_share"] == pytest.approx(len(valid) / len(record.tasks))
    teacher = env.population.members("teacher")[0]
    assert {"teacher_reward", "solve_rate", "valid_share", "novelty"} <= set(teacher.objectives)
    assert teacher.descriptor.shape == (2,) and teacher.cases.shape == (4,)


def test_seeded_and_resumes_bit_for_bit():
    a, b = SurrogateEnv(seed=3, **SMALL), SurrogateEnv(seed=3, **SMALL)
    for _ in range(3):
        assert _strip(a.step().metrics) == _strip(b.step().metrics)
    buffer = io.BytesIO()
    torch.save(a.state_dict(), buffer)
    buffer.seek(0)
    c = SurrogateEnv(seed=3, **SMALL)
    c.load_state_dict(torch.load(buffer, weights_only=False))
    assert c.step_count == 3
    for _ in range(2):
        ra, rc = a.step(), c.step()
        assert _strip(ra.metrics) == _strip(rc.metrics) and ra.births == rc.births and ra.tasks == rc.tasks
    for x, y in zip(a.population.living, c.population.living, strict=True):
        assert x.id == y.id
        assert all(torch.equal(p, q) for (n, (p, _)), (_, (q, _)) in zip(x.genome.items(), y.genome.items(), strict=True))
    with pytest.raises(ValueError, match="seed"):
        SurrogateEnv(seed=4, **SMALL).load_state_dict(a.state_dict())


def test_students_learn_their_tasks():
    small = {**SMALL, "replacement": REPLACEMENT.updated(replace_every=0)}
    env = SurrogateEnv(seed=0, options=SurrogateOptions(learn=True), **small)
    before = np.mean([env.evaluate(s.genome)["error"] for s in env.population.members("student")])
    for _ in range(6):
        env.step()
    after = np.mean([env.evaluate(s.genome)["error"] for s in env.population.members("student")])
    assert after < before
    assert set(env.evaluate(env.population.members("teacher")[0].genome, "teacher")) == {"valid_share", "teacher_reward"}
    with pytest.raises(ValueError, match="role"):
        env.evaluate(env.population.members("teacher")[0].genome, "judge")


def test_builds_from_the_surrogate_preset():
    from redqueen.experiments.build import build_environment
    from redqueen.experiments.config import load_config

    cfg = load_config(
        "surrogate",
        overrides=["population.teachers=2", "population.students=2", "matchmaking.hall_of_fame_share=0.4"],
    )
    env = build_environment(cfg)
    assert isinstance(env, SurrogateEnv)
    assert len(env.population.members("teacher")) == 2 and env.replacement.selection == cfg.evolution.selection
    assert env.replacement == cfg.evolution and env.matchmaker.hall_of_fame_share == 0.4
    assert np.isfinite(env.step().metrics["solve_rate"])


def test_logs_phylogenetic_diversity_and_hypervolume_across_a_resume():
    objectives = ObjectiveSettings(teacher=("rating", "teacher_reward"), student=("rating", "solve_rate"))
    a = SurrogateEnv(seed=5, objectives=objectives, **SMALL)
    first = a.step().metrics
    assert first["phylogenetic_diversity"] == pytest.approx(a.lineage.phylogenetic_diversity())
    assert first["hypervolume/teacher"] > 0 and first["hypervolume/student"] > 0
    a.step()
    assert a.step().metrics["phylogenetic_diversity"] > first["phylogenetic_diversity"]  # children added edges
    c = SurrogateEnv(seed=5, objectives=objectives, **SMALL)
    c.load_state_dict(a.state_dict())
    ra, rc = a.step().metrics, c.step().metrics
    assert rc["hypervolume/student"] == ra["hypervolume/student"]  # same reference point after resume
    single = SurrogateEnv(seed=5, **SMALL).step().metrics
    assert not any(k.startswith("hypervolume/") for k in single)


def test_map_elites_keeps_a_persistent_archive_and_logs_qd_score():
    params = {"bins": 4, "low": [0.0, 0.0], "high": [1.0, 1.0]}
    replacement = ReplacementConfig(
        replace_every=1, operators={"svd_merge": 1.0, "gaussian": 1.0}, selection="map_elites",
        selection_params=params,
    )
    settings = {**SMALL, "replacement": replacement}
    env = SurrogateEnv(seed=6, **settings)
    rows = [env.step().metrics for _ in range(4)]
    qd, coverage = [r["qd_score/student"] for r in rows[1:]], [r["coverage/student"] for r in rows[1:]]
    assert all(b >= a for a, b in zip(qd, qd[1:], strict=False)) and qd[-1] > 0  # elites are only replaced by better
    assert all(b >= a for a, b in zip(coverage, coverage[1:], strict=False)) and 0 < coverage[-1] <= 1
    grid = env.evolution.grids["student"]
    assert len(rows[-1]["archive/student"]) == round(coverage[-1] * 16)  # 4 x 4 cells
    assert grid.stats.coverage >= coverage[-1]  # a step logs the archive before its own replacement
    last = max(r.origin_time for r in env.lineage.records)
    children = [r for r in env.lineage.records if r.origin_time == last and r.role == "student"]
    assert children and {p for r in children for p in r.parents} <= {e.id for e in grid.elites}
    buffer = io.BytesIO()
    torch.save(env.state_dict(), buffer)
    buffer.seek(0)
    again = SurrogateEnv(seed=6, **settings)
    again.load_state_dict(torch.load(buffer, weights_only=True))  # plain data: no pickled objects
    assert again.evolution.grids["student"].data() == grid.data()
    ra, rb = env.step(), again.step()
    assert _strip(ra.metrics) == _strip(rb.metrics) and ra.births == rb.births


def test_settings_arguments_of_the_wrong_type_are_type_errors_naming_the_parameter():
    with pytest.raises(
        TypeError,
        match=r"^SurrogateEnv: population must be a PopulationSettings or None, got dict$",
    ):
        SurrogateEnv(population={"teachers": 1})
    with pytest.raises(
        TypeError, match=r"^SurrogateEnv: options must be a SurrogateOptions or None, got dict$"
    ):
        SurrogateEnv(options={"dim": 3})
    with pytest.raises(
        TypeError,
        match=r"^SurrogateEnv: replacement must be a ReplacementConfig or None, got dict$",
    ):
        SurrogateEnv(replacement={"replace_every": 2})
    with pytest.raises(TypeError, match=r"^SurrogateEnv: seed must be an integer, got float$"):
        SurrogateEnv(seed=1.5)


def test_any_integer_is_a_seed_taken_modulo_2_to_the_64():
    negative, wrapped = SurrogateEnv(seed=-1, **SMALL), SurrogateEnv(seed=2**64 - 1, **SMALL)
    assert negative.seed == -1
    assert _strip(negative.step().metrics) == _strip(wrapped.step().metrics)
    pairs = [
        (m.genome, s.genome)
        for m, s in zip(
            negative.population.members("teacher"),
            negative.population.members("student"),
            strict=True,
        )
    ]
    assert negative.play_matches(pairs, seed=-7) == negative.play_matches(pairs, seed=2**64 - 7)
