"""Named objectives per role, turned into DEAP-compatible fitness vectors."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from redqueen._registry import Needs, Registry
from redqueen.fitness._deap_fitness import Fitness
from redqueen.fitness._ratings import conservative_rating


class Member(Protocol):
    """What the objectives read of a member (an :class:`redqueen.evo.Individual`): its id, its
    ``(mu, sigma)`` rating and the named values an environment wrote."""

    @property
    def id(self) -> str:
        """The member's id."""
        ...

    @property
    def rating(self) -> tuple[float, float] | None:
        """Its ``(mu, sigma)``, or ``None`` until rated."""
        ...

    @property
    def objectives(self) -> Mapping[str, float]:
        """Named objective values (solve rate, novelty, ...)."""
        ...


class FitMember(Member, Protocol):
    """A member whose DEAP fitness :meth:`Objectives.assign` sets."""

    fitness: Fitness


#: Objective functions ``f(member) -> float`` by name; any other name reads ``member.objectives``.
OBJECTIVES: Registry[Callable[..., float]] = Registry("objective", callables=True)


@OBJECTIVES.register("rating", needs=Needs(member_fields=("rating",)))
def rating(ind: Member) -> float:
    """Conservative skill mu - 3 sigma (PopuLoRA's ranking); ``rating_lcb`` is the same objective."""
    return conservative_rating(*_rating(ind))


# The same objective under the name of the selection scheme that ranks by it.
OBJECTIVES.register("rating_lcb", needs=Needs(member_fields=("rating",)))(rating)


@OBJECTIVES.register("rating_mu", needs=Needs(member_fields=("rating",)))
def rating_mu(ind: Member) -> float:
    """Mean skill mu."""
    return _rating(ind)[0]


def _rating(ind: Member) -> tuple[float, float]:
    if ind.rating is None:
        raise ValueError(f"objective needs a rating but member {ind.id!r} has none")
    return float(ind.rating[0]), float(ind.rating[1])


@dataclass(frozen=True)
class Objectives:
    """A configurable objective vector, e.g. ``Objectives(("rating", "novelty"))``.

    Names registered in :data:`OBJECTIVES` are computed; any other name is read from the
    member's ``objectives`` dict (environments fill it: solve rate, complexity, novelty ...).

    Attributes:
        names: Objective names, in fitness order.
        weights: DEAP weights (+1 maximise, -1 minimise); default all +1.

    Raises:
        ValueError: If names is empty or weights has the wrong length.
    """

    names: tuple[str, ...]
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(self.names))
        if not self.names:
            raise ValueError("Objectives.names must not be empty")
        weights = tuple(float(w) for w in (self.weights or (1.0,) * len(self.names)))
        if len(weights) != len(self.names):
            raise ValueError(f"Objectives.weights has {len(weights)} entries for {len(self.names)} names")
        object.__setattr__(self, "weights", weights)

    def value(self, ind: Member, name: str) -> float:
        """One objective of one member.

        Raises:
            KeyError: If the member lacks a non-registered objective.
        """
        if name in OBJECTIVES:
            return float(OBJECTIVES[name](ind))
        try:
            return float(ind.objectives[name])
        except KeyError:
            raise KeyError(f"member {ind.id!r} has no objective {name!r} (has: {sorted(ind.objectives)})") from None

    def vector(self, ind: Member) -> tuple[float, ...]:
        """The objective vector of one member, in :attr:`names` order."""
        return tuple(self.value(ind, n) for n in self.names)

    def assign(self, individuals: Iterable[FitMember]) -> None:
        """Set each member's ``fitness`` (weights and values) from this objective vector."""
        assert self.weights is not None  # __post_init__ fills the default weights
        for ind in individuals:
            ind.fitness = Fitness(self.weights, self.vector(ind))


def objective_matrix(individuals: Sequence[Member], objectives: Objectives) -> list[tuple[float, ...]]:
    """Objective vectors of many members (rows), e.g. for hypervolume or plots."""
    return [objectives.vector(ind) for ind in individuals]
