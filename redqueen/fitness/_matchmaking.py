"""Prioritised fictitious self-play (PFSP) matchmaking between teachers and students."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from redqueen.fitness._ratings import RatingSystem
from redqueen.settings import MatchmakingSettings

#: The one place the defaults are written: the ``matchmaking`` settings.
_DEFAULTS = MatchmakingSettings()

_WEIGHTINGS = ("variance", "hard", "uniform")


class PFSPMatchmaker:
    """Pairs each teacher with a student, favouring near-balanced matchups.

    Prioritised fictitious self-play (Vinyals et al., "Grandmaster level in StarCraft II using
    multi-agent reinforcement learning", Nature 2019): opponent weights are a function of the
    predicted win probability p. With ``"variance"`` the weight is p(1-p), so matches whose
    outcome is most uncertain (most informative, hardest to game) dominate.

    Opponents from the past: with ``hall_of_fame_share`` > 0 and frozen past members offered to
    :meth:`pair`, each teacher's opponent is, with that probability, a frozen past student
    instead of a living one, and each living student is, with that probability, also posed
    tasks by a frozen past teacher (a match added to the step). Past opponents are drawn by the
    same PFSP weights, from their frozen ratings. This is the hall of fame of Rosin & Belew
    ("New methods for competitive coevolution", Evol. Comput. 1997), which keeps a population
    from forgetting how to beat opponents it no longer meets.

    Args:
        weighting: ``"variance"`` (p(1-p)), ``"hard"`` ((1-p)^2, opponents the chooser tends to
            lose to) or ``"uniform"``.
        floor: Added to every weight so that no pairing is impossible.
        hall_of_fame_share: Probability that an opponent is drawn from the past (0: never).

    Raises:
        ValueError: On an unknown weighting or a share outside [0, 1].
    """

    def __init__(
        self,
        *,
        weighting: str = _DEFAULTS.weighting,
        floor: float = _DEFAULTS.floor,
        hall_of_fame_share: float = _DEFAULTS.hall_of_fame_share,
    ) -> None:
        if weighting not in _WEIGHTINGS:
            raise ValueError(f"PFSPMatchmaker.weighting must be one of {_WEIGHTINGS}, got {weighting!r}")
        if not 0.0 <= hall_of_fame_share <= 1.0:
            raise ValueError(f"PFSPMatchmaker.hall_of_fame_share must be in [0, 1], got {hall_of_fame_share}")
        self.weighting, self.floor = weighting, float(floor)
        self.hall_of_fame_share = float(hall_of_fame_share)

    @classmethod
    def from_settings(cls, settings: MatchmakingSettings) -> PFSPMatchmaker:
        """The matchmaker the ``matchmaking`` settings describe."""
        return cls(**settings.model_dump())

    def weights(
        self,
        teacher_id: str,
        student_ids: Sequence[str],
        ratings: RatingSystem,
        *,
        opponent_ratings: Mapping[str, tuple[float, float] | None] | None = None,
    ) -> np.ndarray:
        """Normalised sampling weights of each opponent in ``student_ids`` for ``teacher_id``
        (the names are the teacher's side; the roles may be swapped). Opponents listed in
        ``opponent_ratings`` are frozen and use that rating (``None``: the initial rating)."""
        frozen = opponent_ratings or {}

        def rating_of(opponent: str) -> str | tuple[float, float]:
            if opponent not in frozen:
                return opponent
            return frozen[opponent] or (ratings.mu, ratings.sigma)

        p = np.array([ratings.win_probability(teacher_id, rating_of(s)) for s in student_ids], dtype=float)
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
        *,
        past_teachers: Mapping[str, tuple[float, float] | None] | None = None,
        past_students: Mapping[str, tuple[float, float] | None] | None = None,
    ) -> list[tuple[str, str]]:
        """One ``(teacher_id, student_id)`` pair per teacher, students drawn by PFSP weight, then
        the hall-of-fame matches of the living students (see the class doc).

        Args:
            teacher_ids: Living teachers.
            student_ids: Living students.
            ratings: Ratings of the living members.
            rng: Draws every choice; with no share or no past members, exactly the draws of a
                matchmaker without a hall of fame.
            past_teachers: Frozen teachers (key -> frozen rating) that may be drawn.
            past_students: Frozen students (key -> frozen rating) that may be drawn.

        Raises:
            ValueError: If there are no students.
        """
        if not student_ids:
            raise ValueError("PFSPMatchmaker.pair needs at least one student")
        share = self.hall_of_fame_share
        old_students, old_teachers = list(past_students or {}), list(past_teachers or {})
        pairs = []
        for t in teacher_ids:
            pool = student_ids
            if share > 0 and old_students and rng.random() < share:
                pool = old_students
            w = self.weights(t, pool, ratings, opponent_ratings=past_students if pool is old_students else None)
            pairs.append((t, pool[int(rng.choice(len(pool), p=w))]))
        if share > 0 and old_teachers:
            for s in student_ids:
                if rng.random() < share:
                    w = self.weights(s, old_teachers, ratings, opponent_ratings=past_teachers)
                    pairs.append((old_teachers[int(rng.choice(len(old_teachers), p=w))], s))
        return pairs
