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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Rules for a newborn's first rating (see :func:`newborn_rating`).
NEWBORN_RULES = ("survivor", "parents", "fresh")


@dataclass(frozen=True)
class ReplacementConfig:
    """How members are replaced, per role, every ``replace_every`` steps.

    Attributes:
        replace_every: Steps between replacements (0: never).
        cull_fraction: Fraction of each role culled (at least one member when positive).
        selection: Parent selection scheme (a name in ``SELECTIONS``).
        selection_params: Keyword parameters of the selection scheme.
        ranking: Scheme whose order ranks members for culling (distinct, best first:
            ``rating_lcb``, ``truncation``, ``nsga2``, ``nsga3``, ``spea2``, ``novelty``...).
        operators: Operator name -> weight; names come from ``MUTATIONS`` or ``CROSSOVERS``.
        operator_params: Operator name -> keyword parameters. A crossover's ``n_parents``
            (default 2) sets how many parents it takes.
        elitism: The best ``elitism`` members of a role are never culled.
        newborn: A child's first rating: ``"survivor"`` (default) the rating of a survivor of
            its role drawn uniformly at random, so that in a neutral game a newborn is
            exchangeable with every other member and its chance of being culled does not depend
            on its age; ``"parents"`` the mean of its parents' mu with their mean sigma widened
            half-way back to the initial sigma (biased: parents are chosen for their fitness);
            ``"fresh"`` the rating system's initial rating (biased against newborns).
        grace: Steps after its birth during which a member is not culled (0: none). Any grace
            makes the chance of being culled depend on age; it is there for studies that want it.
        snapshot_every: Every this many steps, the living members are copied into the hall of
            fame (frozen opponents for matchmaking, and the ``snapshots/`` of the run
            directory that ``redqueen ciao`` plays); 0: never.
        hall_of_fame: Snapshots the hall of fame keeps in memory, newest first (older ones
            stay on disk only).
    """

    replace_every: int = 2
    cull_fraction: float = 0.25
    selection: str = "tournament"
    selection_params: Mapping[str, Any] = field(default_factory=dict)
    ranking: str = "rating_lcb"
    operators: Mapping[str, float] = field(
        default_factory=lambda: {"svd_merge": 0.5, "gaussian": 0.5}
    )
    operator_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    elitism: int = 0
    newborn: str = "survivor"
    grace: int = 0
    snapshot_every: int = 5
    hall_of_fame: int = 4

    def __post_init__(self) -> None:
        for name in ("replace_every", "elitism", "grace", "snapshot_every", "hall_of_fame"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"{name}: must be >= 0, got {getattr(self, name)}")
        if not 0.0 <= self.cull_fraction <= 1.0:
            raise ValueError(f"cull_fraction: must be in [0, 1], got {self.cull_fraction}")
        if self.newborn not in NEWBORN_RULES:
            raise ValueError(
                f"newborn: must be one of {', '.join(NEWBORN_RULES)}, got {self.newborn!r}"
            )
        if not self.operators:
            raise ValueError("operators: at least one operator is needed")
        for name, weight in self.operators.items():
            if not weight >= 0:
                raise ValueError(f"operators.{name}: weight must be >= 0, got {weight}")
        if sum(self.operators.values()) <= 0:
            raise ValueError("operators: weights must not all be zero")
        for name in self.operator_params:
            if name not in self.operators:
                raise ValueError(f"operator_params.{name}: not in operators")

    def due(self, step: int) -> bool:
        """Whether replacement runs after ``step`` (0-based): every ``replace_every`` steps."""
        return self.replace_every > 0 and (step + 1) % self.replace_every == 0

    def snapshot_due(self, step: int) -> bool:
        """Whether the members are snapshotted after ``step`` (0-based)."""
        return self.snapshot_every > 0 and (step + 1) % self.snapshot_every == 0


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
