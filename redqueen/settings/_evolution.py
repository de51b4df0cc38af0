"""The evolution core's settings: replacement (``evolution:``), matchmaking and objectives."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from redqueen.settings._base import Settings

__all__ = ["NEWBORN_RULES", "MatchmakingSettings", "ObjectiveSettings", "ReplacementConfig"]

#: Rules for a newborn's first rating (see ``redqueen.evo.newborn_rating``).
NEWBORN_RULES = ("survivor", "parents", "fresh")


def _default_operators() -> dict[str, float]:
    return {"svd_merge": 0.5, "gaussian": 0.5}


class ReplacementConfig(Settings):
    """How members are replaced, per role, every ``replace_every`` steps (``evolution:``).

    Attributes:
        replace_every: Steps between replacements, >= 0 (0: never).
        cull_fraction: Fraction of each role culled, in [0, 1] (at least one member when
            positive).
        selection: Parent selection scheme (a name in ``SELECTIONS``).
        selection_params: Keyword parameters of the selection scheme.
        ranking: Scheme whose order ranks members for culling (distinct, best first:
            ``rating_lcb``, ``truncation``, ``nsga2``, ``nsga3``, ``spea2``, ``novelty``...).
        operators: Operator name -> weight (>= 0, not all 0); names come from ``MUTATIONS`` or
            ``CROSSOVERS``.
        operator_params: Operator name -> keyword parameters. A crossover's ``n_parents``
            (default 2) sets how many parents it takes.
        elitism: The best ``elitism`` members of a role are never culled (>= 0).
        newborn: A child's first rating: ``"survivor"`` (default) the rating of a survivor of
            its role drawn uniformly at random, so that in a neutral game a newborn is
            exchangeable with every other member and its chance of being culled does not depend
            on its age; ``"parents"`` the mean of its parents' mu with their mean sigma widened
            half-way back to the initial sigma (biased: parents are chosen for their fitness);
            ``"fresh"`` the rating system's initial rating (biased against newborns).
        grace: Steps after its birth during which a member is not culled, >= 0 (0: none). Any grace
            makes the chance of being culled depend on age; it is there for studies that want it.
        snapshot_every: Every this many steps, the living members are copied into the hall of
            fame (frozen opponents for matchmaking, and the ``snapshots/`` of the run
            directory that ``redqueen ciao`` plays); >= 0, 0: never.
        hall_of_fame: Snapshots the hall of fame keeps in memory (>= 0), newest first (older
            ones stay on disk only).

    Raises:
        pydantic.ValidationError: (a ``ValueError``) ``"<field>: <problem>"`` for a value out
            of range.
    """

    replace_every: int = 2
    cull_fraction: float = 0.25
    selection: str = "tournament"
    selection_params: dict[str, Any] = Field(default_factory=dict)
    ranking: str = "rating_lcb"
    operators: dict[str, float] = Field(default_factory=_default_operators)
    operator_params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    elitism: int = 0
    newborn: Literal["survivor", "parents", "fresh"] = "survivor"
    grace: int = 0
    snapshot_every: int = 5
    hall_of_fame: int = 4

    _FREE_FORM = ("selection_params", "operator_params")

    @model_validator(mode="after")
    def _check(self) -> ReplacementConfig:
        for name in ("replace_every", "elitism", "grace", "snapshot_every", "hall_of_fame"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"{name}: must be >= 0, got {getattr(self, name)}")
        if not 0.0 <= self.cull_fraction <= 1.0:
            raise ValueError(f"cull_fraction: must be in [0, 1], got {self.cull_fraction}")
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
        return self

    def due(self, step: int) -> bool:
        """Whether replacement runs after ``step`` (0-based): every ``replace_every`` steps."""
        return self.replace_every > 0 and (step + 1) % self.replace_every == 0

    def snapshot_due(self, step: int) -> bool:
        """Whether the members are snapshotted after ``step`` (0-based)."""
        return self.snapshot_every > 0 and (step + 1) % self.snapshot_every == 0


class MatchmakingSettings(Settings):
    """PFSP matchmaking (``matchmaking:``, :class:`redqueen.fitness.PFSPMatchmaker`).

    Attributes:
        weighting: ``variance`` (p(1-p), balanced matches first), ``hard`` or ``uniform``.
        floor: Added to every weight so that no pairing is impossible.
        hall_of_fame_share: Probability that an opponent is a frozen past member from the hall
            of fame (each teacher's student, and an extra past teacher per student); needs
            ``evolution.snapshot_every`` > 0 to have past members to draw.
    """

    weighting: Literal["variance", "hard", "uniform"] = "variance"
    floor: float = Field(1e-3, ge=0)
    hall_of_fame_share: float = Field(0.0, ge=0, le=1)


class ObjectiveSettings(Settings):
    """Objective names per role (``objectives:``); one name is a scalar fitness, several make a
    Pareto problem.

    Attributes:
        teacher: Objectives of teachers (names in ``redqueen.fitness.OBJECTIVES``).
        student: Objectives of students.
        solo: Objectives of the self-play baseline's members.
    """

    teacher: tuple[str, ...] = Field(("rating",), min_length=1)
    student: tuple[str, ...] = Field(("rating",), min_length=1)
    solo: tuple[str, ...] = Field(("solve_rate",), min_length=1)

    def of(self, role: str) -> tuple[str, ...]:
        """The objective names of ``role``.

        Raises:
            KeyError: If ``role`` is none of ``teacher``, ``student``, ``solo``.
        """
        if role not in type(self).model_fields:
            raise KeyError(f"no objectives for role {role!r}")
        return tuple(getattr(self, role))
