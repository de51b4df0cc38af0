"""redqueen.verifiers: the sandboxed, deterministic Python executor and the code task types.

Execution:
    :class:`Executor`: fork-server sandbox running untrusted programs in parallel
        (``execute``, ``execute_many``; ``run_tests`` runs trusted tests against a program in
        another process through :class:`CandidateTest`); :class:`ExecResult`;
        :class:`ExecutorClosedError`.
        What a verdict guarantees, and what it does not: ``docs/verifier.md``.

Tasks:
    :data:`TASK_TYPES` (``code_o``, ``code_i``, ``code_f``); :class:`Triplet`; :class:`CodeTask`;
    :func:`make_task`; :func:`check_answer` / :func:`check_answers` -> :class:`AnswerStatus`.

Validity:
    :func:`validate_program` (and the batched :func:`validate_programs`) -> :class:`Validation`
    with a :class:`RejectReason`;
    :func:`check_source` (static checks only, an allow-list: :data:`ALLOWED_MODULES`,
    :data:`ALLOWED_BUILTINS`, :data:`ALLOWED_ATTRIBUTES`);
    the default size limits :data:`MAX_SOURCE_CHARS`, :data:`MAX_INPUT_CHARS`,
    :data:`MAX_OUTPUT_CHARS`.

Literals and metrics:
    :func:`literal_equal`, :func:`values_equal`, :func:`parse_literal`, :func:`parse_args`,
    :func:`format_args`, :class:`LiteralParseError`; :func:`complexity` (radon + AST).

Prompt formats live in :mod:`redqueen.verifiers.formats`.
"""

from __future__ import annotations

from ._allowlist import ALLOWED_ATTRIBUTES, ALLOWED_BUILTINS, ALLOWED_MODULES
from ._complexity import COMPLEXITY_KEYS, complexity
from ._executor import CandidateTest, ExecResult, Executor, ExecutorClosedError
from ._literals import (
    LiteralParseError,
    format_args,
    literal_equal,
    parse_args,
    parse_literal,
    values_equal,
)
from ._static import check_source
from ._tasks import (
    TASK_TYPES,
    AnswerStatus,
    CodeTask,
    Triplet,
    check_answer,
    check_answers,
    make_task,
)
from ._validate import ProgramRunner, Sandbox, validate_program, validate_programs
from ._validation import (
    MAX_INPUT_CHARS,
    MAX_OUTPUT_CHARS,
    MAX_SOURCE_CHARS,
    RejectReason,
    Validation,
)

__all__ = [
    "ALLOWED_ATTRIBUTES",
    "ALLOWED_BUILTINS",
    "ALLOWED_MODULES",
    "COMPLEXITY_KEYS",
    "MAX_INPUT_CHARS",
    "MAX_OUTPUT_CHARS",
    "MAX_SOURCE_CHARS",
    "TASK_TYPES",
    "AnswerStatus",
    "CandidateTest",
    "CodeTask",
    "ExecResult",
    "Executor",
    "ExecutorClosedError",
    "LiteralParseError",
    "RejectReason",
    "Triplet",
    "Validation",
    "check_answer",
    "check_answers",
    "check_source",
    "complexity",
    "format_args",
    "literal_equal",
    "make_task",
    "parse_args",
    "parse_literal",
    "validate_program",
    "validate_programs",
    "ProgramRunner",
    "Sandbox",
    "values_equal",
]
