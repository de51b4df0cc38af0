"""Code task types (code_o, code_i, code_f) and answer checking."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from ._literals import LiteralParseError, parse_args, parse_literal, values_equal
from ._static import check_source
from ._validation import RejectReason

if TYPE_CHECKING:
    from ._executor import ExecResult
    from ._validate import ProgramRunner

__all__ = [
    "TASK_TYPES",
    "AnswerStatus",
    "CodeTask",
    "Triplet",
    "check_answer",
    "check_answers",
    "make_task",
]

#: The three task types built from one (program, input, output) triplet, as in Absolute Zero.
TASK_TYPES: tuple[str, ...] = ("code_o", "code_i", "code_f")


@dataclass(frozen=True)
class Triplet:
    """One verified example: ``f(<input>)`` evaluates to ``output`` under ``program``.

    Attributes:
        program: Program text defining ``f``.
        input: Argument source as written inside ``f(...)``, e.g. ``"[3, 1], 'ab'"``.
        output: ``repr`` of the result.
    """

    program: str
    input: str
    output: str


class AnswerStatus(str, Enum):
    """How a student's answer was judged (drives the student reward)."""

    CORRECT = "correct"
    WRONG = "wrong"
    UNPARSEABLE = "unparseable"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class CodeTask:
    """A task posed to a student.

    * ``code_o``: given the program and the input, predict the output (one pair).
    * ``code_i``: given the program and the output, find an input producing it (one pair);
      any input that does is correct.
    * ``code_f``: given the first ``n_visible`` input/output pairs, write ``f``; judged on the
      hidden rest only.

    Args:
        task_type: One of :data:`TASK_TYPES`.
        program: The (validated) program text.
        inputs: Argument sources, one per pair.
        outputs: Gold output ``repr`` strings (from execution, never from a model).
        n_visible: How many pairs the student sees (code_f; 0 for the others).

    Raises:
        ValueError: On an unknown task type or inconsistent pairs.
    """

    task_type: str
    program: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    n_visible: int = 0

    def __post_init__(self) -> None:
        if self.task_type not in TASK_TYPES:
            raise ValueError(
                f"CodeTask.task_type: unknown {self.task_type!r}; expected one of {TASK_TYPES}"
            )
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        if not isinstance(self.program, str):
            raise TypeError(
                f"CodeTask.program: must be source text, got {type(self.program).__name__}"
            )
        for field in ("inputs", "outputs"):
            for i, text in enumerate(getattr(self, field)):
                if not isinstance(text, str):
                    raise TypeError(
                        f"CodeTask.{field}[{i}]: must be a string, got {type(text).__name__}"
                    )
        for i, text in enumerate(self.outputs):
            try:
                parse_literal(text)
            except LiteralParseError:
                raise ValueError(
                    f"CodeTask.outputs[{i}]: {text[:60]!r} is not a literal (gold outputs are "
                    "what validate_program returns)"
                ) from None
        if not self.inputs or len(self.inputs) != len(self.outputs):
            raise ValueError(
                f"CodeTask.inputs/outputs: need equal, non-zero lengths, got {len(self.inputs)} and {len(self.outputs)}"
            )
        if self.task_type == "code_f":
            if not 1 <= self.n_visible < len(self.inputs):
                raise ValueError(
                    f"CodeTask.n_visible: code_f needs 1 <= n_visible < {len(self.inputs)} (some pairs hidden), got {self.n_visible}"
                )
        else:
            if len(self.inputs) != 1:
                raise ValueError(
                    f"CodeTask.inputs: {self.task_type} takes exactly one pair, got {len(self.inputs)}"
                )
            if self.n_visible != 0:
                raise ValueError(
                    f"CodeTask.n_visible: must be 0 for {self.task_type}, got {self.n_visible}"
                )

    @property
    def triplet(self) -> Triplet:
        """The first (program, input, output) triplet, e.g. for the reference buffer."""
        return Triplet(self.program, self.inputs[0], self.outputs[0])

    @property
    def visible_pairs(self) -> tuple[tuple[str, str], ...]:
        """The (input, output) pairs shown to the student (code_f)."""
        return tuple(
            zip(self.inputs[: self.n_visible], self.outputs[: self.n_visible], strict=True)
        )

    @property
    def hidden_pairs(self) -> tuple[tuple[str, str], ...]:
        """The (input, output) pairs a code_f answer is judged on (all pairs for other types)."""
        return tuple(
            zip(self.inputs[self.n_visible :], self.outputs[self.n_visible :], strict=True)
        )


