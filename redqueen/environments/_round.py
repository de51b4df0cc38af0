"""The propose -> verify -> solve -> reward -> learn pipeline of the task-domain environments.

Both :class:`~redqueen.environments.CoevolutionEnv` (teachers vs students) and
:class:`~redqueen.environments.SelfPlayEnv` (one adapter in both roles) play the same game on
a :class:`~redqueen.environments.TaskDomain` (the code domain by default); they differ only in
who is matched with whom and in what happens between steps. This module holds the game: one
mixed-adapter ``generate`` call for every proposal of the population, validation by the domain,
one mixed-adapter call for every answer, grading by the domain, rewards, and one REINFORCE++
update per adapter on its own rollouts. Nothing here looks inside a proposal, a task or an
answer: each goes back to the domain that made it.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from redqueen.engine import (
    Generation,
    HostProtocol,
    LearnerProtocol,
    Rollout,
    SamplingParams,
    StepStats,
    whiten_pooled,
)
from redqueen.environments._domain import ANSWER_STATUSES, Rejected, TaskDomain
from redqueen.environments.task_buffer import TaskBuffer, TaskBuffers, buffer_for
from redqueen.fitness import StudentReward, TeacherReward
from redqueen.settings import GameSettings, SamplingSettings
from redqueen.verifiers import ProgramRunner

#: Reason recorded for a proposal the domain cannot parse.
UNPARSEABLE = "unparseable"


@dataclass
class PlayedTask:
    """Everything that happened to one proposed task within a step.

    ``task`` is the domain's task when the proposal was valid; ``program`` and ``signature``
    are the domain's text and signature of the parsed proposal (``None`` if it did not parse).
    """

    teacher: str
    student: str
    task_type: str
    proposal_gen: Generation
    task: Any = None
    reason: str | None = None
    program: str | None = None
    complexity: float | None = None
    signature: str | None = None
    answers: list[Generation] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    solve_rate: float | None = None
    teacher_reward: float = 0.0
    student_rewards: list[float] = field(default_factory=list)
    measures: dict[str, float] = field(default_factory=dict)
    base_answers: list[Generation] = field(default_factory=list)
    base_solve_rate: float | None = None
    #: Whitened advantages, the proposal's first, then each answer's (set by :func:`learn`).
    advantages: list[float] = field(default_factory=list)
    #: Per advantage, whether it was whitened with pooled statistics.
    pooled: list[bool] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """Whether the task passed validation."""
        return self.task is not None


def task_types_for(settings: GameSettings, step: int) -> list[str]:
    """Task types of one proposer's batch at ``step`` (cycled, offset by the step)."""
    types, n = settings.task_types, settings.tasks_per_teacher
    return [types[(step * n + j) % len(types)] for j in range(n)]


def propose(
    host: HostProtocol,
    pairs: Sequence[tuple[str, str]],
    buffer: TaskBuffer | TaskBuffers,
    settings: GameSettings,
    sampling: SamplingSettings,
    *,
    domain: TaskDomain[Any, Any, Any],
    step: int,
    py_rng: random.Random,
    seed: int,
) -> list[PlayedTask]:
    """Every proposer writes its batch of tasks, all in one mixed-adapter ``generate`` call."""
    prompts, adapters, played = [], [], []
    for teacher, student in pairs:
        for task_type in task_types_for(settings, step):
            refs = buffer_for(buffer, teacher).sample(settings.references, py_rng)
            prompts.append(domain.propose_prompt(task_type, refs))
            adapters.append(teacher)
            played.append((teacher, student, task_type))
    params = SamplingParams(
        max_new_tokens=settings.propose_max_new_tokens,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        stop=tuple(domain.propose_stop),
        seed=seed,
    )
    gens = host.generate(prompts, adapters, params) if prompts else []
    return [PlayedTask(t, s, tt, g) for (t, s, tt), g in zip(played, gens, strict=True)]


