"""The League on a scripted coin-flip game: no model, no environment, milliseconds.

Teachers and students carry tiny LoRA genomes; a match is eight tasks whose solve rates come
from a seeded generator (some tasks invalid). The League must pair as the matchmaker does,
score every match by the one rule, never move a frozen member's rating, close a step in its
documented order, and resume exactly from its state.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from redqueen.evo import League, ReplacementConfig
from redqueen.fitness import Objectives, PFSPMatchmaker, RatingSystem, match_score
from redqueen.genomes import LoRAGenome

ROLES = ("teacher", "student")


class _Tally:
    """A describer that writes each member's mean score so far as its objective, and logs calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.scores: dict[str, list[float]] = {}

    def describe(self, league: League) -> None:
        self.calls.append(tuple(sorted(m.id for m in league.population.living)))
        for ind in league.population.living:
            mine = self.scores.get(ind.id, [])
            ind.objectives = {"score": float(np.mean(mine)) if mine else 0.0}
            ind.descriptor = np.array([ind.objectives["score"]])
            ind.cases = np.array([ind.objectives["score"]])


class _Store:
    """Trained weights kept outside the genomes (as an adapter host keeps them)."""

    def __init__(self) -> None:
        self.weights: dict[str, LoRAGenome] = {}

    def member_born(self, ind) -> None:
        self.weights[ind.id] = ind.genome

    def member_died(self, ind) -> None:
        self.weights.pop(ind.id)

    def genomes(self, ids):
        return {i: self.weights[i] for i in ids}


def _league(seed: int = 0, *, rated: bool = True, share: float = 0.0, **kw) -> League:
    replacement = kw.pop(
        "replacement",
        ReplacementConfig(replace_every=2, snapshot_every=1, cull_fraction=0.5, grace=0),
    )
    return League(
        roles=ROLES,
        objectives={r: Objectives(("rating",)) for r in ROLES},
        pairing_rng=np.random.default_rng(seed),
        evolution_rng=np.random.default_rng(seed + 2),
        replacement=replacement,
        matchmaker=PFSPMatchmaker(hall_of_fame_share=share),
        rated=rated,
        **kw,
    )


def _genome(gen: torch.Generator) -> LoRAGenome:
    return LoRAGenome.random({"m": (3, 3)}, rank=1, alpha=1.0, rng=gen, init="gaussian", std=0.1)


def _found(league: League, seed: int = 0) -> None:
    gen = torch.Generator().manual_seed(seed)
    for role in ROLES:
        league.found_many(role, 3, lambda: _genome(gen))


def _play(league: League, rng: np.random.Generator, start: int, stop: int) -> list:
    log = []
    for step in range(start, stop):
        for teacher, student in league.pair():
            rates = [None if rng.random() < 0.2 else float(rng.random()) for _ in range(8)]
            score = league.record(teacher, student, rates)
            log.append((step, teacher, student, score))
        outcome = league.finish_step(step)
        log.append((step, tuple(outcome.births), tuple(outcome.deaths)))
    return log


def test_pair_makes_the_matchmakers_draws():
    league = _league(3)
    _found(league)
    teachers = [m.id for m in league.population.members("teacher")]
    students = [m.id for m in league.population.members("student")]
    ratings = RatingSystem()
    for i in teachers + students:
        ratings.add(i)
    expected = PFSPMatchmaker().pair(teachers, students, ratings, np.random.default_rng(3))
    assert league.pair() == expected


@pytest.mark.parametrize("policy", ["forfeit", "skip"])
def test_record_scores_by_the_one_rule_and_moves_both_living_ratings(policy):
    league = _league(invalid_tasks=policy)
    _found(league)
    reference = RatingSystem()
    for ind in league.population.living:
        reference.add(ind.id)
    rates = [0.0, None, None, None, None, None, None, None]
    score = league.record("teacher-0000", "student-0000", rates)
    assert score == match_score(rates, invalid=policy) == (0.875 if policy == "forfeit" else 0.0)
    reference.record_score("teacher-0000", "student-0000", 1 - score, score)
    for member in ("teacher-0000", "student-0000"):
        assert league.ratings.get(member) == reference.get(member)


