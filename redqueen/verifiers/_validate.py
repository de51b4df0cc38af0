"""Validity of proposed programs with their inputs: :func:`validate_program`."""

from __future__ import annotations

import io
import os
import tokenize
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from ._literals import LiteralParseError, format_args, parse_args, parse_literal, values_equal
from ._static import check_source
from ._validation import (
    MAX_INPUT_CHARS,
    MAX_OUTPUT_CHARS,
    MAX_SOURCE_CHARS,
    RejectReason,
    Validation,
    reject,
)

if TYPE_CHECKING:
    from ._executor import ExecResult

__all__ = ["ProgramRunner", "validate_program", "validate_programs"]

#: Stands for a round trip that gave no value.
_NO_VALUE = object()


class ProgramRunner(Protocol):
    """What validation needs of a sandbox: :meth:`Executor.execute_many`'s signature.

    :class:`~redqueen.verifiers.Executor` is the one for programs a model wrote;
    ``redqueen.tinycoder.gold.GoldPool`` runs the generator's own programs faster.
    """

    def execute_many(
        self, pairs: Iterable[tuple[str, str]], *, heap_jitter: Sequence[int] | None = None
    ) -> list[ExecResult]:
        """Run ``(source, expr)`` pairs; one result per pair, in order."""
        ...


class Sandbox(ProgramRunner, Protocol):
    """A sandbox an environment owns: it runs programs and is shut down with the environment
    (:class:`~redqueen.verifiers.Executor`, or the Ray workers' pool)."""

    def close(self) -> None:
        """Stop the sandbox's processes (safe to call twice)."""
        ...


def validate_program(
    program: str,
    inputs: Sequence[str],
    executor: ProgramRunner,
    *,
    max_source_chars: int = MAX_SOURCE_CHARS,
    max_output_chars: int = MAX_OUTPUT_CHARS,
    max_input_chars: int = MAX_INPUT_CHARS,
) -> Validation:
    """Decide whether ``program`` with ``inputs`` is a valid task, and compute its gold outputs.

    Checks, in order: static checks (:func:`check_source`); every input is a literal argument
    list of bounded size, and no two are equal; every input runs without error in the sandbox
    **twice, in separate processes with different heap layouts**, with equal results (so
    programs depending on ``id()``, object hashes or set order over objects are rejected); each
    output round-trips through ``ast.literal_eval`` to an equal value and is not too long.

    Args:
        program: Program text defining ``f`` (helpers and classes allowed).
        inputs: Argument sources as written inside ``f(...)``, e.g. ``"[3, 1], 'ab'"``.
        executor: The sandbox that runs the program.
        max_source_chars: Longest accepted program.
        max_output_chars: Longest accepted output ``repr``.
        max_input_chars: Longest accepted input.

    Returns:
        A :class:`Validation`; when ``ok``, ``outputs[i]`` is the gold output for ``inputs[i]``.

    Raises:
        TypeError: If ``inputs`` is a single string instead of a sequence of them.
    """
    return validate_programs(
        [(program, inputs)],
        executor,
        max_source_chars=max_source_chars,
        max_output_chars=max_output_chars,
        max_input_chars=max_input_chars,
    )[0]


def validate_programs(
    items: Sequence[tuple[str, Sequence[str]]],
    executor: ProgramRunner,
    *,
    max_source_chars: int = MAX_SOURCE_CHARS,
    max_output_chars: int = MAX_OUTPUT_CHARS,
    max_input_chars: int = MAX_INPUT_CHARS,
) -> list[Validation]:
    """:func:`validate_program` for many ``(program, inputs)`` proposals, all runs in one batch.

    A step's proposals then keep every worker busy instead of validating one at a time.

    Raises:
        TypeError: If some ``inputs`` is a single string instead of a sequence of them.
    """
    verdicts: list[Validation | None] = []
    pairs: list[tuple[str, str]] = []
    spans: list[tuple[int, int]] = []  # (verdict index, first pair) per program that runs
    for program, inputs in items:
        prepared = _prepare(program, inputs, max_source_chars, max_input_chars)
        if isinstance(prepared, Validation):
            verdicts.append(prepared)
            continue
        spans.append((len(verdicts), len(pairs)))
        verdicts.append(None)
        # Each input runs as written, as check_answers runs it: a literal's canonical form is
        # not always the same value (``-1j`` is complex(-0.0, -1.0); its repr reads back as
        # complex(0.0, -1.0)), so a gold computed on it could belong to another input.
        pairs.extend((program, f"f({args}\n)") for args in prepared)
    if pairs:
        # Two runs per input. The Executor runs them on two fork servers whose small-object free
        # lists were scrambled apart; runners that take heap jitters get ones of opposite parity.
        base = int.from_bytes(os.urandom(1), "little") & 0x0E
        jitter = [base] * len(pairs) + [base + 5] * len(pairs)
        results = executor.execute_many(pairs + pairs, heap_jitter=jitter)
        ends = [start for _, start in spans[1:]] + [len(pairs)]
        for (k, start), end in zip(spans, ends, strict=True):
            first = results[start:end]
            second = results[len(pairs) + start : len(pairs) + end]
            verdicts[k] = _judge(first, second, max_output_chars)
    return verdicts  # type: ignore[return-value]


