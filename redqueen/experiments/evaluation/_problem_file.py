"""A suite read from a researcher's own JSON-lines file of code_o / code_i problems.

Each line is an object with ``program`` (source defining ``f``) and ``input`` (the argument list
as written inside ``f(...)``), and optionally ``task`` (``code_o``, the default, or ``code_i``),
``output`` (the ``repr`` of ``f(input)``; computed in the sandbox, and checked against it when
given), ``id`` and ``level``. ``redqueen eval RUN --problems FILE.jsonl`` measures every member and the base model
on it, so generalisation can be checked on programs written by hand rather than by the
corpus generator.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from redqueen.experiments.evaluation._suite import Problem

if TYPE_CHECKING:
    from redqueen.verifiers import CodeTask, ProgramRunner

__all__ = ["PROBLEM_TASK_TYPES", "ProblemFileSuite", "read_problem_file"]

#: Task types a problem file may hold (code_f needs several pairs and hidden ones).
PROBLEM_TASK_TYPES: tuple[str, ...] = ("code_o", "code_i")
_KEYS = {"program", "input", "output", "task", "id", "level"}


def read_problem_file(path: str | Path, executor: ProgramRunner) -> list[dict[str, object]]:
    """Rows of a problem file, each with its gold output as the sandbox computes it.

    Every program is validated like a teacher's proposal
    (:func:`~redqueen.verifiers.validate_programs`: static checks, two sandboxed runs that must
    agree), so a bad program is reported rather than scored, and a given ``output`` must equal
    (as a Python literal) what the program returns.

    Raises:
        ValueError: ``"FILE:LINE: ..."`` naming the first bad line and what is wrong with it.
        OSError: If the file cannot be read.
    """
    from redqueen.verifiers import validate_programs

    path = Path(path)
    rows: list[dict[str, object]] = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        bad_line = path.read_bytes()[: error.start].count(b"\n") + 1
        raise ValueError(f"{path}:{bad_line}: not UTF-8 text (byte {error.start})") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            rows.append(_read_row(line, f"{path}:{lineno}"))
            rows[-1]["line"] = lineno
    if not rows:
        raise ValueError(f"{path}: no problems")
    verdicts = validate_programs([(str(r["program"]), [str(r["input"])]) for r in rows], executor)
    for row, verdict in zip(rows, verdicts, strict=True):
        where = f"{path}:{row['line']}"
        if not verdict.ok:
            raise ValueError(
                f"{where}: program is not a valid task ({verdict.reason}: {verdict.detail})"
            )
        computed = verdict.outputs[0]
        if "output" in row and not _same_literal(str(row["output"]), computed):
            raise ValueError(
                f"{where}: field 'output' is {row['output']!r}, but the program returns {computed!r}"
            )
        row["output"] = computed
    return rows


def _read_row(line: str, where: str) -> dict[str, object]:
    """One line of a problem file, its fields checked (``task`` defaults to ``code_o``).

    Raises:
        ValueError: ``"FILE:LINE: ..."`` saying what is wrong with the line.
    """
    from redqueen.verifiers import LiteralParseError, parse_args, parse_literal

    try:
        row = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not JSON ({err.msg})") from None
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected an object with program and input")
    unknown = sorted(set(row) - _KEYS)
    if unknown:
        raise ValueError(
            f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})"
        )
    for key in ("program", "input"):
        if not isinstance(row.get(key), str):
            raise ValueError(f"{where}: field {key!r} must be a string")
    task = row.setdefault("task", "code_o")
    if task not in PROBLEM_TASK_TYPES:
        raise ValueError(f"{where}: field 'task' must be code_o or code_i, got {task!r}")
    try:
        parse_args(row["input"])
        if "output" in row:
            if not isinstance(row["output"], str):
                raise ValueError("field 'output' must be a string (a Python literal)")
            parse_literal(row["output"])
    except (LiteralParseError, ValueError) as err:
        raise ValueError(f"{where}: {err}") from None
    return row


def _same_literal(given: str, computed: str) -> bool:
    """Whether two ``repr`` strings denote the same value of the same type (``[1,2]`` and
    ``[1, 2]`` do; ``1`` and ``1.0``, or ``True`` and ``1``, do not), as answers are judged."""
    from redqueen.verifiers import parse_literal, values_equal

    if given.strip() == computed:
        return True
    try:
        return bool(values_equal(parse_literal(given), parse_literal(computed)))
    except Exception:  # a value the literal parser cannot rebuild: compare the text only
        return False


class ProblemFileSuite:
    """code_o / code_i problems from a file, judged like the environment's rewards.

    Prompts are :func:`redqueen.verifiers.formats.solve_prompt`; answers are parsed with
    ``parse_solution`` and judged with ``check_answers`` (a code_i answer is correct when the
    program maps it to the gold output).

    Args:
        rows: Problems as :func:`read_problem_file` returns them.
        name: Suite name, used in report file names (``eval_<name>.json``).
        max_new_tokens: Generation budget per answer.
        timeout: Seconds the sandbox allows one check.
    """

    preload: tuple[str, ...] = ()

    def __init__(
        self,
        rows: Sequence[Mapping[str, object]],
        *,
        name: str = "problems",
        max_new_tokens: int = 64,
        timeout: float = 2.0,
    ) -> None:
        from redqueen.verifiers.formats import SOLVE_STOP

        self.rows = list(rows)
        self.name = name
        self.max_new_tokens = max_new_tokens
        self.timeout = timeout
        self.stop: tuple[str, ...] = (SOLVE_STOP,)

    @classmethod
    def from_file(cls, path: str | Path, executor: ProgramRunner) -> ProblemFileSuite:
        """Read ``path`` (see :func:`read_problem_file`); the suite is named ``problems-<stem>``."""
        return cls(read_problem_file(path, executor), name=f"problems-{Path(path).stem}")

    @staticmethod
    def _task(row: Mapping[str, object]) -> CodeTask:
        from redqueen.verifiers import make_task

        return make_task(
            str(row["task"]), str(row["program"]), (str(row["input"]),), (str(row["output"]),)
        )

    def problems(self, limit: int | None = None) -> list[Problem]:
        """The first ``limit`` problems in file order."""
        from redqueen.verifiers.formats import solve_prompt

        rows = self.rows if limit is None else self.rows[:limit]
        return [
            Problem(
                id=str(row.get("id", f"{self.name}/{index}")),
                prompt=solve_prompt(self._task(row)),
                data=row,
            )
            for index, row in enumerate(rows)
        ]

    def completion(self, problem: Problem, generated: str) -> str:
        """The generated text up to the closing ``</answer>`` tag."""
        return generated.split(self.stop[0], 1)[0]

    def check(
        self, problems: Sequence[Problem], completions: Sequence[str], executor: ProgramRunner
    ) -> list[bool]:
        """Parse each answer for its task type and judge it in the sandbox."""
        return [status == "correct" for status, _ in self.judge(problems, completions, executor)]

    def judge(
        self, problems: Sequence[Problem], completions: Sequence[str], executor: ProgramRunner
    ) -> list[tuple[str, str | None]]:
        """Each answer's status (``correct``, ``wrong`` or ``unparseable``) and the answer as
        parsed (``None`` when unparseable), so a report can tell wrong from unparseable."""
        from redqueen.verifiers import check_answers
        from redqueen.verifiers.formats import parse_solution

        if len(problems) != len(completions):
            raise ValueError(
                f"{self.name}: {len(problems)} problems but {len(completions)} completions"
            )
        answers = [
            parse_solution(p.data["task"], text)
            for p, text in zip(problems, completions, strict=True)
        ]
        items = [(self._task(p.data), answer) for p, answer in zip(problems, answers, strict=True)]
        statuses = check_answers(items, executor)
        return [(str(status), answer) for status, answer in zip(statuses, answers, strict=True)]

    @staticmethod
    def groups(problem: Problem) -> dict[str, str]:
        """What a report breaks scores down by: the problem's ``level`` (``-`` when the file
        gives none) and ``task`` type."""
        level = problem.data.get("level")
        return {"level": "-" if level is None else str(level), "task": str(problem.data["task"])}
