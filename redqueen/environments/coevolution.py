"""PopuLoRA's teacher-vs-student co-evolution environment (the RLVR inner loop).

One step, following the design's data flow: PFSP matchmaking pairs each teacher with a
student; every teacher proposes tasks of the environment's :class:`TaskDomain` (``code_o`` /
``code_i`` / ``code_f`` in the default code domain) conditioned on reference examples from the
task buffer (one mixed-adapter ``generate`` call for the whole population); the domain
validates them; matched students sample ``n`` answers per valid task
(one more mixed call); rewards, one REINFORCE++ update per adapter, rating updates from the
match outcomes; and every ``replace_every`` steps the evolution loop replaces the weakest
members through the operator library, the adapter host following births and deaths.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from typing_extensions import TypedDict, Unpack

from redqueen.environments._domain import TaskDomain
from redqueen.environments._game_stats import match_outcomes
from redqueen.environments._round_env import RoundEnv
from redqueen.environments.base import ENVIRONMENTS, StepRecord, check_arguments
from redqueen.settings import (
    ClusterSettings,
    EngineSettings,
    GameSettings,
    LearnerSettings,
    MatchmakingSettings,
    ObjectiveSettings,
    PopulationSettings,
    ReplacementConfig,
    SamplingSettings,
)

if TYPE_CHECKING:
    from redqueen.engine import HostProtocol

ROLES = ("teacher", "student")


class CoevolutionArgs(TypedDict, total=False):
    """The settings objects a round environment takes (see :class:`RoundEnv`)."""

    engine: EngineSettings | None
    cluster: ClusterSettings | None
    population: PopulationSettings | None
    game: GameSettings | None
    sampling: SamplingSettings | None
    learner: LearnerSettings | None
    replacement: ReplacementConfig | None
    objectives: ObjectiveSettings | None
    domain: TaskDomain[Any, Any, Any] | None
    host: HostProtocol | None
    seed: int


@ENVIRONMENTS.register("coevolution")
class CoevolutionEnv(RoundEnv):
    """Teachers propose tasks of a domain (code by default), students solve them; both evolve.

    Takes the settings objects of :class:`RoundEnv` (each defaulting to its own defaults) and
    the league's PFSP matchmaking, with its share of opponents from the hall of fame.

    Args:
        matchmaking: PFSP matchmaking settings.
        parts: The settings of :class:`RoundEnv` (``engine``, ``population``, ``game``, ...).

    Raises:
        TypeError: If a settings argument is not of its settings type.
        ValueError: If a role has no members or a setting is out of range.
    """

    roles: ClassVar[tuple[str, ...]] = ROLES

    def __init__(
        self, *, matchmaking: MatchmakingSettings | None = None, **parts: Unpack[CoevolutionArgs]
    ) -> None:
        check_arguments(type(self).__name__, matchmaking=(matchmaking, MatchmakingSettings))
        self.matchmaking = matchmaking or MatchmakingSettings()
        super().__init__(**parts)

    # -- one step ---------------------------------------------------------------------------

    def step(self) -> StepRecord:
        """Matchmaking, propose, verify, solve, reward, learn, rate, and replace when due."""
        start = time.perf_counter()
        step = self.step_count
        pairs = self.league.pair()
        frozen = self.league.frozen(pairs)
        self.adapters.lend(frozen)
        try:
            played, learner_stats = self._play(
                pairs, step, proposer_role="teacher", solver_role="student", frozen=frozen
            )
        finally:
            self.adapters.give_back(frozen)

        for teacher, student, rates in match_outcomes(played, pairs):
            self.league.record(teacher, student, rates)
        self.signatures.update(
            item.signature for item in played if item.valid and item.signature is not None
        )
        self.stats.observe(played, self.population.living)
        outcome = self.league.finish_step(step)

        record = self._record(
            step, start, played, learner_stats, ROLES, births=outcome.births, deaths=outcome.deaths
        )
        record.metrics.update(self.evolution.archive_metrics())
        return record
