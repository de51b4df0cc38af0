"""Calls from a trusted test process into an untrusted candidate's process, as data only.

HumanEval-style tests compare a function's results with expected values. Run in the function's
own process, those comparisons are only as honest as the interpreter the function controls (it
can return objects with a rigged ``__eq__``, swap ``check`` for a no-op, or walk frames to the
expected values). So the test code runs in a process of its own, where :class:`Candidate`
stands in for the function: each call's arguments travel as a literal argument list, the
candidate's process (:func:`serve_calls`) answers with the ``repr`` of the result or the error,
and the test's process parses that with ``ast.literal_eval`` only. Whatever the candidate
does, the test sees plain values (numbers, strings, tuples, lists, dicts, sets, None).

A message is ``kind (1 byte) + big-endian u32 length + UTF-8 text``; kinds are ``C`` (a call),
``V`` (a value) and ``E`` (an error, ``"Type: message"``).

Standard library only; imported by the fork server as a sibling module.
"""

from __future__ import annotations

import builtins
import os
import struct
from typing import Any

if __package__:
    from ._library_guards import main_namespace
    from ._literals import LiteralParseError, format_args, parse_args, parse_literal
else:  # imported by the fork-server script as a sibling module
    from _library_guards import main_namespace
    from _literals import LiteralParseError, format_args, parse_args, parse_literal

__all__ = ["Candidate", "CandidateError", "serve_calls"]

_HEADER = struct.Struct(">cI")
_MAX_CALL_CHARS = 1_000_000


class CandidateError(Exception):
    """The candidate raised an exception that is not a built-in one (its text is the message)."""


def _send(fd: int, kind: bytes, text: str) -> None:
    body = text.encode("utf-8", "surrogatepass")
    data = _HEADER.pack(kind, len(body)) + body
    while data:
        data = data[os.write(fd, data) :]


def _read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("the other process closed the channel")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _receive(fd: int, limit: int) -> tuple[bytes, str]:
    kind, size = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    if size > 4 * limit:
        raise ValueError(f"message of {size} bytes exceeds the limit")
    return kind, _read_exact(fd, size).decode("utf-8", "surrogatepass")


#: Built-in exceptions that end an iteration instead of failing it: raised by the candidate
#: inside a test's ``map``/``filter``/``all`` they would stop the test's loop early and let it
#: pass, so they cross as :class:`CandidateError`.
_ITERATION_ENDS = (StopIteration, StopAsyncIteration)


def _error(text: str) -> Exception:
    """The exception a candidate's error text stands for (built-in types keep their type, except
    those that end an iteration, which become :class:`CandidateError`)."""
    name, _, message = text.partition(": ")
    kind = getattr(builtins, name, None)
    if (
        isinstance(kind, type)
        and issubclass(kind, Exception)
        and not issubclass(kind, _ITERATION_ENDS)
    ):
        try:
            return kind(message)
        except Exception:
            pass
    return CandidateError(text)


class Candidate:
    """Stands in, in the test's process, for the candidate function in another process.

    Calling it sends the arguments (which must be literals) and returns the candidate's result
    parsed as a literal; an error in the candidate is raised here with its built-in type, or
    as :class:`CandidateError`.

    Args:
        calls: Descriptor the calls are written to.
        replies: Descriptor the results are read from.
        max_chars: Longest accepted result ``repr``.
    """

    def __init__(self, calls: int, replies: int, max_chars: int) -> None:
        self.calls = calls
        self.replies = replies
        self.max_chars = max_chars

    def __call__(self, *args: object, **kwargs: object) -> object:
        text = format_args(args, kwargs)
        try:
            parse_args(text)
        except LiteralParseError as exc:
            raise TypeError(f"candidate arguments must be literals: {exc}") from None
        _send(self.calls, b"C", text)
        kind, reply = _receive(self.replies, self.max_chars)
        if kind == b"E":
            raise _error(reply)
        if kind != b"V" or len(reply) > self.max_chars:
            raise CandidateError("the candidate's process sent a malformed reply")
        try:
            return parse_literal(reply)
        except LiteralParseError:
            raise CandidateError(
                f"the candidate returned a value that is not a literal: {reply[:80]!r}"
            ) from None


def serve_calls(source: str, entry_point: str, calls: int, replies: int, max_chars: int) -> None:
    """Run ``source``, then answer every call to ``entry_point`` until ``calls`` closes.

    Runs in the candidate's (untrusted) process; if loading fails, every call is answered with
    that error.
    """
    failure = None
    function: Any = None
    try:
        namespace = main_namespace({})  # the program's own __main__ module
        exec(compile(source, "<program>", "exec"), namespace)
        function = namespace[entry_point]
    except BaseException as exc:
        failure = _describe(exc)
    while True:
        try:
            kind, text = _receive(calls, _MAX_CALL_CHARS)
        except EOFError:
            return
        if failure is not None:
            _send(replies, b"E", failure)
            continue
        try:
            args, kwargs = parse_args(text)
            reply = repr(function(*args, **kwargs))
            if type(reply) is not str:
                raise TypeError("__repr__ returned a non-string")
            if len(reply) > max_chars:
                raise ValueError(f"value repr longer than {max_chars} characters")
        except BaseException as exc:
            _send(replies, b"E", _describe(exc))
            continue
        _send(replies, b"V", reply)


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 1000 else text[:997] + "..."
