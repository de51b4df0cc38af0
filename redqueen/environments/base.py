"""The :class:`Environment` base every environment implements.

An environment owns its :class:`redqueen.evo.League` (population, lineage, ratings, births and
deaths) and everything it learns; the experiment runner only calls :meth:`Environment.step`,
writes what the step reports and the league's lineage and members, and checkpoints
:meth:`Environment.state_dict`. That is the whole contract, so the runner drives the
co-evolution environment, the self-play baseline, the surrogate environments and plug-ins alike.

How a configuration reaches an environment is read from its constructor: each keyword
parameter is typed with a settings object of :mod:`redqueen.settings` (the configuration
section of that type is handed over whole), ``seed: int``, a task domain, or ``options``, a
settings model of the environment's own (``environment.options``). See
``docs/writing-a-plugin.md``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from redqueen._registry import Registry

if TYPE_CHECKING:
    from redqueen.evo import League
    from redqueen.genomes import LoRAGenome
    from redqueen.settings import PopulationSettings, ReplacementConfig


@dataclass
class StepRecord:
    """What one environment step reports to the runner.

    Attributes:
        step: Index of the step just finished (0-based).
        metrics: Flat scalar metrics; one ``metrics.jsonl`` row.
        tasks: One dict per proposed task (type, validity, complexity, solve rate, teacher id, ...);
            rows of ``tasks.jsonl``.
        ratings: One dict per rated member (id, role, mu, sigma, ...); rows of ``ratings.jsonl``.
        births: Ids of members born in this step.
        deaths: Ids of members that died in this step.
    """

    step: int
    metrics: dict[str, float] = field(default_factory=dict)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    ratings: list[dict[str, Any]] = field(default_factory=list)
    births: list[str] = field(default_factory=list)
    deaths: list[str] = field(default_factory=list)


class Environment(ABC):
    """A (co-)evolutionary environment advanced one step at a time.

    Subclasses keep their members in a :class:`redqueen.evo.League` (:attr:`league`: the one
    owner of births and deaths, lineage and ratings) and count finished steps in
    ``step_count``.
    """

    #: Registry name; set by :data:`ENVIRONMENTS` registration.
    name: ClassVar[str] = ""

    #: The roles of the members (``"teacher"``, ``"student"``, ``"solo"``); each reads its size
    #: in ``population`` and its objectives in ``objectives``.
    roles: ClassVar[tuple[str, ...]] = ()

    #: Population, lineage, ratings, matchmaking, replacement and hall of fame.
    league: League

    #: The base model the members' adapters sit on (written into exported PEFT adapters);
    #: ``None`` when there is none to name.
    base_model_path: str | None = None

    #: Objective names, per role, that members carry in ``objectives``; ``objectives.<role>``
    #: is checked against them (and the registered objectives) at load. ``None``: not checked.
    objective_names: ClassVar[Mapping[str, tuple[str, ...]] | None] = None

    step_count: int = 0

    @abstractmethod
    def step(self) -> StepRecord:
        """Run one step (including replacement when it is due) and report it."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume bit-for-bit: genomes, optimizer states, ratings,
        buffers, step count and every RNG state. Must be ``torch.save``-able."""

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""

    def close(self) -> None:
        """Release processes and memory (executors, models). Safe to call twice."""
        return None

    @classmethod
    def check_settings(
        cls, population: PopulationSettings, replacement: ReplacementConfig | None
    ) -> None:
        """Refuse settings this environment cannot play with, before anything is built.

        Called by the constructor, and at load (before the run folder is named or any model
        loads) with the configuration's sections; ``replacement`` is ``None`` where the
        environment keeps its own default. This one asks for a member of each of :attr:`roles`.

        Raises:
            ValueError: ``"population.<size>: ..."`` when one of :attr:`roles` has no members.
        """
        for role in cls.roles:
            if population.size_of(role) < 1:
                raise ValueError(
                    f"population.{population.size_field(role)}: {cls.name or cls.__name__} "
                    f"needs at least one {role}"
                )


@runtime_checkable
class MatchPlayer(Protocol):
    """An environment that can play matches between genomes outside its run (``redqueen ciao``)."""

    def play_matches(
        self, pairs: Sequence[tuple[LoRAGenome, LoRAGenome]], *, seed: int
    ) -> list[float]:
        """Each pair's score for its second member, in [0, 1]."""
        ...


def check_arguments(owner: str, **arguments: tuple[object, type | tuple[type, ...]]) -> None:
    """Refuse a constructor argument of the wrong type before anything is built: each keyword
    is ``name=(value, expected type)``, and ``None`` (the defaults) always passes.

    Settings are handed over as settings objects (the configuration section, validated when
    it was loaded), not mappings: build one with ``PopulationSettings(teachers=4)``.

    Raises:
        TypeError: ``<owner>: population must be a PopulationSettings or None, got dict``.
    """
    for name, (value, expected) in arguments.items():
        if value is not None and not isinstance(value, expected):
            kinds = expected if isinstance(expected, tuple) else (expected,)
            wanted = " or ".join(kind.__name__ for kind in kinds)
            raise TypeError(
                f"{owner}: {name} must be a {wanted} or None, got {type(value).__name__}"
            )


#: Registered environment classes, by name.
ENVIRONMENTS: Registry[type[Environment]] = Registry("environment", typed=False, callables=True)
