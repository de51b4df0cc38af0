"""The single-agent self-play baseline (Absolute Zero Reasoner style).

Each adapter proposes tasks and then solves its own valid tasks, on the same task domain,
prompts and rewards as :class:`~redqueen.environments.CoevolutionEnv`. The population is a set of
``solo`` members that are **independent solo agents**: they never meet, carry no ratings, are
never replaced, and each proposes from and adds to its own task buffer, so ``solo=1`` is
Absolute Zero itself and ``solo=4`` runs four independent replicas side by side in the same
batched calls. Founding and snapshots go through the same :class:`redqueen.evo.EvolutionLoop`
as every other environment.

Compute is matched per adapter: with the same :class:`GameSettings`, each solo member makes
exactly as many proposals per step as a teacher in the co-evolution environment and samples
exactly as many answers per valid task as the student matched with that teacher, so the
paper's comparison (population co-evolution vs self-play) can be rerun at equal budgets.
"""

from __future__ import annotations

import time
from typing import ClassVar

from redqueen.environments._round_env import RoundEnv
from redqueen.environments.base import ENVIRONMENTS, StepRecord
from redqueen.settings import PopulationSettings, ReplacementConfig

ROLES = ("solo",)


@ENVIRONMENTS.register("selfplay")
class SelfPlayEnv(RoundEnv):
    """Independent solo adapters, each proposing and solving its own tasks (AZR baseline).

    Takes the settings objects of :class:`RoundEnv`; ``population.solo`` agents (1 is Absolute
    Zero exactly), each with its own task buffer, never rated and never replaced: the
    replacement settings only set the snapshots (``snapshot_every``, ``hall_of_fame``), and
    their ``replace_every`` must be 0 (the default here).

    Raises:
        ValueError: If ``population.solo`` is below 1 or ``replacement.replace_every`` is not 0.
    """

    roles: ClassVar[tuple[str, ...]] = ROLES
    rated: ClassVar[bool] = False
    solver_role: ClassVar[str] = "solo"
    per_member_buffers: ClassVar[bool] = True
    #: Solo agents are independent: small whitening groups pool within the agent only.
    pool_across_adapters: ClassVar[bool] = False

    def default_replacement(self) -> ReplacementConfig:
        """Snapshots only: solo agents are never replaced."""
        return ReplacementConfig(replace_every=0)

    @classmethod
    def check_settings(
        cls, population: PopulationSettings, replacement: ReplacementConfig | None
    ) -> None:
        """At least one solo agent, and no replacement.

        Raises:
            ValueError: Naming ``population.solo`` or ``evolution.replace_every``.
        """
        if population.solo < 1:
            raise ValueError("population.solo: selfplay needs at least one solo agent")
        if replacement is not None and replacement.replace_every != 0:
            raise ValueError(
                "evolution.replace_every: the selfplay environment runs independent solo agents "
                "without replacement; set it to 0"
            )

    def step(self) -> StepRecord:
        """Every solo member proposes, verifies, solves its own tasks, and learns from both."""
        start = time.perf_counter()
        step = self.step_count
        pairs = self.league.pair()  # every solo member meets itself
        played, learner_stats = self._play(
            pairs, step, proposer_role="propose", solver_role="solve"
        )
        self.signatures.update(
            item.signature for item in played if item.valid and item.signature is not None
        )
        self.stats.observe(played, self.population.living)
        self.league.finish_step(step)  # no replacement: the snapshot when due
        return self._record(step, start, played, learner_stats, ROLES)
