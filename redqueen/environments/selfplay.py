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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from redqueen.environments._domain import TaskDomain
from redqueen.environments._round import GameSettings
from redqueen.environments._round_env import RoundEnv
from redqueen.environments.base import ENVIRONMENTS, StepRecord
from redqueen.evo import ReplacementConfig
from redqueen.fitness import Objectives, StudentReward, TeacherReward

ROLES = ("solo",)


@ENVIRONMENTS.register("selfplay")
class SelfPlayEnv(RoundEnv):
    """Independent solo adapters, each proposing and solving its own tasks (AZR baseline).

    Args:
        model: Base model id or path; ``"tiny-coder"`` (or ``None``) is the shipped model.
        host: An already built :class:`redqueen.engine.AdapterHost` holding no adapters.
        backend: Generation backend name.
        device: Torch device of the base model.
        dtype: Base model dtype name, or ``None`` for the host's default.
        target_modules: Linear modules that carry LoRA factors (``None``: every projection).
        solo: Number of independent solo agents (1 is Absolute Zero exactly).
        rank: LoRA rank.
        alpha: LoRA alpha.
        init: Initialisation of the genomes (``"peft"`` or ``"gaussian"``).
        init_std: Standard deviation of ``"gaussian"`` genomes.
        domain: The task domain (default: the code domain with its default settings).
        settings: Per-step budgets and sampling, as in the co-evolution environment.
        teacher_reward: Reward of a proposed task.
        student_reward: Reward of an answer.
        objectives: Objective names for the ``solo`` role (reported, e.g. ``("solve_rate",)``).
        replacement: Snapshot settings (``snapshot_every``, ``hall_of_fame``); its
            ``replace_every`` must be 0, as solo agents are never replaced.
        learner: A :class:`redqueen.engine.LearnerConfig` (default settings if ``None``).
        executor: Verifier executor settings ``{"workers", "timeout", "memory_mb"}``.
        seed: Seeds every random choice.

    Raises:
        ValueError: If ``solo`` is below 1 or ``replacement.replace_every`` is not 0.
    """

    #: Solo agents are independent: small whitening groups pool within the agent only.
    pool_across_adapters = False

    def __init__(
        self,
        *,
        model: str | Path | None = "tiny-coder",
        host: Any = None,
        backend: str = "auto",
        device: str = "cpu",
        dtype: str | None = None,
        target_modules: Sequence[str] | None = None,
        solo: int = 4,
        rank: int = 8,
        alpha: float = 16.0,
        init: str = "peft",
        init_std: float = 0.02,
        domain: TaskDomain[Any, Any, Any] | None = None,
        settings: GameSettings | None = None,
        teacher_reward: TeacherReward | None = None,
        student_reward: StudentReward | None = None,
        objectives: Mapping[str, Sequence[str]] | None = None,
        replacement: ReplacementConfig | None = None,
        learner: Any = None,
        executor: Mapping[str, Any] | None = None,
        seed: int = 0,
    ) -> None:
        if solo < 1:
            raise ValueError(f"SelfPlayEnv.solo must be >= 1, got {solo}")
        replacement = replacement or ReplacementConfig(replace_every=0)
        if replacement.replace_every != 0:
            raise ValueError(
                "SelfPlayEnv: solo agents are never replaced; replacement.replace_every must be 0, "
                f"got {replacement.replace_every}"
            )
        given = dict(objectives or {})
        super().__init__(
            sizes={"solo": solo},
            objectives={"solo": Objectives(tuple(given.get("solo", ("solve_rate",))))},
            rated=False,
            per_member_buffers=True,
            replacement=replacement,
            matchmaker=None,
            model=model,
            host=host,
            backend=backend,
            device=device,
            dtype=dtype,
            target_modules=target_modules,
            rank=rank,
            alpha=alpha,
            init=init,
            init_std=init_std,
            domain=domain,
            settings=settings,
            teacher_reward=teacher_reward,
            student_reward=student_reward,
            learner=learner,
            executor=executor,
            seed=seed,
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
