"""The replacement schema, and the rule that gives a newborn its first rating.

:class:`ReplacementConfig` is the one schema of the replacement step: the experiment config's
``evolution`` section is validated against it and takes its defaults from it, and every
environment hands it to :class:`redqueen.evo.EvolutionLoop`.

Why newborns need a rule: members are ranked by the conservative rating ``mu - 3 sigma``.
A child that starts from the rating system's initial rating (mu 25, sigma 25/3) has a
conservative rating of 0 while members that have played for a while sit far above it, so it
is culled at the next replacement whatever it can do: in a neutral game (coin-flip outcomes,
8 teachers and 8 students, a quarter culled per role) every such newborn was culled at its first
replacement, and no older member ever was. Inheriting the parents' rating errs the other
way or this one, depending on sigma: with their mean (mu, sigma) newborns were culled in 12%
of rounds against 32% for the oldest (one seed; parents are chosen for their rating, so a child
carries their luck); with sigma widened half-way back to the initial one, in 44%. With
``newborn: survivor`` (the default) the rates were 24.6% for newborns and 25.4% for the
oldest: a newborn is exchangeable with a random survivor, so no age is favoured
(``tests/evo/test_neutral_game.py`` checks it; ``benchmarks/neutral_game.py`` measures every
rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from redqueen.settings import NEWBORN_RULES, ReplacementConfig

__all__ = ["NEWBORN_RULES", "ReplacementConfig", "newborn_rating"]


def newborn_rating(
    rule: str,
    parents: Sequence[tuple[float, float]],
    survivors: Sequence[tuple[float, float]],
    initial: tuple[float, float],
    rng: np.random.Generator,
) -> tuple[float, float]:
    """A child's first ``(mu, sigma)`` under ``rule`` (see :attr:`ReplacementConfig.newborn`).

    Args:
        rule: One of :data:`NEWBORN_RULES`.
        parents: The parents' ratings.
        survivors: Ratings of the role's members that survived this replacement.
        initial: The rating system's initial rating.
        rng: Draws the survivor (only ``"survivor"`` draws).

    Falls back to ``initial`` when the rule has nothing to read (no survivors, no parents).
    """
    if rule == "survivor" and survivors:
        mu, sigma = survivors[int(rng.integers(len(survivors)))]
        return float(mu), float(sigma)
    if rule == "parents" and parents:
        mu = float(np.mean([p[0] for p in parents]))
        sigma = float(np.mean([p[1] for p in parents]))
        return mu, sigma + 0.5 * max(0.0, initial[1] - sigma)
    return float(initial[0]), float(initial[1])


def _genome_is_finite(genome: Any) -> bool:
    """Whether a member's genome is finite (a member with NaN or inf weights is dead: it cannot
    play, and its children would inherit the damage); genomes without ``is_finite`` count as finite."""
    is_finite = getattr(genome, "is_finite", None)
    return True if is_finite is None else bool(is_finite())
