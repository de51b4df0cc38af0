"""The :class:`Environment` protocol every environment implements.

An environment owns its population, lineage and everything it learns; the experiment runner
only calls :meth:`Environment.step`, writes what the step reports, and checkpoints
:meth:`Environment.state_dict`. That is the whole contract, so the runner drives the
co-evolution environment, the self-play baseline and the surrogate environment alike.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from redqueen._registry import Registry


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

    Subclasses hold a :class:`redqueen.evo.Population` in ``population`` and a
    :class:`redqueen.evo.Lineage` in ``lineage``, and count finished steps in ``step_count``.
    """

    #: Registry name; set by :data:`ENVIRONMENTS` registration.
    name: ClassVar[str] = ""

    #: Configuration keys this environment reads: sections (``"learner"``) or fields
    #: (``"population.solo"``), besides those every run reads. A key a configuration sets
    #: (to other than its default) that nothing reads is an error at load, naming the key.
    #: ``None``: the keys its constructor's keyword arguments are built from.
    config_sections: ClassVar[tuple[str, ...] | None] = None

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


#: Registered environment classes, by name.
ENVIRONMENTS: Registry[type[Environment]] = Registry("environment", typed=False)