def verify(
    played: Sequence[PlayedTask],
    domain: TaskDomain[Any, Any, Any],
    executor: ProgramRunner,
    buffer: TaskBuffer | TaskBuffers,
) -> None:
    """Parse each proposal and let the domain validate it (one batch per task type); valid
    tasks are measured and join the proposer's task buffer (the shared one, or its own when
    ``buffer`` is per proposer), in the order they were proposed.

    Gold answers come from the domain, never from the model.
    """
    parsed: dict[str, list[tuple[PlayedTask, Any]]] = defaultdict(list)
    for item in played:
        proposal = domain.parse_proposal(item.task_type, item.proposal_gen.text or "")
        if proposal is None:
            item.reason = UNPARSEABLE
            continue
        item.program = domain.task_text(proposal)
        item.signature = domain.signature(proposal)
        parsed[item.task_type].append((item, proposal))
    for task_type, batch in parsed.items():
        verdicts = domain.validate(task_type, [proposal for _, proposal in batch], executor)
        if len(verdicts) != len(batch):
            raise ValueError(
                f"domain {type(domain).__name__}: validate returned {len(verdicts)} verdicts "
                f"for {len(batch)} proposals"
            )
        for (item, _), verdict in zip(batch, verdicts, strict=True):
            if isinstance(verdict, Rejected):
                item.reason = verdict.reason
            else:
                item.task = verdict
    for item in played:
        if item.valid:
            measured = domain.measure(item.task)
            item.complexity = float(measured.complexity)
            item.measures = {k: float(v) for k, v in measured.measures.items()}
            buffer_for(buffer, item.teacher).add(domain.reference(item.task))


def solve(
    host: HostProtocol,
    played: Sequence[PlayedTask],
    settings: GameSettings,
    sampling: SamplingSettings,
    *,
    domain: TaskDomain[Any, Any, Any],
    seed: int,
) -> None:
    """Each matched solver samples ``n`` answers per valid task, and the frozen base model
    ``base_probe_answers`` (its difficulty probe), all in one mixed ``generate`` call."""
    valid = [item for item in played if item.valid]
    if not valid:
        return
    n, probe = settings.answers_per_task, settings.base_probe_answers
    params = SamplingParams(
        max_new_tokens=settings.solve_max_new_tokens,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        stop=tuple(domain.solve_stop),
        seed=seed,
        n=n,
    )
    prompts = [domain.solve_prompt(i.task) for i in valid]
    adapters: list[str | None] = [i.student for i in valid]
    per_row = [params] * len(valid)
    if probe:
        prompts += prompts
        adapters += [None] * len(valid)
        per_row += [replace(params, n=probe)] * len(valid)
    gens = host.generate(prompts, adapters, per_row)
    base = len(valid) * n
    for index, item in enumerate(valid):
        item.answers = list(gens[index * n : (index + 1) * n])
        item.base_answers = list(gens[base + index * probe : base + (index + 1) * probe])


def judge(
    domain: TaskDomain[Any, Any, Any],
    executor: ProgramRunner,
    answered: Sequence[tuple[PlayedTask, Generation]],
) -> list[str]:
    """Statuses of answers to valid tasks: unparseable ones without asking, the rest checked by
    the domain in one batch.

    Raises:
        ValueError: If the domain returns a wrong number of statuses or an unknown one.
    """
    parsed = [domain.parse_answer(item.task_type, gen.text or "") for item, gen in answered]
    batch = [(item.task, a) for (item, _), a in zip(answered, parsed, strict=True) if a is not None]
    checked = list(domain.check(batch, executor)) if batch else []
    unknown = sorted(set(checked) - set(ANSWER_STATUSES))
    if len(checked) != len(batch) or unknown:
        raise ValueError(
            f"domain {type(domain).__name__}: check returned {len(checked)} statuses for "
            f"{len(batch)} answers{f', unknown {unknown}' if unknown else ''}"
        )
    statuses = iter(checked)
    return [UNPARSEABLE if a is None else next(statuses) for a in parsed]


