"""What one round of a game costs and how it samples, rewards and checks (``environment:``,
``sampling:``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import Field, model_validator

from redqueen.settings._base import Settings

__all__ = [
    "ExecutorSettings",
    "GameSettings",
    "MatchSettings",
    "SamplingSettings",
    "StudentRewardSettings",
    "TeacherRewardSettings",
]

#: The teacher's reward when a task's solve rate is 0 or 1, per variant.
EXTREME = {"populora": 0.0, "azr": -0.5}


class HasTaskTypes(Protocol):
    """A task domain, as far as the game's settings see it."""

    @property
    def task_types(self) -> Sequence[str]: ...


class MatchSettings(Settings):
    """How many tasks each proposer poses per step and how many answers each task gets.

    Attributes:
        tasks_per_teacher: Tasks each teacher (or solo member) proposes per step.
        answers_per_task: Answers ``n`` the solver samples for each valid task.
    """

    tasks_per_teacher: int = Field(3, ge=1, le=100_000)
    answers_per_task: int = Field(4, ge=1, le=10_000)


class SamplingSettings(Settings):
    """Sampling of proposals and answers (``sampling:``; the policy gradient assumes temperature 1).

    Attributes:
        temperature: Sampling temperature (1 keeps the policy gradient unbiased).
        top_p: Nucleus mass.
    """

    temperature: float = Field(1.0, ge=0, le=100)
    top_p: float = Field(1.0, gt=0, le=1)


class TeacherRewardSettings(Settings):
    """Teacher reward: ``invalid`` for an invalid task, ``extreme`` when the solve rate is 0 or 1,
    else ``1 - rate``. ``variant`` picks the default ``extreme``: 0 (PopuLoRA) or -0.5 (AZR's code).

    Attributes:
        variant: ``"populora"`` (``extreme`` 0) or ``"azr"`` (``extreme`` -0.5, as AZR's code).
        invalid: Reward of a task that is not valid (it does not parse, run or repeat).
        extreme: Reward of a task every answer solves, or none does; ``None``: the variant's.
    """

    variant: Literal["populora", "azr"] = "populora"
    invalid: float = -1.0
    extreme: float | None = None

    @model_validator(mode="after")
    def _resolve_extreme(self) -> TeacherRewardSettings:
        if self.extreme is None:
            object.__setattr__(self, "extreme", EXTREME[self.variant])
        return self


class StudentRewardSettings(Settings):
    """Student reward per answer status.

    Attributes:
        correct: Reward of a correct answer.
        wrong: Reward of a wrong answer.
        unparseable: Reward of an answer that cannot be parsed.
    """

    correct: float = 1.0
    wrong: float = -0.5
    unparseable: float = -1.0


#: The most sandbox workers (fork servers) one executor starts.
MAX_EXECUTOR_WORKERS = 1024


class ExecutorSettings(Settings):
    """Sandbox settings of the verifier's executor: at most 1024 workers, an hour a program
    and 1 TiB of memory (a larger value is a typo, or a way to make the sandbox fail).

    Attributes:
        workers: Sandbox worker processes (``None``: one per CPU).
        timeout: Seconds a program may run.
        memory_mb: Address-space limit of a program, in MiB.
    """

    workers: int | None = Field(None, ge=1, le=MAX_EXECUTOR_WORKERS)
    timeout: float = Field(2.0, gt=0, le=3600)
    memory_mb: int = Field(512, ge=16, le=1 << 20)


class GameSettings(MatchSettings):
    """How much each adapter proposes and answers per step in a task-domain game.

    Attributes:
        task_types: Task types proposed, cycled over each proposer's batch (the offset moves
            with the step so every type is proposed equally often over time); empty means
            every type of the domain.
        references: Reference examples ``K`` shown in each proposal prompt.
        buffer_size: Capacity of the task buffer (oldest entries are dropped first).
        propose_max_new_tokens: Token budget of a proposal.
        solve_max_new_tokens: Token budget of an answer.
        base_probe_answers: Answers the frozen base model samples per valid task to measure its
            solve rate (``base_solve_rate`` in ``tasks.jsonl``, a difficulty probe independent
            of the population); ``0`` turns the probe off.
        heldout_every: Every this many steps, the solvers and the frozen base model answer a
            fixed held-out task set of the domain, greedy, and the run logs
            ``heldout_solve_rate``, ``base_heldout_solve_rate`` and their difference
            ``heldout_lift``, an objective measure of progress; ``0`` never (a domain without a
            held-out set logs none).
        heldout_tasks: Size of that held-out set.
        teacher_reward: Reward of a proposed task.
        student_reward: Reward of an answer.
        executor: The verifier's sandbox.
    """

    task_types: tuple[str, ...] = ()
    references: int = Field(3, ge=0, le=1_000)
    buffer_size: int = Field(256, ge=1, le=10_000_000)
    propose_max_new_tokens: int = Field(128, ge=1, le=1_000_000)
    solve_max_new_tokens: int = Field(96, ge=1, le=1_000_000)
    base_probe_answers: int = Field(2, ge=0, le=10_000)
    heldout_every: int = Field(0, ge=0, le=100_000_000)
    heldout_tasks: int = Field(32, ge=1, le=100_000)
    teacher_reward: TeacherRewardSettings = TeacherRewardSettings()
    student_reward: StudentRewardSettings = StudentRewardSettings()
    executor: ExecutorSettings = ExecutorSettings()

    def for_domain(self, domain: HasTaskTypes) -> GameSettings:
        """These settings alone, their ``task_types`` checked against a domain's (empty: all).

        Raises:
            ValueError: If a task type is not one of the domain's.
        """
        task_types = tuple(domain.task_types)
        unknown = [t for t in self.task_types or () if t not in task_types]
        if unknown:
            raise ValueError(
                f"task_types: {unknown!r} not task types of the domain "
                f"(known: {', '.join(task_types)})"
            )
        fields = {name: getattr(self, name) for name in GameSettings.model_fields}
        return GameSettings(**{**fields, "task_types": tuple(self.task_types or task_types)})
