"""An environment plug-in: LoRA genomes evolve toward a fixed target update (no model at all)."""

from __future__ import annotations

from typing import Annotated, Any

import torch
from pydantic import Field

from redqueen.environments import ENVIRONMENTS, Environment, StepRecord
from redqueen.evo import EvolutionLoop, Individual, Lineage, Population, ReplacementConfig
from redqueen.genomes import LoRAGenome


@ENVIRONMENTS.register("target")
class TargetEnv(Environment):
    """Solo members chase a random target update; fitness is minus the distance to it.

    Each member's genome adapts one ``size`` x ``size`` layer; its ``closeness`` objective is
    -||s B A - target||_F. Replacement is the evolution loop's, as in every environment.
    """

    def __init__(
        self,
        *,
        solo: Annotated[int, Field(ge=2)] = 8,
        rank: Annotated[int, Field(ge=1)] = 2,
        alpha: Annotated[float, Field(gt=0)] = 4.0,
        size: Annotated[int, Field(ge=1)] = 6,
        replacement: ReplacementConfig | None = None,
        seed: int = 0,
    ) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.target = torch.randn(size, size, generator=gen)
        self.population, self.lineage = Population(), Lineage()
        self.evolution = EvolutionLoop(
            self.population,
            self.lineage,
            replacement,
            rng=seed,
            objectives={"solo": ("closeness",)},
        )
        for _ in range(solo):
            genome = LoRAGenome.random(
                {"layer": (size, size)}, rank=rank, alpha=alpha, rng=gen, init="gaussian", std=0.5
            )
            self.evolution.found(Individual(self.population.new_id("solo"), "solo", genome))
        self.step_count = 0

    def step(self) -> StepRecord:
        """Score every member, then let the evolution loop replace the worst when due."""
        for ind in self.population.living:
            ind.objectives["closeness"] = -float(
                torch.dist(ind.genome.delta_weight("layer"), self.target)
            )
        best = max(ind.objectives["closeness"] for ind in self.population.living)
        every, births, deaths = self.evolution.config.replace_every, [], []
        if every and (self.step_count + 1) % every == 0:
            births, deaths = self.evolution.replace(self.step_count)
        self.step_count += 1
        return StepRecord(
            self.step_count - 1,
            metrics={"best_closeness": best},
            births=[b.id for b in births],
            deaths=deaths,
        )

    def state_dict(self) -> dict[str, Any]:
        """Members, lineage, the loop's random state and the step count (the target follows the seed)."""
        return {
            "population": self.population.state_dict(),
            "lineage": self.lineage.state_dict(),
            "evolution": self.evolution.state_dict(),
            "step_count": self.step_count,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.population.load_state_dict(state["population"])
        self.lineage.load_state_dict(state["lineage"])
        self.evolution.load_state_dict(state["evolution"])
        self.step_count = int(state["step_count"])
