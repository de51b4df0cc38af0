"""What describes a code-game member: its smoothed statistics, objectives, cases and descriptor.

:class:`MemberStats` folds each step's results into an exponential moving average per member
and, as the league's :class:`~redqueen.evo.MemberDescriber`, writes them onto the members as
objectives (with the rating's ``rating_mu`` and ``rating_lcb`` and the ``novelty`` score),
lexicase cases and behaviour descriptors (the per-task-type outcomes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from redqueen.environments._game_stats import member_stats
from redqueen.environments._round import PlayedTask
from redqueen.evo import Individual, League, descriptor_matrix
from redqueen.fitness import conservative_rating, novelty_scores

#: Weight of the newest step in a member's smoothed statistics (exponential moving average).
SMOOTHING = 0.5

#: Which side(s) of the game each role plays; a solo member proposes and solves.
SIDES: dict[str, tuple[str, ...]] = {
    "teacher": ("teacher",),
    "student": ("student",),
    "solo": ("teacher", "student"),
}


def initial_stats(role: str, n_types: int) -> dict[str, Any]:
    """Statistics a member starts with, before it has played."""
    stats: dict[str, Any] = {}
    sides = SIDES.get(role, (role,))
    if "teacher" in sides:
        stats.update(
            teacher_reward=0.0, valid_share=0.0, complexity=0.0, reward_per_type=[0.0] * n_types
        )
    if "student" in sides:
        stats.update(solve_rate=0.0, student_reward=0.0, solve_per_type=[0.0] * n_types)
    return stats


class MemberStats:
    """Per-member smoothed statistics of the code game, and the league's describer.

    Args:
        task_types: The task types, in descriptor order.
    """

    def __init__(self, task_types: Sequence[str]) -> None:
        self.task_types = tuple(task_types)
        self.stats: dict[str, dict[str, Any]] = {}

    def member_born(self, ind: Individual) -> None:
        """A founder or child joined: it starts with fresh statistics."""
        self.stats[ind.id] = initial_stats(ind.role, len(self.task_types))

    def member_died(self, ind: Individual) -> None:
        """A member left: its statistics go."""
        self.stats.pop(ind.id, None)

    def observe(self, played: Sequence[PlayedTask], living: Sequence[Individual]) -> None:
        """Fold one step's results into each living member's smoothed statistics (weight
        :data:`SMOOTHING` on the newest step); members that did not play keep theirs."""
        fresh = member_stats(played, self.task_types)
        for ind in living:
            mine = fresh.get(ind.id, {})
            old = self.stats.setdefault(ind.id, initial_stats(ind.role, len(self.task_types)))
            for side in SIDES.get(ind.role, (ind.role,)):
                for key, value in mine.get(side, {}).items():
                    previous = old.get(key)
                    if previous is None:
                        old[key] = value
                    elif isinstance(value, list):
                        old[key] = [
                            (1 - SMOOTHING) * p + SMOOTHING * v
                            for p, v in zip(previous, value, strict=True)
                        ]
                    else:
                        old[key] = (1 - SMOOTHING) * previous + SMOOTHING * value

    def describe(self, league: League) -> None:
        """Write ratings, objectives, descriptors, cases and fitness onto every living member."""
        for role in league.population.roles:
            members = league.population.members(role)
            if not members:
                continue
            for ind in members:
                stats = self.stats.get(ind.id, {})
                ind.objectives = {k: float(v) for k, v in stats.items() if not isinstance(v, list)}
                if league.rated:
                    ind.rating = mu, sigma = league.ratings.get(ind.id)
                    ind.objectives.update(rating_mu=mu, rating_lcb=conservative_rating(mu, sigma))
                # Per-task-type outcomes: lexicase cases and behaviour descriptor alike.
                per_type = [
                    v for key in ("reward_per_type", "solve_per_type") for v in stats.get(key, [])
                ]
                cases = np.asarray(per_type or [0.0] * len(self.task_types), dtype=float)
                ind.cases = cases
                ind.descriptor = cases.copy()
            descriptors = descriptor_matrix(members)
            for ind, score in zip(members, novelty_scores(descriptors, k=3), strict=True):
                ind.objectives["novelty"] = float(score)
            if role in league.objectives:
                league.objectives[role].assign(members)

    def state_dict(self) -> dict[str, dict[str, Any]]:
        """Every member's statistics (plain data)."""
        return {k: dict(v) for k, v in self.stats.items()}

    def load_state_dict(self, state: Mapping[str, Mapping[str, Any]]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.stats = {k: dict(v) for k, v in state.items()}
