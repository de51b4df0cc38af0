"""CoevolutionEnv on tiny-coder with a hall of fame: frozen past members play and never learn."""

from __future__ import annotations

import torch

from redqueen.experiments.build import build_environment
from redqueen.experiments.config import load_config

SMALL = [
    "population.teachers=2",
    "population.students=2",
    "population.rank=4",
    "population.alpha=8",
    "environment.tasks_per_teacher=2",
    "environment.answers_per_task=2",
    "environment.references=2",
    "environment.propose_max_new_tokens=64",
    "environment.solve_max_new_tokens=32",
    "environment.executor.workers=2",
    "evolution.replace_every=0",
    "evolution.snapshot_every=1",
    "matchmaking.hall_of_fame_share=1.0",
    "seed=2",
]


def test_frozen_members_play_without_learning_or_ratings():
    env = build_environment(load_config("tiny", SMALL))
    try:
        first = env.step()
        assert all("@" not in row["teacher"] + row["student"] for row in first.tasks)
        frozen = {
            m.key: m for role in ("teacher", "student") for m in env.evolution.hall.members(role)
        }
        assert set(frozen) == {f"{ind.id}@1" for ind in env.population.living}
        before = {
            k: [t.clone() for _, (a, b) in m.genome.items() for t in (a, b)]
            for k, m in frozen.items()
        }
        second = env.step()
        # What redqueen ciao plays: matches between given genomes, outside the run.
        teacher, student = frozen["teacher-0000@1"].genome, frozen["student-0000@1"].genome
        adapters = sorted(env.host.adapter_ids)
        scores = env.play_matches([(teacher, student), (teacher, student)], seed=7)
        assert len(scores) == 2 and all(0.0 <= x <= 1.0 for x in scores)
        assert env.play_matches([(teacher, student)] * 2, seed=7) == scores  # seeded
        assert sorted(env.host.adapter_ids) == adapters
    finally:
        env.close()
    teachers = {row["teacher"] for row in second.tasks}
    students = {row["student"] for row in second.tasks}
    # Share 1: every teacher meets a past student, and every student gets a past teacher too.
    assert {t for t in teachers if "@" not in t} == {
        i.id for i in env.population.members("teacher")
    }
    assert all(
        "@" in s for row in second.tasks if "@" not in row["teacher"] for s in [row["student"]]
    )
    assert {t for t in teachers if "@" in t} and students
    living = {ind.id for ind in env.population.living}
    assert set(env.host.adapter_ids) == living  # frozen adapters were lent for the step only
    assert {row["id"] for row in second.ratings} == living
    for key, weights in before.items():
        after = [t for _, (a, b) in env.evolution.hall.get(key).genome.items() for t in (a, b)]
        assert all(torch.equal(x, y) for x, y in zip(weights, after, strict=True))
    assert env.evolution.hall.steps == [1, 2]