def _prepare(
    program: str, inputs: Sequence[str], max_source_chars: int, max_input_chars: int
) -> Validation | list[str]:
    """Static checks; the inputs' argument sources as they will run, or the rejection (two
    inputs are duplicates when their canonical forms are equal)."""
    if isinstance(inputs, str):
        raise TypeError(
            "validate_program: inputs must be a sequence of argument strings, not a str"
        )
    static = check_source(program, max_source_chars=max_source_chars)
    if not static.ok:
        return static
    inputs = list(inputs)
    if not inputs:
        return reject(RejectReason.NO_INPUTS, "no inputs given")
    canonical: list[str] = []
    for i, text in enumerate(inputs):
        if not isinstance(text, str):
            return reject(
                RejectReason.INPUT_NOT_LITERAL,
                f"input {i} is a {type(text).__name__}, not argument source",
            )
        if len(text) > max_input_chars:
            return reject(
                RejectReason.INPUT_TOO_LARGE,
                f"input {i} has {len(text)} characters (limit {max_input_chars})",
            )
        try:
            args, kwargs = parse_args(text)
        except LiteralParseError as exc:
            return reject(RejectReason.INPUT_NOT_LITERAL, f"input {i}: {exc}")
        canonical.append(format_args(args, kwargs))
    if len(set(canonical)) != len(canonical):
        return reject(RejectReason.DUPLICATE_INPUT, "two inputs are equal")
    return [text.strip() for text in inputs]


def _judge(
    first: Sequence[ExecResult], second: Sequence[ExecResult], max_output_chars: int
) -> Validation:
    """The verdict from two runs of every input."""
    outputs: list[str] = []
    for i, (a, b) in enumerate(zip(first, second, strict=True)):
        if a.timed_out or b.timed_out:
            return reject(RejectReason.TIMEOUT, f"input {i}: timed out")
        if not a.ok or not b.ok:
            if a.ok != b.ok:
                return reject(
                    RejectReason.NONDETERMINISTIC, f"input {i}: failed in only one of two runs"
                )
            if (a.error or "").startswith("value repr longer"):
                return reject(RejectReason.OUTPUT_TOO_LARGE, f"input {i}: {a.error}")
            return reject(RejectReason.RUNTIME_ERROR, f"input {i}: {a.error}")
        if not isinstance(a.value, str) or not isinstance(b.value, str):
            return reject(RejectReason.RUNTIME_ERROR, f"input {i}: malformed result (no value)")
        if len(a.value) > max_output_chars:
            return reject(
                RejectReason.OUTPUT_TOO_LARGE,
                f"input {i}: output has {len(a.value)} characters (limit {max_output_chars})",
            )
        try:
            value = parse_literal(a.value)
        except LiteralParseError:
            return reject(
                RejectReason.OUTPUT_NOT_LITERAL,
                f"input {i}: output {a.value[:80]!r} is not a literal",
            )
        try:
            round_trip = parse_literal(repr(value))
        except (LiteralParseError, ValueError):
            round_trip = _NO_VALUE
        if round_trip is _NO_VALUE or not values_equal(round_trip, value):
            return reject(RejectReason.OUTPUT_NOT_LITERAL, f"input {i}: output does not round-trip")
        if not _written_as_a_repr(a.value):
            return reject(
                RejectReason.OUTPUT_NOT_LITERAL,
                f"input {i}: output text holds a comment or a character a repr escapes",
            )
        if a.value != b.value or a.stdout != b.stdout:
            return reject(
                RejectReason.NONDETERMINISTIC, f"input {i}: two runs gave different results"
            )
        outputs.append(a.value)
    return Validation(ok=True, outputs=tuple(outputs))


def _written_as_a_repr(text: str) -> bool:
    """Whether ``text`` could be a builtin literal's ``repr``: printable, with no comment.

    A builtin value's ``repr`` escapes every unprintable character inside its strings and
    holds no ``#`` outside them. A program-defined ``__repr__`` may write a literal with a
    comment or a line break in it; such text parses, but as a gold output it would carry the
    program's words into prompts, so it is refused.
    """
    if not text.isprintable():
        return False
    if "#" not in text:
        return True
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    return all(token.type != tokenize.COMMENT for token in tokens)
