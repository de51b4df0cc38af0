"""What runs in a sandboxed child forked by the fork server (``_zygote.py``).

The child, before the program runs: starts its own session (so the whole process group can be
killed), dies with the server (``PR_SET_PDEATHSIG``), swaps stdin/stdout/stderr for
``/dev/null`` and closes every other descriptor except its result pipe, moves into the server's
private working directory, sets resource limits (address space, CPU, file size, processes,
core), drops root to ``nobody``, and installs Landlock and seccomp. Its prints go to a capped
in-memory buffer; its result (the ``repr`` of the expression, or the error) goes to the result
pipe as JSON; then it exits without running any clean-up code.

Standard library only; imported by the fork server as a sibling module.
"""

from __future__ import annotations

import builtins
import json
import os
import resource
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _zygote import Zygote

_PR_SET_PDEATHSIG = 1
_NOBODY = 65534
RESULT_FD = 3


class OutputLimitExceeded(BaseException):
    """Raised into the program when it prints more than the stdout cap."""


class CappedWriter:
    """A text stream keeping at most ``limit`` characters; past that, every write raises."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.overflowed = False
        self.encoding = "utf-8"

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.size + len(text) > self.limit:
            self.overflowed = True
            raise OutputLimitExceeded(f"program printed more than {self.limit} characters")
        self.parts.append(text)
        self.size += len(text)
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def getvalue(self) -> str:
        return "".join(self.parts)


def refuse_socket(*args: object, **kwargs: object) -> None:
    """Stands in for ``socket.socket`` and friends (seccomp refuses the syscall as well)."""
    raise PermissionError("network access is disabled in the sandbox")


def run_child(server: Zygote, wfd: int, request: dict, writer: CappedWriter) -> None:
    """Confine this freshly forked process, run the request, write the result, exit."""
    result: dict = {"ok": False, "value": None, "error": "sandbox setup failed", "stdout": ""}
    try:
        os.setsid()
        server.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != server.server_pid:
            os._exit(1)
        os.dup2(wfd, RESULT_FD)
        for fd in (0, 1, 2):
            os.dup2(server.devnull, fd)
        ruleset = server.ruleset_fd
        if ruleset >= 0:
            os.dup2(ruleset, RESULT_FD + 1)
            ruleset = RESULT_FD + 1
        os.closerange(RESULT_FD + 2 if ruleset >= 0 else RESULT_FD + 1, 1 << 16)
        os.chdir(server.workdir)
        for kind, limits in server.limits:
            resource.setrlimit(kind, limits)
        if server.drop_root:
            os.setgroups([])
            os.setresgid(_NOBODY, _NOBODY, _NOBODY)
            os.setresuid(_NOBODY, _NOBODY, _NOBODY)
        if ruleset >= 0:
            server.landlock.restrict(ruleset)
            os.close(ruleset)
        if server.seccomp is not None:
            server.seccomp.install()
        sys.stdout = sys.stderr = writer
        result = execute_program(request["source"], request["expr"], writer, server.max_value_chars)
    except BaseException as exc:  # setup failure or program escaping the handler
        result = {"ok": False, "value": None, "error": describe(exc), "stdout": writer.getvalue()}
    try:
        try:
            data = json.dumps(result, ensure_ascii=False).encode()
        except UnicodeEncodeError:  # lone surrogates: escape them
            data = json.dumps(result).encode()
        if len(data) > server.pipe_capacity:  # the server reads only after the exit
            data = json.dumps(
                {
                    "ok": False,
                    "value": None,
                    "stdout": "",
                    "error": "result too large for the result pipe",
                }
            ).encode()
        while data:
            data = data[os.write(RESULT_FD, data) :]
    finally:
        os._exit(0)


def execute_program(source: str, expr: str, writer: CappedWriter, max_value_chars: int) -> dict:
    """Run ``source``, evaluate ``expr`` and return the result record (never raises)."""
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compile(source, "<program>", "exec"), namespace)
        value = eval(compile(expr, "<expr>", "eval"), namespace)
        text = repr(value)
        if not isinstance(text, str):
            raise TypeError("__repr__ returned a non-string")
    except BaseException as exc:
        return {"ok": False, "value": None, "error": describe(exc), "stdout": writer.getvalue()}
    if writer.overflowed:
        return {
            "ok": False,
            "value": None,
            "stdout": writer.getvalue(),
            "error": f"program printed more than {writer.limit} characters",
        }
    if len(text) > max_value_chars:
        return {
            "ok": False,
            "value": None,
            "stdout": writer.getvalue(),
            "error": f"value repr longer than {max_value_chars} characters",
        }
    return {"ok": True, "value": text, "error": None, "stdout": writer.getvalue()}


def describe(exc: BaseException) -> str:
    """``"Type: message"``, truncated to 1000 characters."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 1000 else text[:997] + "..."
