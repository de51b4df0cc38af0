"""Prioritised fictitious self-play (PFSP) matchmaking between teachers and students."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from redqueen.fitness._ratings import RatingSystem

_WEIGHTINGS = ("variance", "hard", "uniform")


class PFSPMatchmaker:
    """Pairs each teacher with a student, favouring near-balanced matchups.

    Prioritised fictitious self-play (Vinyals et al., "Grandmaster level in StarCraft II using
    multi-agent reinforcement learning", Nature 2019): opponent weights are a function of the
    predicted win probability p. With ``"variance"`` the weight is p(1-p), so matches whose
    outcome is most uncertain (most informative, hardest to game) dominate.

    Args:
        weighting: ``"variance"`` (p(1-p)), ``"hard"`` ((1-p)^2, opponents the teacher tends to
            lose to) or ``"uniform"``.
        floor: Added to every weight so that no pairing is impossible.

    Raises:
        ValueError: On an unknown weighting.
    """

    def __init__(self, *, weighting: str = "variance", floor: float = 1e-3) -> None:
        if weighting not in _WEIGHTINGS:
            raise ValueError(f"PFSPMatchmaker.weighting must be one of {_WEIGHTINGS}, got {weighting!r}")
        self.weighting, self.floor = weighting, float(floor)

    def weights(self, teacher_id: str, student_ids: Sequence[str], ratings: RatingSystem) -> np.ndarray:
        """Normalised sampling weights of each student as the opponent of ``teacher_id``."""
        p = np.array([ratings.win_probability(teacher_id, s) for s in student_ids], dtype=float)
        if self.weighting == "variance":
            w = p * (1.0 - p)
        elif self.weighting == "hard":
            w = (1.0 - p) ** 2
        else:
            w = np.ones_like(p)
        w = w + self.floor
        return w / w.sum()

    def pair(
        self,
        teacher_ids: Sequence[str],
        student_ids: Sequence[str],
        ratings: RatingSystem,
        rng: np.random.Generator,
    ) -> list[tuple[str, str]]:
        """One ``(teacher_id, student_id)`` pair per teacher, students drawn by PFSP weight.

        Raises:
            ValueError: If there are no students.
        """
        if not student_ids:
            raise ValueError("PFSPMatchmaker.pair needs at least one student")
        pairs = []
        for t in teacher_ids:
            w = self.weights(t, student_ids, ratings)
            pairs.append((t, student_ids[int(rng.choice(len(student_ids), p=w))]))
        return pairs