def test_a_bad_invalid_task_policy_is_refused():
    with pytest.raises(ValueError, match="invalid_tasks"):
        _league(invalid_tasks="count")


def test_frozen_opponents_never_move_and_living_ones_do():
    league = _league(share=1.0)
    _found(league)
    league.finish_step(0)  # snapshot_every=1: the founders are frozen at step 1
    pairs = league.pair()
    frozen = league.frozen(pairs)
    assert frozen, "with share 1 every teacher meets a frozen student"
    before = {k: league.rating_of(k) for k in frozen}
    for teacher, student in pairs:
        living = teacher if teacher in league.population else student
        was = league.ratings.get(living)
        league.record(teacher, student, [0.5] * 8)
        assert league.ratings.get(living) != was
    assert {k: league.rating_of(k) for k in frozen} == before
    assert all(m.rating == before[k] for k, m in frozen.items())


def test_finish_step_describes_before_and_after_births_and_stamps_the_next_step():
    tally = _Tally()
    league = _league(describer=tally)
    _found(league)
    tally.calls.clear()
    league.finish_step(0)  # replace_every=2: not due after step 0
    assert len(tally.calls) == 1
    tally.calls.clear()
    outcome = league.finish_step(1)  # due: described before the births and after them
    assert outcome.births and len(outcome.births) == len(outcome.deaths)
    assert len(tally.calls) == 2
    assert not set(outcome.births) & set(tally.calls[0])
    assert set(outcome.births) <= set(tally.calls[1])
    assert all(league.population.get(b).birth == 2 for b in outcome.births)
    assert league.evolution.hall.steps == [1, 2]


def test_unrated_leagues_write_rows_without_ratings_and_solo_members_meet_themselves():
    league = League(
        roles=("solo",),
        objectives={"solo": Objectives(("solve_rate",))},
        pairing_rng=np.random.default_rng(0),
        evolution_rng=np.random.default_rng(1),
        replacement=ReplacementConfig(replace_every=0),
        rated=False,
    )
    gen = torch.Generator().manual_seed(0)
    league.found_many("solo", 2, lambda: _genome(gen))
    assert league.pair() == [("solo-0000", "solo-0000"), ("solo-0001", "solo-0001")]
    league.record("solo-0000", "solo-0000", [1.0])  # nothing to rate
    rows = league.rating_rows(0)
    assert [(r["id"], r["mu"], r["sigma"], r["lcb"]) for r in rows] == [
        ("solo-0000", None, None, None),
        ("solo-0001", None, None, None),
    ]
    assert league.best_rating() is None


def test_trained_weights_are_synced_into_genomes_once_a_step():
    store = _Store()
    league = _league(listeners=[store], trained=store)
    _found(league)
    gen = torch.Generator().manual_seed(9)
    store.weights["student-0001"] = trained = _genome(gen)
    league.finish_step(0)
    assert league.population.get("student-0001").genome is trained
    assert league.evolution.hall.get("student-0001@1").genome is trained


def test_state_round_trip_resumes_exactly():
    full = _league(7, share=0.5)
    _found(full)
    whole = _play(full, np.random.default_rng(1), 0, 6)

    first = _league(7, share=0.5)
    _found(first)
    rng = np.random.default_rng(1)
    part = _play(first, rng, 0, 3)
    state, pairing = first.state_dict(), first.pairing_rng.bit_generator.state
    rng_state = rng.bit_generator.state

    resumed = _league(123, share=0.5)  # other seeds: everything must come from the state
    resumed.load_state_dict(state)
    resumed.pairing_rng.bit_generator.state = pairing
    rng = np.random.default_rng()
    rng.bit_generator.state = rng_state
    rest = _play(resumed, rng, 3, 6)
    assert part + rest == whole
    assert resumed.ratings.state_dict() == full.ratings.state_dict()
    assert resumed.lineage.state_dict() == full.lineage.state_dict()
