"""A difficulty ladder whose teachers are paid for the student's learning signal."""

from __future__ import annotations

from redqueen.environments.games._base import GAMES
from redqueen.environments.games.ladder import Ladder


@GAMES.register("ladder_learnability")
class LearnabilityLadder(Ladder):
    """The difficulty ladder with teachers paid ``4 * rho * (1 - rho)`` for a task solved at rate ``rho``.

    On the plain :class:`Ladder` the direction of the teachers' drift is fixed by the reward's
    algebra: ``(1 - c) * (1 - rho) + c * (1.5 * rho - 0.5)`` falls with ``rho`` when the
    coupling ``c`` is below 0.4 and rises above it, so climbing and collapsing are decided
    before anyone plays. Here the teacher's pay, the variance of a task's outcome (largest at
    ``rho = 1/2``, where the student's advantage has the most signal), rises with ``rho`` below
    one half and falls above it: teachers are pulled towards the student's level from either
    side, and whether difficulty climbs or sinks depends on whether the students' skill does,
    on the dynamics, not on the sign of the reward. ``coupling`` mixes in the student's mean
    reward as in every game; the pay's peak stays inside (0, 1) for coupling below about 0.73.

    Args:
        coupling: See :class:`redqueen.environments.games.Game`.
    """

    def teacher_pay(self, populora: float, solve_rate: float, student_reward: float) -> float:
        learnability = 4.0 * solve_rate * (1.0 - solve_rate)
        return (1.0 - self.coupling) * learnability + self.coupling * student_reward
