"""Verifiable rewards of teachers (task proposers) and students (solvers)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


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

    invalid: float = -1.0
    extreme: float = 0.0

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

    correct: float = 1.0
    wrong: float = -0.5
    unparseable: float = -1.0

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
