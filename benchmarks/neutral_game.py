"""Fairness of replacement to newborns in a neutral game, per ``evolution.newborn`` rule.

Eight teachers and eight students are paired by PFSP; every match is a fair coin flip whatever
the genomes, so no member is better than another. Every two steps the evolution loop culls a
quarter of each role by ``mu - 3 sigma``. A fair rule culls members of every age equally often
(25%). For each rule this records, per age in replacement rounds (1: born at the previous
replacement; 3: three or more), how often members were culled, and a chi-square test of
independence of age and culling.

Run: ``python benchmarks/neutral_game.py`` (about 20 s per rule and seed on one core); writes
``benchmarks/results/neutral_game.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from scipy.stats import chi2_contingency

from redqueen.evo import (
    NEWBORN_RULES,
    EvolutionLoop,
    Individual,
    Lineage,
    Population,
    ReplacementConfig,
)
from redqueen.fitness import PFSPMatchmaker, RatingSystem
from redqueen.genomes import LoRAGenome

RESULTS = Path(__file__).resolve().parent / "results"


def cull_counts(
    rule: str, *, seed: int, rounds: int, size: int = 8, steps_per_round: int = 2, burn_in: int = 20
) -> dict[int, list[int]]:
    """Age (rounds lived, capped at 3) -> [culled, seen] over ``rounds`` replacements."""
    pop, lineage, ratings = Population(roles=("teacher", "student")), Lineage(), RatingSystem()
    config = ReplacementConfig(
        replace_every=steps_per_round, newborn=rule, operators={"gaussian": 1.0}, snapshot_every=0
    )
    loop = EvolutionLoop(pop, lineage, config, seed)
    gen = torch.Generator().manual_seed(seed)
    for role in ("teacher", "student"):
        for _ in range(size):
            genome = LoRAGenome.random(
                {"m": (2, 2)}, rank=1, alpha=1.0, rng=gen, init="gaussian", std=0.1
            )
            loop.found(Individual(pop.new_id(role), role, genome), ratings)
    rng, matchmaker = np.random.default_rng(seed + 1), PFSPMatchmaker()
    counts: dict[int, list[int]] = {}
    step = 0
    for round_ in range(rounds):
        for _ in range(steps_per_round):
            teachers = [m.id for m in pop.members("teacher")]
            students = [m.id for m in pop.members("student")]
            for teacher, student in matchmaker.pair(teachers, students, ratings, rng):
                coin = float(rng.random() < 0.5)
                ratings.record_score(teacher, student, coin, 1.0 - coin)
            step += 1
        ages = {m.id: min(3, (step - m.birth) // steps_per_round) for m in pop.living}
        _, deaths = loop.replace(step, ratings)
        if round_ >= burn_in:
            for member_id, age in ages.items():
                row = counts.setdefault(age, [0, 0])
                row[0] += member_id in deaths
                row[1] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    result: dict[str, object] = {"seeds": seeds, "rounds": args.rounds, "burn_in": 20, "rules": {}}
    for rule in NEWBORN_RULES:
        total: dict[int, list[int]] = {}
        for seed in seeds:
            for age, (culled, seen) in cull_counts(rule, seed=seed, rounds=args.rounds).items():
                row = total.setdefault(age, [0, 0])
                row[0] += culled
                row[1] += seen
        table = [[c, s - c] for c, s in total.values()]
        p_value = float(chi2_contingency(table)[1]) if len(table) > 1 else 1.0
        result["rules"][rule] = {
            "cull_rate_by_age": {str(a): c / s for a, (c, s) in sorted(total.items())},
            "members_seen_by_age": {str(a): s for a, (_, s) in sorted(total.items())},
            "p_value_age_independent": p_value,
        }
        print(rule, result["rules"][rule])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "neutral_game.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
