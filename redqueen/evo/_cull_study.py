"""Who gets culled, and why: the replacement loop on a game whose answer is known.

Teachers and students are paired by PFSP and rated by the toolkit's rating system; every
``steps_per_round`` steps the evolution loop culls the bottom of each role. Each member has a
hidden skill drawn at its birth, independently of its parents and of its age, so a fair and
informed replacement culls by skill and not by age: with ``skill_sd = 0`` every match is a coin
flip (the neutral game, where nothing but age could explain culling), with ``skill_sd > 0`` the
student wins a match with probability ``sigmoid(skill_student - skill_teacher)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from redqueen.evo._league import League
from redqueen.evo._replacement import ReplacementConfig
from redqueen.genomes import LoRAGenome, check_seed, generator_seed


@dataclass(frozen=True)
class CullRecord:
    """One living member at one replacement.

    Attributes:
        role: ``"teacher"`` or ``"student"``.
        age: Replacement rounds lived, capped at 3 (1: born at the previous replacement).
        skill: Its hidden skill.
        culled: Whether this replacement culled it.
    """

    role: str
    age: int
    skill: float
    culled: bool


def cull_study(
    newborn: str = "survivor",
    *,
    seed: int = 0,
    rounds: int = 160,
    burn_in: int = 20,
    size: int = 8,
    steps_per_round: int = 2,
    skill_sd: float = 0.0,
) -> list[CullRecord]:
    """Run the replacement loop on the hidden-skill game and record every member at every
    replacement after ``burn_in`` rounds.

    Args:
        newborn: The ``evolution.newborn`` rule (how a child's first rating is set).
        seed: Seeds genomes, skills, pairing and outcomes; any integer.
        rounds: Replacement rounds.
        burn_in: Rounds not recorded (founders all start alike).
        size: Members per role.
        steps_per_round: Steps of matches between replacements.
        skill_sd: Std of the hidden skill; 0 makes every match a fair coin flip.

    Returns:
        One :class:`CullRecord` per living member per recorded replacement.

    Raises:
        ValueError: If a count is not positive or ``skill_sd`` is negative.
    """
    if min(rounds, size, steps_per_round) < 1 or burn_in < 0:
        raise ValueError("cull_study: rounds, size and steps_per_round must be >= 1, burn_in >= 0")
    if not skill_sd >= 0:
        raise ValueError(f"cull_study: skill_sd must be >= 0, got {skill_sd}")
    config = ReplacementConfig(
        replace_every=steps_per_round,
        newborn=newborn,
        operators={"gaussian": 1.0},
        snapshot_every=0,
    )
    seed = check_seed(seed, "cull_study")
    rng = np.random.default_rng(generator_seed(seed + 1))  # pairing, skills and outcomes
    league = League(
        roles=("teacher", "student"),
        objectives={},
        pairing_rng=rng,
        evolution_rng=np.random.default_rng(generator_seed(seed)),
        replacement=config,
    )
    pop = league.population
    gen = torch.Generator().manual_seed(generator_seed(seed))
    skill: dict[str, float] = {}
    for role in ("teacher", "student"):
        for _ in range(size):
            genome = LoRAGenome.random(
                {"m": (2, 2)}, rank=1, alpha=1.0, rng=gen, init="gaussian", std=0.1
            )
            member = league.found(role, genome)
            skill[member.id] = float(rng.normal(0.0, skill_sd)) if skill_sd else 0.0
    records: list[CullRecord] = []
    step = 0
    for round_ in range(rounds):
        for _ in range(steps_per_round):
            for teacher, student in league.pair():
                p = 1.0 / (1.0 + math.exp(skill[teacher] - skill[student]))
                won = float(rng.random() < p)  # the student's score
                league.record_score(teacher, student, won)
            step += 1
        living = {m.id: (m.role, min(3, (step - m.birth) // steps_per_round)) for m in pop.living}
        outcome = league.finish_step(step - 1)  # the round's last step: replacement is due
        deaths = outcome.deaths
        for child in outcome.births:
            skill[child] = float(rng.normal(0.0, skill_sd)) if skill_sd else 0.0
        if round_ >= burn_in:
            records.extend(
                CullRecord(role, age, skill[i], i in deaths) for i, (role, age) in living.items()
            )
    return records
