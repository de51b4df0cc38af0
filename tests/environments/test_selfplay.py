"""SelfPlayEnv: one adapter proposes and solves, compute-matched with the co-evolution env."""

from __future__ import annotations

import numpy as np
import pytest

from redqueen.environments import SelfPlayEnv
from redqueen.environments.task_buffer import TaskBuffers
from redqueen.experiments.build import build_environment
from redqueen.experiments.config import ConfigError, load_config

SMALL = [
    "population.solo=2",
    "population.rank=4",
    "population.alpha=8",
    "environment.tasks_per_teacher=2",
    "environment.answers_per_task=2",
    "environment.references=2",
    "environment.propose_max_new_tokens=96",
    "environment.solve_max_new_tokens=48",
    "environment.executor.workers=2",
    "seed=1",
]


def test_selfplay_runs_a_step_on_its_own_tasks():
    env = build_environment(load_config("tiny-selfplay", SMALL))
    try:
        assert isinstance(env, SelfPlayEnv)
        record = env.step()
        state = env.state_dict()
    finally:
        env.close()
    solo = [ind.id for ind in env.population.members("solo")]
    assert len(solo) == 2 and set(env.host.adapter_ids) == set(solo)
    assert len(record.tasks) == 2 * 2
    # Each member proposes its own batch and solves its own tasks.
    assert all(row["teacher"] == row["student"] for row in record.tasks)
    assert sorted(row["teacher"] for row in record.tasks) == sorted(solo * 2)
    valid = sum(row["valid"] for row in record.tasks)
    assert record.metrics["proposals"] == 4
    assert record.metrics["answers"] == 2 * valid  # n answers per valid task, as for a student
    assert "best_rating" not in record.metrics  # solo agents play no matches
    assert all(row["mu"] is None and "solve_rate" in row["objectives"] for row in record.ratings)
    assert not record.births and not record.deaths and env.step_count == 1
    # Compute per solo agent, summed in the metrics: one adapter proposes and answers.
    assert (
        sum(row["tokens_generated"] for row in record.ratings) == record.metrics["tokens_generated"]
    )
    assert all(row["tokens_generated"] > 0 for row in record.ratings)
    assert record.metrics["tokens_trained"] == sum(row["tokens_trained"] for row in record.ratings)
    assert record.metrics["kl_from_base"] == pytest.approx(0.0, abs=1e-5)  # nothing learnt yet
    # Independent agents: each keeps its own task buffer, fed only by its own valid tasks.
    assert isinstance(env.buffer, TaskBuffers) and set(env.buffer.owners) == set(solo)
    programs = {agent: [t.program for t in env.buffer.of(agent)][1:] for agent in solo}  # after the seed
    for agent in solo:
        assert len(programs[agent]) == sum(row["valid"] for row in record.tasks if row["teacher"] == agent)
    assert record.metrics["buffer_size"] == pytest.approx(1 + valid / 2)
    restored = TaskBuffers(capacity=1)
    restored.load_state_dict(state["buffer"])
    assert {a: [t.program for t in restored.of(a)][1:] for a in solo} == programs


def test_task_buffers_keep_proposers_apart():
    import random

    from redqueen.environments.task_buffer import IDENTITY_TRIPLET, buffer_for
    from redqueen.verifiers import Triplet

    buffers = TaskBuffers(capacity=2, owners=["a"])
    buffer_for(buffers, "a").add(Triplet(program="def f(x):\n    return 1", input="1", output="1"))
    buffer_for(buffers, "b").add(Triplet(program="def f(x):\n    return 2", input="1", output="2"))
    buffer_for(buffers, "b").add(Triplet(program="def f(x):\n    return 3", input="1", output="3"))
    assert [t.output for t in buffers.of("a")] == [IDENTITY_TRIPLET.output, "1"]
    assert [t.output for t in buffers.of("b")] == ["2", "3"]  # full: the oldest went first
    assert {t.output for t in buffers.of("a").sample(5, random.Random(0))} <= {IDENTITY_TRIPLET.output, "1"}
    assert len(buffers) == 4 and buffers.owners == ["a", "b"]


def test_selfplay_refuses_replacement():
    with pytest.raises(ConfigError, match="evolution.replace_every"):
        build_environment(load_config("tiny-selfplay", ["evolution.replace_every=2"]))


def test_wrong_argument_types_are_named_before_anything_loads_and_any_integer_is_a_seed():
    from redqueen.environments import CoevolutionEnv

    with pytest.raises(
        TypeError, match=r"^SelfPlayEnv: population must be a PopulationSettings or None, got dict$"
    ):
        SelfPlayEnv(population={"solo": 1})
    with pytest.raises(
        TypeError,
        match=r"^CoevolutionEnv: matchmaking must be a MatchmakingSettings or None, got dict$",
    ):
        CoevolutionEnv(matchmaking={"hall_of_fame_share": 0.5})
    with pytest.raises(TypeError, match=r"^CoevolutionEnv: seed must be an integer, got float$"):
        CoevolutionEnv(seed=0.5)
    env = build_environment(
        load_config("tiny-selfplay", [*SMALL, "seed=-1"])
    )  # the config allows it
    try:
        assert env.seed == -1
        expected = np.random.default_rng(2**64 - 1).bit_generator.state
        assert env.np_rng.bit_generator.state == expected  # nothing drawn yet
    finally:
        env.close()
