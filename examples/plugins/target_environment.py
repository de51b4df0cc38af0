"""An environment plug-in: LoRA genomes evolve toward a fixed target update (no model at all)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch
from pydantic import Field

from redqueen.environments import ENVIRONMENTS, Environment, StepRecord
from redqueen.evo import League
from redqueen.fitness import Objectives
from redqueen.genomes import LoRAGenome
from redqueen.settings import PopulationSettings, ReplacementConfig, Settings


class TargetOptions(Settings):
    """The target environment's own settings (``environment.options``).

    Attributes:
        size: Rows and columns of the one layer every genome adapts.
    """

    size: int = Field(6, ge=1, le=4096)


@ENVIRONMENTS.register("target")
class TargetEnv(Environment):
    """Solo members chase a random target update; fitness is minus the distance to it.

    Each member's genome adapts one ``size`` x ``size`` layer; its ``closeness`` objective is
    -||s B A - target||_F. The members live in a league, whose evolution loop replaces them.

    Args:
        population: ``solo`` founders, and their genomes' rank, alpha and initialisation.
        options: The layer's size (:class:`TargetOptions`).
        replacement: Replacement settings (the ``evolution`` section).
        seed: Seeds the target, the founders and the evolution loop.

    Raises:
        ValueError: If there are fewer than two solo members.
    """

    roles: ClassVar[tuple[str, ...]] = ("solo",)

    def __init__(
        self,
        *,
        population: PopulationSettings | None = None,
        options: TargetOptions | None = None,
        replacement: ReplacementConfig | None = None,
        seed: int = 0,
    ) -> None:
        population = population or PopulationSettings()
        if population.solo < 2:
            raise ValueError(
                f"population.solo: the target environment needs at least 2, got {population.solo}"
            )
        size = (options or TargetOptions()).size
        gen = torch.Generator().manual_seed(seed)
        self.target = torch.randn(size, size, generator=gen)
        self.league = League(
            roles=self.roles,
            objectives={"solo": Objectives(("closeness",))},
            pairing_rng=np.random.default_rng(seed),  # no matches here: never drawn from
            evolution_rng=np.random.default_rng(seed + 1),
            replacement=replacement,
            rated=False,  # members play no matches: truncation on closeness ranks them
            describer=self,
        )
        self.league.found_many(
            "solo",
            population.solo,
            lambda: LoRAGenome.random(
                {"layer": (size, size)},
                rank=population.rank,
                alpha=population.alpha,
                rng=gen,
                init=population.init,
                std=population.init_std,
            ),
        )
        self.step_count = 0

    def describe(self, league: League) -> None:
        """Write every living member's ``closeness``; the league calls this after each birth
        and before it ranks the members."""
        for ind in league.population.living:
            ind.objectives["closeness"] = -float(
                torch.dist(ind.genome.delta_weight("layer"), self.target)
            )

    def step(self) -> StepRecord:
        """Close the step in the league (the worst replaced when due) and report the best."""
        step = self.step_count
        outcome = self.league.finish_step(step)
        best = max(ind.objectives["closeness"] for ind in self.league.population.living)
        self.step_count += 1
        return StepRecord(
            step, metrics={"best_closeness": best}, births=outcome.births, deaths=outcome.deaths
        )

    def state_dict(self) -> dict[str, Any]:
        """The league (members, lineage, the loop's random state) and the step count; the target
        follows from the seed."""
        return {"league": self.league.state_dict(), "step_count": self.step_count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.league.load_state_dict(state["league"])
        self.step_count = int(state["step_count"])
