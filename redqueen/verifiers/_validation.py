"""The verdict on a proposed program: :class:`Validation`, its :class:`RejectReason`, the limits."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "MAX_INPUT_CHARS",
    "MAX_OUTPUT_CHARS",
    "MAX_SOURCE_CHARS",
    "RejectReason",
    "Validation",
    "reject",
]

#: Default limits; see :func:`validate_program`.
MAX_SOURCE_CHARS = 4000
MAX_OUTPUT_CHARS = 2000
MAX_INPUT_CHARS = 1000


class RejectReason(str, Enum):
    """Why a program (or one of its inputs) was rejected; stable codes for logs and metrics."""

    EMPTY = "empty"
    SOURCE_TOO_LARGE = "source_too_large"
    SYNTAX_ERROR = "syntax_error"
    NO_ENTRY_FUNCTION = "no_entry_function"
    BANNED_IMPORT = "banned_import"
    BANNED_CALL = "banned_call"
    DUNDER_ACCESS = "dunder_access"
    NOT_LISTED = "not_listed"
    NO_INPUTS = "no_inputs"
    INPUT_NOT_LITERAL = "input_not_literal"
    INPUT_TOO_LARGE = "input_too_large"
    DUPLICATE_INPUT = "duplicate_input"
    TIMEOUT = "timeout"
    RUNTIME_ERROR = "runtime_error"
    NONDETERMINISTIC = "nondeterministic"
    OUTPUT_NOT_LITERAL = "output_not_literal"
    OUTPUT_TOO_LARGE = "output_too_large"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Validation:
    """The verdict on a program and its inputs.

    Attributes:
        ok: Whether the program is a valid task.
        reason: Why not (None when ``ok``).
        detail: A human-readable explanation (empty when ``ok``).
        outputs: The gold outputs (``repr`` strings), one per input, when ``ok``; else empty.
    """

    ok: bool
    reason: RejectReason | None = None
    detail: str = ""
    outputs: tuple[str, ...] = ()


def reject(reason: RejectReason, detail: str) -> Validation:
    """A failed :class:`Validation` with its reason and explanation."""
    return Validation(ok=False, reason=reason, detail=detail, outputs=())
