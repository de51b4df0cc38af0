"""Rewards, ratings, matchmaking, objectives, novelty and diversity."""

from __future__ import annotations

import enum

import numpy as np
import pytest
import torch

from redqueen.evo import Individual
from redqueen.fitness import (
    NoveltyArchive,
    Objectives,
    PFSPMatchmaker,
    RatingSystem,
    StudentReward,
    TeacherReward,
    behaviour_descriptor,
    behavioural_diversity,
    conservative_rating,
    genotypic_diversity,
    novelty_scores,
)


def test_teacher_reward_shapes():
    r = TeacherReward()
    assert r(False, None) == -1.0
    assert r(True, 0.0) == 0.0 and r(True, 1.0) == 0.0
    assert r(True, 0.25) == pytest.approx(0.75)
    azr = TeacherReward(extreme=-0.5)
    assert azr(True, 1.0) == -0.5 and azr(True, 0.5) == 0.5
    with pytest.raises(ValueError, match="solve_rate"):
        r(True, 1.5)


def test_student_reward_accepts_strings_and_enums():
    class Status(enum.Enum):
        CORRECT = "correct"
        WRONG = "wrong"
        UNPARSEABLE = "unparseable"

    r = StudentReward()
    assert [r(s) for s in Status] == [1.0, -0.5, -1.0]
    assert r("Wrong") == -0.5
    with pytest.raises(ValueError, match="status"):
        r("maybe")


def test_ratings_move_and_predict():
    ratings = RatingSystem()
    for name in "abc":
        assert ratings.add(name) == (25.0, pytest.approx(25 / 3))
    assert ratings.win_probability("a", "b") == pytest.approx(0.5)
    for _ in range(5):
        ratings.record("a", "b")
    mu_a, sigma_a = ratings.get("a")
    assert mu_a > 25.0 and sigma_a < 25 / 3
    assert ratings.lcb("a") == pytest.approx(mu_a - 3 * sigma_a)
    assert ratings.win_probability("a", "b") > 0.7
    ratings.record("a", "c", draw=True)
    state = ratings.state_dict()
    again = RatingSystem(mu=10.0)
    again.load_state_dict(state)
    assert again.get("a") == ratings.get("a") and again.mu == 25.0
    with pytest.raises(KeyError, match="zz"):
        ratings.get("zz")
    with pytest.raises(ValueError, match="model"):
        RatingSystem(model="elo")


def test_pfsp_prefers_balanced_matchups():
    ratings = RatingSystem()
    for name in ("t", "even", "weak"):
        ratings.add(name)
    for _ in range(8):
        ratings.record("t", "weak")
    w = PFSPMatchmaker().weights("t", ["even", "weak"], ratings)
    assert w[0] > w[1] and w.sum() == pytest.approx(1.0)
    pairs = PFSPMatchmaker().pair(["t", "even"], ["even", "weak"], ratings, np.random.default_rng(0))
    assert [p[0] for p in pairs] == ["t", "even"] and all(p[1] in ("even", "weak") for p in pairs)
    again = PFSPMatchmaker().pair(["t", "even"], ["even", "weak"], ratings, np.random.default_rng(0))
    assert pairs == again