def grade(
    played: Sequence[PlayedTask],
    domain: TaskDomain[Any, Any, Any],
    executor: ProgramRunner,
    teacher_reward: TeacherReward,
    student_reward: StudentReward,
) -> None:
    """Judge every answer (one batch) and compute solve rates and both roles' rewards."""
    statuses = iter(
        judge(domain, executor, [(item, gen) for item in played if item.valid for gen in item.answers])
    )
    for item in played:
        if not item.valid:
            item.teacher_reward = teacher_reward(False, None)
            continue
        item.statuses = [next(statuses) for _ in item.answers]
        item.student_rewards = [student_reward(s) for s in item.statuses]
        item.solve_rate = (
            sum(s == "correct" for s in item.statuses) / len(item.statuses)
            if item.statuses
            else 0.0
        )
        item.teacher_reward = teacher_reward(True, item.solve_rate)


def grade_base(domain: TaskDomain[Any, Any, Any], executor: ProgramRunner, played: Sequence[PlayedTask]) -> int:
    """Judge the frozen base model's answers (sampled beside the students', see :func:`solve`)
    in one batch; sets each valid task's ``base_solve_rate``.

    Returns:
        Tokens the probe generated (nothing learns from them).
    """
    probed = [item for item in played if item.valid and item.base_answers]
    if not probed:
        return 0
    statuses = iter(judge(domain, executor, [(i, g) for i in probed for g in i.base_answers]))
    for item in probed:
        mine = [next(statuses) for _ in item.base_answers]
        item.base_solve_rate = sum(s == "correct" for s in mine) / len(mine)
    return sum(len(g.token_ids) for item in probed for g in item.base_answers)


def learn(
    learner: LearnerProtocol,
    played: Sequence[PlayedTask],
    *,
    proposer_role: str,
    solver_role: str,
    frozen: Collection[str] = (),
    pool_across_adapters: bool = True,
) -> dict[str, StepStats]:
    """One REINFORCE++ update per adapter on its own rollouts (``frozen`` adapters, the
    hall-of-fame opponents, are not updated).

    Advantages are rewards whitened per (adapter, role, task type) group. With a few tasks per
    adapter such a group is too small for its own baseline, so :func:`whiten_pooled`'s rule
    applies: a group of fewer than :data:`~redqueen.engine.MIN_WHITEN_GROUP` samples uses the
    statistics of its (role, task type) group over the whole population's batch (Task-Relative
    REINFORCE++, as in Absolute Zero), and if that is small too, of its role. With
    ``pool_across_adapters=False`` (independent agents, as in self-play) pooling stays within
    the adapter: (adapter, role), then (adapter). Each played task records its advantages and
    which of them were pooled.

    Returns:
        Learner statistics per adapter id.
    """
    owners: list[str] = []
    gens: list[Generation] = []
    rewards: list[float] = []
    levels: list[tuple[Hashable, ...]] = []

    def add(owner: str, gen: Generation, reward: float, role: str, task_type: str) -> None:
        owners.append(owner)
        gens.append(gen)
        rewards.append(reward)
        if pool_across_adapters:
            levels.append(((owner, role, task_type), (role, task_type), (role,)))
        else:
            levels.append(((owner, role, task_type), (owner, role), (owner,)))

    for item in played:
        add(item.teacher, item.proposal_gen, item.teacher_reward, proposer_role, item.task_type)
        for gen, reward in zip(item.answers, item.student_rewards, strict=True):
            add(item.student, gen, reward, solver_role, item.task_type)
    if not gens:
        return {}
    advantages, used = whiten_pooled(rewards, levels)
    position = 0
    for item in played:
        size = 1 + len(item.answers)
        item.advantages = [float(a) for a in advantages[position : position + size]]
        item.pooled = [level > 0 for level in used[position : position + size]]
        position += size
    per_adapter: dict[str, list[Rollout]] = defaultdict(list)
    for owner, gen, adv in zip(owners, gens, advantages, strict=True):
        if gen.token_ids:
            per_adapter[owner].append(
                Rollout(
                    prompt_ids=tuple(gen.prompt_ids),
                    token_ids=tuple(gen.token_ids),
                    logprobs=tuple(gen.logprobs),
                    advantage=float(adv),
                )
            )
    return {
        adapter: learner.step(adapter, rollouts)
        for adapter, rollouts in per_adapter.items()
        if adapter not in frozen
    }
