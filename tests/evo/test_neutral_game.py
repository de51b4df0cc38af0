"""The neutral game: when match outcomes are coin flips, culling must not depend on age.

Teachers and students are paired by PFSP and every match is a fair coin flip, whatever the
genomes; every two steps the evolution loop replaces the bottom quarter of each role by
``mu - 3 sigma``. With no real skill to find, a member's chance of being culled should be the
same at every age. The old rule (a child starts from the initial rating) culls nearly every
newborn at its first replacement; the default rule (a child starts from the rating of a random
survivor) does not. The same check is run on both, so it is shown to be able to fail.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import chi2_contingency

from redqueen.evo import EvolutionLoop, Individual, Lineage, Population, ReplacementConfig
from redqueen.fitness import PFSPMatchmaker, RatingSystem
from redqueen.genomes import LoRAGenome

SIZE, STEPS_PER_ROUND, ROUNDS, BURN_IN = 8, 2, 160, 20


def _cull_counts(newborn: str, seed: int = 0) -> dict[int, list[int]]:
    """Age (replacement rounds lived, 3 meaning 3 or more) -> [culled, seen]."""
    pop, lineage, ratings = Population(roles=("teacher", "student")), Lineage(), RatingSystem()
    config = ReplacementConfig(
        replace_every=STEPS_PER_ROUND,
        newborn=newborn,
        operators={"gaussian": 1.0},
        snapshot_every=0,
    )
    loop = EvolutionLoop(pop, lineage, config, seed)
    gen = torch.Generator().manual_seed(seed)
    for role in ("teacher", "student"):
        for _ in range(SIZE):
            genome = LoRAGenome.random(
                {"m": (2, 2)}, rank=1, alpha=1.0, rng=gen, init="gaussian", std=0.1
            )
            loop.found(Individual(pop.new_id(role), role, genome), ratings)
    rng, matchmaker = np.random.default_rng(seed + 1), PFSPMatchmaker()
    counts: dict[int, list[int]] = {}
    step = 0
    for round_ in range(ROUNDS):
        for _ in range(STEPS_PER_ROUND):
            teachers = [m.id for m in pop.members("teacher")]
            students = [m.id for m in pop.members("student")]
            for teacher, student in matchmaker.pair(teachers, students, ratings, rng):
                coin = float(rng.random() < 0.5)  # independent of the genomes
                ratings.record_score(teacher, student, coin, 1.0 - coin)
            step += 1
        ages = {m.id: min(3, (step - m.birth) // STEPS_PER_ROUND) for m in pop.living}
        _, deaths = loop.replace(step, ratings)
        if round_ >= BURN_IN:
            for member_id, age in ages.items():
                row = counts.setdefault(age, [0, 0])
                row[0] += member_id in deaths
                row[1] += 1
    return counts


def _age_dependence(counts: dict[int, list[int]]) -> tuple[float, dict[int, float]]:
    """p-value of a chi-square test that culling is independent of age, and the rates."""
    table = [[culled, seen - culled] for culled, seen in counts.values()]
    rates = {age: culled / seen for age, (culled, seen) in sorted(counts.items())}
    return float(chi2_contingency(table)[1]), rates


def test_culling_is_independent_of_age_under_the_default_rule():
    assert ReplacementConfig().newborn == "survivor"
    p_value, rates = _age_dependence(_cull_counts("survivor"))
    assert set(rates) == {1, 2, 3}, rates  # newborns, one-round survivors, older members
    assert p_value > 1e-3, rates
    for rate in rates.values():
        assert rate == pytest.approx(0.25, abs=0.05), rates


def test_the_same_check_catches_the_old_rule():
    p_value, rates = _age_dependence(_cull_counts("fresh"))
    assert p_value < 1e-6, rates
    assert rates[1] > 0.8  # a newborn at the initial rating is almost always culled