def make_task(
    task_type: str,
    program: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    *,
    n_visible: int | None = None,
) -> CodeTask:
    """Build a :class:`CodeTask`; for code_f, half the pairs (rounded down, at least 1) are shown.

    Args:
        task_type: One of :data:`TASK_TYPES`.
        program: The validated program.
        inputs: Argument sources (one for code_o/code_i).
        outputs: Gold outputs from :func:`validate_program`.
        n_visible: Pairs shown for code_f (default ``max(1, len(inputs) // 2)``).

    Raises:
        ValueError: As for :class:`CodeTask`.
    """
    if isinstance(inputs, str) or isinstance(outputs, str):
        raise TypeError("make_task: inputs and outputs must be sequences of strings, not a str")
    if n_visible is None:
        n_visible = max(1, len(inputs) // 2) if task_type == "code_f" else 0
    return CodeTask(task_type, program, tuple(inputs), tuple(outputs), n_visible)


def check_answer(task: CodeTask, answer: str | None, executor: ProgramRunner) -> AnswerStatus:
    """Judge one student answer (see :func:`check_answers`)."""
    return check_answers([(task, answer)], executor)[0]


def check_answers(
    items: Sequence[tuple[CodeTask, str | None]], executor: ProgramRunner
) -> list[AnswerStatus]:
    """Judge many ``(task, answer)`` pairs, with all sandbox runs in one parallel batch.

    * ``code_o``: the answer must be a literal; correct if its value equals the gold output.
    * ``code_i``: the answer must be a literal argument list; ``f(answer)`` runs in the sandbox
      and is correct if its value equals the gold output (any such input is right).
    * ``code_f``: the answer must be a program defining ``f`` (else unparseable); one that uses
      banned constructs is wrong; it is correct if it reproduces every hidden pair.

    ``None`` (the parser found no answer) is unparseable. Model text is never evaluated in this
    process: literals go through ``ast.literal_eval`` and programs run only in the sandbox.

    Args:
        items: ``(task, answer)`` pairs.
        executor: The sandbox.

    Returns:
        One :class:`AnswerStatus` per item, in order.
    """
    statuses: list[AnswerStatus | None] = [None] * len(items)
    jobs: list[tuple[str, str]] = []
    plans: list[tuple[int, int, int, tuple[str, ...]]] = []  # (item, first job, n jobs, gold)
    for k, (task, answer) in enumerate(items):
        if not isinstance(task, CodeTask):
            raise TypeError(f"check_answers: item {k} has no CodeTask (got {type(task).__name__})")
        if not isinstance(answer, str):
            statuses[k] = AnswerStatus.UNPARSEABLE
        elif task.task_type == "code_o":
            statuses[k] = _judge_output(answer, task.outputs[0])
        elif task.task_type == "code_i":
            try:
                parse_args(answer)
            except LiteralParseError:
                statuses[k] = AnswerStatus.UNPARSEABLE
                continue
            plans.append((k, len(jobs), 1, (task.outputs[0],)))
            jobs.append((task.program, f"f({answer.strip()}\n)"))
        else:
            static = check_source(answer)
            if not static.ok:
                unparseable = static.reason in (
                    RejectReason.EMPTY,
                    RejectReason.SYNTAX_ERROR,
                    RejectReason.NO_ENTRY_FUNCTION,
                )
                statuses[k] = AnswerStatus.UNPARSEABLE if unparseable else AnswerStatus.WRONG
                continue
            hidden = task.hidden_pairs
            plans.append((k, len(jobs), len(hidden), tuple(out for _, out in hidden)))
            jobs.extend((answer, f"f({inp}\n)") for inp, _ in hidden)
    results = executor.execute_many(jobs) if jobs else []
    for k, start, n, gold in plans:
        runs = results[start : start + n]
        statuses[k] = (
            AnswerStatus.CORRECT
            if all(_matches(run, out) for run, out in zip(runs, gold, strict=True))
            else AnswerStatus.WRONG
        )
    return statuses  # type: ignore[return-value]


def _judge_output(answer: str, gold: str) -> AnswerStatus:
    try:
        value = parse_literal(answer)
    except LiteralParseError:
        return AnswerStatus.UNPARSEABLE
    return AnswerStatus.CORRECT if values_equal(value, parse_literal(gold)) else AnswerStatus.WRONG


def _matches(run: ExecResult, gold: str) -> bool:
    if not run.ok or run.value is None:
        return False
    try:
        return values_equal(parse_literal(run.value), parse_literal(gold))
    except LiteralParseError:
        return False
