"""The host's side of the sandbox protocol: :class:`ExecResult` and the check of every reply.

A fork server's reply is checked field by field before it becomes an :class:`ExecResult`;
nothing in it is trusted (``docs/verifier.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_REPLY_BYTES", "UNREADABLE", "CandidateTest", "ExecResult", "checked_reply"]

#: Longest reply frame accepted from a fork server (a value and stdout at their caps fit easily).
MAX_REPLY_BYTES = 64 * 2**20
MAX_ERROR_CHARS = 1000


@dataclass(frozen=True)
class ExecResult:
    """What one sandboxed run produced.

    Every field is decided or checked outside the program's process (``docs/verifier.md``):
    a program that writes its own result, patches the runner or exits early gets a failed run.
    ``ok`` says the expression's value came back, not that it is right: judges compare
    ``value`` with an expectation the program never sees.

    Attributes:
        ok: True when the program and the expression ran and the value's repr came back.
        value: ``repr`` of the expression's value (compare with ``ast.literal_eval``, never
            ``eval``), or None when ``ok`` is false.
        error: ``"ExceptionType: message"``, ``"timed out"``, ``"killed by signal ..."`` and the
            like; None when ``ok`` is true.
        timed_out: True when the wall-clock timeout or the CPU limit stopped the program.
        stdout: What the program printed (capped; printing past the cap fails the run).
    """

    ok: bool
    value: str | None
    error: str | None
    timed_out: bool = False
    stdout: str = ""


@dataclass(frozen=True)
class CandidateTest:
    """Trusted test code run against an untrusted program, each in a process of its own.

    The program runs in one sandboxed process and only answers calls to ``entry_point``; the
    test runs in another, where ``candidate`` stands for that function: every call sends its
    arguments as a literal argument list and gets back the result parsed as a literal (or the
    candidate's error, raised with its built-in type). Nothing the program does reaches the
    test's expected values, its ``assert`` statements or its interpreter.

    Attributes:
        program: Untrusted source that defines ``entry_point``.
        entry_point: Name of the function the test calls as ``candidate``.
        test: Trusted test source, e.g. HumanEval's prompt followed by its ``check``.
        expr: Expression evaluated after ``test`` in the test's namespace, e.g.
            ``"check(candidate)"``; the run is ``ok`` when it returns.
    """

    program: str
    entry_point: str
    test: str
    expr: str


UNREADABLE = object()
_REPLY_KEYS = frozenset({"ok", "value", "error", "stdout", "timed_out"})


def checked_reply(reply: object, config: dict) -> ExecResult:
    """The :class:`ExecResult` for a fork server's reply, trusting nothing in it.

    Every field is type- and size-checked; a reply that fails a check becomes a failed run whose
    error says why (never an exception here, so one hostile program cannot stop a caller).
    """
    problem = _reply_problem(reply, config)
    if problem is not None or not isinstance(reply, dict):
        return ExecResult(False, None, f"malformed reply from the sandbox: {problem}", False)
    return ExecResult(
        ok=reply["ok"],
        value=reply["value"],
        error=reply["error"],
        timed_out=reply["timed_out"],
        stdout=reply["stdout"],
    )


def _reply_problem(reply: object, config: dict) -> str | None:
    """What is wrong with a reply, or None when it has exactly the expected shape."""
    if reply is UNREADABLE:
        return "not JSON"
    if not isinstance(reply, dict) or set(reply) != _REPLY_KEYS:
        return "not a record with the fields ok, value, error, stdout, timed_out"
    ok, value, error = reply["ok"], reply["value"], reply["error"]
    if type(ok) is not bool or type(reply["timed_out"]) is not bool:
        return "ok and timed_out must be booleans"
    if type(reply["stdout"]) is not str or len(reply["stdout"]) > config["max_stdout_chars"]:
        return "stdout must be a string within the stdout cap"
    if ok:
        if type(value) is not str or len(value) > config["max_value_chars"] or error is not None:
            return "a successful run needs a string value within the value cap and no error"
        if reply["timed_out"]:
            return "a successful run cannot have timed out"
    elif value is not None or type(error) is not str or len(error) > MAX_ERROR_CHARS:
        return "a failed run needs no value and a short string error"
    return None
