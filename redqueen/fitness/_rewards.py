"""Verifiable rewards of teachers (task proposers) and students (solvers)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from redqueen.settings import StudentRewardSettings, TeacherRewardSettings

# The one place the defaults are written: the reward settings.
_TEACHER, _STUDENT = TeacherRewardSettings(), StudentRewardSettings()


@dataclass(frozen=True)
class TeacherReward:
    """Reward of a proposed task: learnable tasks pay, trivial and impossible ones do not.

    Absolute Zero (Zhao et al., "Absolute Zero: Reinforced self-play reasoning with zero data",
    2025): the proposer earns ``1 - rho`` for a task the solver solves with rate
    ``0 < rho < 1``, and nothing for ``rho`` in {0, 1}. AZR's released code pays -0.5 there;
    pass ``extreme=-0.5`` for that variant.

    Attributes:
        invalid: Reward of a task that failed validation.
        extreme: Reward when the solve rate is exactly 0 or 1.
    """

    invalid: float = _TEACHER.invalid
    extreme: float = float(_TEACHER.extreme or 0.0)

    @classmethod
    def from_settings(cls, settings: TeacherRewardSettings) -> TeacherReward:
        """The reward its settings describe (``extreme`` resolved from the variant)."""
        return cls(invalid=settings.invalid, extreme=float(settings.extreme or 0.0))

    def __call__(self, valid: bool, solve_rate: float | None) -> float:
        """Reward of one task.

        Raises:
            ValueError: If a valid task has no solve rate or one outside [0, 1].
        """
        if not valid:
            return self.invalid
        if solve_rate is None or not 0.0 <= solve_rate <= 1.0:
            raise ValueError(f"TeacherReward: solve_rate must be in [0, 1] for a valid task, got {solve_rate!r}")
        if solve_rate in (0.0, 1.0):
            return self.extreme
        return 1.0 - solve_rate


@dataclass(frozen=True)
class StudentReward:
    """Reward of one answer: +1 correct, -0.5 wrong, -1 unparseable (format errors cost most).

    ``status`` may be a string or any enum whose ``value`` or ``name`` is ``correct``,
    ``wrong`` or ``unparseable`` (case-insensitive), e.g. ``redqueen.verifiers.AnswerStatus``.
    """

    correct: float = _STUDENT.correct
    wrong: float = _STUDENT.wrong
    unparseable: float = _STUDENT.unparseable

    @classmethod
    def from_settings(cls, settings: StudentRewardSettings) -> StudentReward:
        """The reward its settings describe."""
        return cls(**settings.model_dump())

    def __call__(self, status: str | enum.Enum) -> float:
        """Reward of one answer status.

        Raises:
            ValueError: On an unknown status.
        """
        key = status
        if isinstance(status, enum.Enum):
            key = status.value if isinstance(status.value, str) else status.name
        key = str(key).lower()
        if key not in ("correct", "wrong", "unparseable"):
            raise ValueError(f"StudentReward: unknown answer status {status!r} (correct, wrong, unparseable)")
        return float(getattr(self, key))


#: What an invalid task counts as in a match (see :func:`match_score`).
INVALID_TASK_POLICIES: tuple[str, ...] = ("forfeit", "skip")


def match_score(solve_rates: Sequence[float | None], *, invalid: str = "forfeit") -> float:
    """Who won a teacher-student match: the student's score in [0, 1], the one rule every
    environment records for ratings.

    Each task contributes its solve rate; ``None`` marks an invalid task. With
    ``invalid="forfeit"`` (the default) the teacher forfeits an invalid task, which counts as
    solved (score 1), so proposing junk loses matches; with ``invalid="skip"`` invalid tasks
    are left out and the score is the mean over valid ones. A match with no valid task at all
    is a student win (1.0) under both. Example: one valid task solved at 0 and seven invalid
    ones score 0.875 under ``forfeit`` and 0.0 under ``skip``.

    Raises:
        ValueError: On an unknown ``invalid`` policy, or an empty match.
    """
    if invalid not in INVALID_TASK_POLICIES:
        raise ValueError(
            f"match_score: invalid must be one of {', '.join(INVALID_TASK_POLICIES)}, got {invalid!r}"
        )
    if not solve_rates:
        raise ValueError("match_score: a match needs at least one task")
    valid = [float(r) for r in solve_rates if r is not None]
    if not valid:
        return 1.0
    if invalid == "skip":
        return sum(valid) / len(valid)
    return (sum(valid) + (len(solve_rates) - len(valid))) / len(solve_rates)