def test_pfsp_draws_its_share_of_opponents_from_the_hall_of_fame():
    ratings = RatingSystem()
    teachers, students = [f"t{i}" for i in range(4)], [f"s{i}" for i in range(4)]
    for name in teachers + students:
        ratings.add(name)
    past_teachers = {"t0@5": (27.0, 4.0), "t1@5": None}
    past_students = {"s0@5": (24.0, 3.0), "s2@5": (30.0, 2.0)}
    past = {**past_teachers, **past_students}
    # No share, or no past members: exactly the draws of a matchmaker without a hall of fame.
    plain = PFSPMatchmaker().pair(teachers, students, ratings, np.random.default_rng(1))
    for matchmaker, kwargs in (
        (PFSPMatchmaker(hall_of_fame_share=0.0), {"past_teachers": past_teachers, "past_students": past_students}),
        (PFSPMatchmaker(hall_of_fame_share=0.5), {}),
    ):
        assert matchmaker.pair(teachers, students, ratings, np.random.default_rng(1), **kwargs) == plain
    matchmaker, rng = PFSPMatchmaker(hall_of_fame_share=0.3), np.random.default_rng(2)
    from_past = extra = rounds = 0
    for _ in range(500):
        pairs = matchmaker.pair(teachers, students, ratings, rng, past_teachers=past_teachers, past_students=past_students)
        regular, added = pairs[: len(teachers)], pairs[len(teachers) :]
        assert [t for t, _ in regular] == teachers and all(t in past_teachers and s in students for t, s in added)
        from_past += sum(s in past for _, s in regular)
        extra += len(added)
        rounds += 1
    assert from_past / (rounds * len(teachers)) == pytest.approx(0.3, abs=0.03)
    assert extra / (rounds * len(students)) == pytest.approx(0.3, abs=0.03)
    with pytest.raises(ValueError, match="hall_of_fame_share"):
        PFSPMatchmaker(hall_of_fame_share=1.5)


def test_a_match_against_a_frozen_opponent_moves_only_the_living_rating():
    ratings = RatingSystem()
    ratings.add("s")
    ratings.record_against("s", (25.0, 2.0), 1.0, 0.0)
    assert ratings.get("s")[0] > 25.0 and len(ratings) == 1
    mu = ratings.get("s")[0]
    ratings.record_against("s", (25.0, 2.0), 0.0, 1.0)
    assert ratings.get("s")[0] < mu
    assert ratings.win_probability("s", (40.0, 1.0)) < 0.1
    ratings.set("s", (30.0, 1.0))
    assert ratings.lcb("s") == conservative_rating(30.0, 1.0) == 27.0
    with pytest.raises(ValueError, match="sigma"):
        ratings.set("s", (30.0, 0.0))


def test_objectives_assign_fitness():
    ind = Individual("s-0000", "student")
    ind.rating = (30.0, 2.0)
    ind.objectives["solve_rate"] = 0.4
    obj = Objectives(("rating", "solve_rate"), (1.0, -1.0))
    assert obj.vector(ind) == (24.0, 0.4)
    obj.assign([ind])
    assert ind.fitness.values == (24.0, 0.4) and ind.fitness.wvalues == (24.0, -0.4)
    with pytest.raises(KeyError, match="complexity"):
        Objectives(("complexity",)).vector(ind)
    with pytest.raises(ValueError, match="weights"):
        Objectives(("a", "b"), (1.0,))


def test_novelty_archive_and_diversity():
    x = np.array([[0.0, 0.0], [0.0, 0.1], [0.1, 0.0], [1.0, 1.0]])
    scores = novelty_scores(x, k=2)
    assert int(np.argmax(scores)) == 3
    archive = NoveltyArchive(k=2, threshold=0.5, max_size=3)
    assert archive.add(x) == 1 and len(archive) == 1
    state = archive.state_dict()
    again = NoveltyArchive()
    again.load_state_dict(state)
    assert np.allclose(again.descriptors, archive.descriptors)
    assert behavioural_diversity(np.zeros((3, 2))) == 0.0
    assert behavioural_diversity(np.array([[0.0], [3.0]])) == 3.0
    rows = [{"solve_rate": 0.5, "complexity": 10.0}, {"solve_rate": None, "complexity": 30.0}]
    desc = behaviour_descriptor(rows, ["solve_rate", "complexity"], {"complexity": (0.0, 40.0)})
    assert np.allclose(desc, [0.5, 0.5])


def test_genotypic_diversity_uses_low_rank_distance():
    from redqueen.genomes import LoRAGenome

    shapes = {"layer.0": (6, 5), "layer.1": (4, 6)}
    gens = [
        LoRAGenome.random(shapes, rank=2, alpha=4.0, rng=torch.Generator().manual_seed(s), init="gaussian", std=0.1)
        for s in range(3)
    ]
    assert genotypic_diversity(gens[:1]) == 0.0
    assert genotypic_diversity([gens[0], gens[0]]) == pytest.approx(0.0, abs=1e-5)
    assert genotypic_diversity(gens) > 0.0
