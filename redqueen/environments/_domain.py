"""Task domains: what the game is played on, as a plug-in.

The co-evolution and self-play environments run one game: proposers write tasks, the domain
decides which are valid and what their gold answers are, solvers answer, the domain checks the
answers. Everything that depends on *what* a task is (its prompts, its parsing, its validity,
its answers, its measures) sits behind the :class:`TaskDomain` protocol; the environments
never look inside a proposal, a task or an answer, they only hand them back to the domain.

A domain is a class registered in :data:`DOMAINS` by decorator; its own settings are a pydantic
model (``settings_model``), filled from the configuration's ``environment.domain_params`` and
checked when the configuration is loaded::

    @DOMAINS.register("arithmetic")
    class ArithmeticDomain:
        settings_model = ArithmeticSettings
        task_types = ("arith_value",)
        ...

``examples/arithmetic_domain.py`` is a complete domain in one file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from redqueen._registry import Registry

if TYPE_CHECKING:
    from redqueen.environments._round import PlayedTask
    from redqueen.verifiers import ProgramRunner

__all__ = [
    "ANSWER_STATUSES",
    "DOMAINS",
    "HeldOutDomain",
    "Rejected",
    "TaskDomain",
    "TaskMeasures",
    "difficulty_bin",
    "domain_name",
    "load_domain_state",
    "make_domain",
    "save_domain_state",
    "summary_column",
]

ProposalT = TypeVar("ProposalT")
TaskT = TypeVar("TaskT")
ExampleT = TypeVar("ExampleT")

#: What :meth:`TaskDomain.check` may say of an answer (the student reward maps each to a value).
ANSWER_STATUSES: tuple[str, ...] = ("correct", "wrong", "unparseable")


@dataclass(frozen=True)
class Rejected:
    """A proposal that is not a valid task, and why (the ``reason`` column of ``tasks.jsonl``)."""

    reason: str


@dataclass(frozen=True)
class TaskMeasures:
    """How big or hard a valid task is, in the domain's own terms.

    Attributes:
        complexity: One number (``complexity`` in ``tasks.jsonl``, ``complexity/<type>`` in the
            metrics, and the teachers' ``complexity`` statistic).
        measures: Named measures; those in the domain's ``measure_keys`` become columns of
            ``tasks.jsonl``, those in its ``summary_keys`` step means in ``metrics.jsonl``.
    """

    complexity: float
    measures: Mapping[str, float] = field(default_factory=dict)


@runtime_checkable
class TaskDomain(Protocol[ProposalT, TaskT, ExampleT]):
    """What a domain says so that adapters can propose, pose, answer and be judged on its tasks.

    A domain works with three kinds of value of its own choosing: a *proposal* (a proposer's
    text, parsed), a *task* (a valid proposal with its gold answer, computed by the domain and
    never taken from a model) and an *example* (what a valid task leaves in the task buffer, to
    condition later proposals). Examples are checkpointed: they must be frozen dataclasses
    whose fields are plain data (strings, numbers, tuples of them). Answers are strings.

    A domain class is constructed as ``cls(settings=settings_model(**params))``; construction
    must be cheap and start nothing, as loading a configuration reads the class. Work that
    needs sandboxed execution gets the environment's sandbox (a
    :class:`redqueen.verifiers.Executor`, or the Ray workers' equivalent) as an argument.

    Attributes:
        settings_model: The pydantic model of the domain's settings
            (``environment.domain_params``); unknown keys should be errors.
        task_types: The kinds of task the domain poses (``environment.task_types`` picks
            among them; by default all are proposed, cycled over each proposer's batch).
        propose_stop: Strings that end a proposal.
        solve_stop: Strings that end an answer.
        measure_keys: Measures written as columns of every row of ``tasks.jsonl``.
        summary_keys: Measures whose mean over valid tasks is logged each step, in
            ``metrics.jsonl`` as ``domain/<name>/<key>`` (:func:`summary_column`), so that they
            never collide with the run's own columns or another domain's.

    Optional state: a domain that keeps state between steps (a curriculum, a counter) defines
    ``state_dict() -> dict`` and ``load_state_dict(state) -> None``; the environment saves it in
    every checkpoint (under ``domain``) and hands it back on resume
    (:func:`save_domain_state`, :func:`load_domain_state`). The state must be plain data
    (strings, numbers, lists, dicts, tuples, tensors), as the checkpoint encodes it. A domain
    without the pair keeps no state across a resume.
    """

    settings_model: ClassVar[type[BaseModel]]
    task_types: tuple[str, ...]
    propose_stop: tuple[str, ...]
    solve_stop: tuple[str, ...]
    measure_keys: tuple[str, ...]
    summary_keys: tuple[str, ...]

    def seed_examples(self) -> Sequence[ExampleT]:
        """Examples the task buffer starts with (before any task is valid)."""
        ...

    def propose_prompt(self, task_type: str, references: Sequence[ExampleT]) -> str:
        """The proposer's prompt for a task of ``task_type``, conditioned on reference examples."""
        ...

    def parse_proposal(self, task_type: str, text: str) -> ProposalT | None:
        """A proposer's generated text as a proposal, or ``None`` if it cannot be read."""
        ...

    def task_text(self, proposal: ProposalT) -> str:
        """The proposal as text for ``tasks.jsonl`` (its ``program`` column)."""
        ...

    def signature(self, proposal: ProposalT) -> str:
        """A short name of the proposal up to irrelevant differences (task identity, coverage)."""
        ...

    def validate(
        self, task_type: str, proposals: Sequence[ProposalT], sandbox: ProgramRunner
    ) -> list[TaskT | Rejected]:
        """Each proposal as a valid task with its gold answer, or why it is not one."""
        ...

    def reference(self, task: TaskT) -> ExampleT:
        """What a valid task adds to its proposer's task buffer."""
        ...

    def solve_prompt(self, task: TaskT) -> str:
        """The solver's prompt for a valid task."""
        ...

    def parse_answer(self, task_type: str, text: str) -> str | None:
        """A solver's generated text as an answer, or ``None`` (judged ``"unparseable"``)."""
        ...

    def check(self, answers: Sequence[tuple[TaskT, str]], sandbox: ProgramRunner) -> list[str]:
        """Judge a batch of parsed answers: one of :data:`ANSWER_STATUSES` each, in order."""
        ...

    def measure(self, task: TaskT) -> TaskMeasures:
        """Complexity and named measures of a valid task."""
        ...

    def behaviour_cell(self, played: PlayedTask) -> str | None:
        """The coverage cell of a played valid task (its ``task``, ``task_type``, ``measures``
        and ``base_solve_rate`` are set); distinct cells count as distinct kinds of task."""
        ...


#: Task domains by name (``"code"``, and those plug-ins register).
DOMAINS: Registry[type[TaskDomain[Any, Any, Any]]] = Registry(
    "domain", params_attr="settings_model", callables=True
)


def difficulty_bin(base_solve_rate: float | None) -> str:
    """The difficulty part of a behaviour cell: ``0`` (the base model never solved the task),
    ``1`` (always), ``m`` (in between) or ``x`` (the probe is off)."""
    if base_solve_rate is None:
        return "x"
    return "0" if base_solve_rate == 0 else "1" if base_solve_rate == 1 else "m"


def domain_name(domain: object) -> str:
    """The name a domain's class is registered under in :data:`DOMAINS` (its class name when it
    is not registered)."""
    cls = type(domain)
    return next((name for name in DOMAINS if DOMAINS[name] is cls), cls.__name__)


def summary_column(domain: str, key: str) -> str:
    """The ``metrics.jsonl`` column of a domain's summary measure: ``domain/<name>/<key>``
    (``domain/code/ast_nodes``, ``domain/arithmetic/operators``)."""
    return f"domain/{domain}/{key}"


def save_domain_state(domain: object) -> dict[str, object] | None:
    """The domain's ``state_dict()``, or ``None`` for a domain that keeps no state.

    Raises:
        TypeError: If ``state_dict`` returns something other than a dict.
    """
    hook = getattr(domain, "state_dict", None)
    if not callable(hook):
        return None
    state = hook()
    if not isinstance(state, dict):
        raise TypeError(f"domain {domain_name(domain)!r}: state_dict() returned {type(state).__name__}, not a dict")
    return state


def load_domain_state(domain: object, state: Mapping[str, object]) -> None:
    """Hand a checkpoint's domain state back to the domain's ``load_state_dict``.

    Raises:
        ValueError: If the checkpoint holds domain state but the domain cannot load it (the
            domain changed since the checkpoint was written).
    """
    hook = getattr(domain, "load_state_dict", None)
    if not callable(hook):
        raise ValueError(
            f"the checkpoint holds state of domain {domain_name(domain)!r}, which has no load_state_dict()"
        )
    hook(dict(state))


def domain_settings(name: str, params: Mapping[str, Any]) -> BaseModel:
    """The registered domain ``name``'s settings model filled from ``params``.

    Raises:
        redqueen._registry.UnknownNameError: If no domain is registered under ``name``.
        pydantic.ValidationError: If a parameter is unknown or out of range.
    """
    return DOMAINS[name].settings_model.model_validate(dict(params))


def make_domain(
    name: str = "code", params: Mapping[str, Any] | None = None
) -> TaskDomain[Any, Any, Any]:
    """Construct the registered domain ``name`` with its settings filled from ``params``.

    Raises:
        redqueen._registry.UnknownNameError: If no domain is registered under ``name``.
        pydantic.ValidationError: If a parameter is unknown or out of range.
    """
    return DOMAINS[name](settings=domain_settings(name, params or {}))  # type: ignore[call-arg]


@runtime_checkable
class HeldOutDomain(Protocol):
    """A domain with a fixed held-out task set, never proposed or trained on, on which solvers
    and the frozen base model can be compared (``environment.heldout_every``)."""

    def heldout_tasks(self, n: int) -> Sequence[tuple[str, object]]:
        """The first ``n`` ``(task type, task)`` pairs of the held-out set, the same every call."""
        ...
