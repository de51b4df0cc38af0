"""What runs in a sandboxed child forked by the fork server (``_zygote.py``).

The child, before the program runs: starts its own session (so the whole process group can be
killed), dies with the server (``PR_SET_PDEATHSIG``), swaps stdin/stdout/stderr for
``/dev/null`` and closes every other descriptor except its result pipe, moves into the server's
private working directory, sets resource limits (address space, CPU, file size, processes,
core), drops root to ``nobody``, and installs Landlock and seccomp. Its prints go to a capped
in-memory buffer; its result (the ``repr`` of the expression, or the error) goes to the result
pipe as one frame (``_verdict.py``), which the fork server judges; then it exits without running
any clean-up code.

Standard library only; imported by the fork server as a sibling module.
"""

from __future__ import annotations

import builtins
import os
import resource
import signal
import sys
from typing import TYPE_CHECKING

if __package__:
    from ._verdict import LENGTHS
else:  # imported by the fork-server script as a sibling module
    from _verdict import LENGTHS

if TYPE_CHECKING:
    from redqueen.verifiers._zygote import Zygote

_PR_SET_PDEATHSIG = 1
_NOBODY = 65534
RESULT_FD = 3


#: Audit events that hand a program its interpreter's frames, the objects ``gc`` tracks, raw
#: memory (ctypes), or a way to rewrite functions: how it would read the run token or the
#: runner's locals. ``object.__getattr__`` covers ``tb_frame``, ``gi_frame``, ``__code__`` ...
SEALED_EVENTS = frozenset(
    {
        "sys._getframe",
        "sys._getframemodulename",
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "object.__getattr__",
    }
)
_SEALED_FUNCTION_ATTRIBUTES = frozenset({"__code__"})


def seal_interpreter() -> None:
    """Refuse (with ``ValueError``) the audit events in :data:`SEALED_EVENTS` from now on.

    An audit hook cannot be removed, and this one is reachable from no module or container:
    what it needs is bound as defaults. ``ValueError`` is what the standard library's own ``sys._getframe`` callers
    (``namedtuple``, ``TypeVar``, ``Enum``) already tolerate, so they keep working.
    """

    def refuse(
        event: str,
        args: tuple,
        sealed: frozenset = SEALED_EVENTS,
        rewritten: frozenset = _SEALED_FUNCTION_ATTRIBUTES,
        startswith=str.startswith,
        error: type = ValueError,
    ) -> None:
        if (
            event in sealed
            or startswith(event, "ctypes.")
            or (event == "object.__setattr__" and args[1] in rewritten)
        ):
            raise error(f"{event} is not available in the sandbox")

    sys.addaudithook(refuse)


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


def run_child(server: Zygote, wfd: int, request: dict, writer: CappedWriter, token: bytes) -> None:
    """Confine this freshly forked process, run the request, write its one frame, exit.

    What this process sends is only a claim (the program owns the process); the fork server
    judges it (``_verdict.py``). The program may rebind any module attribute or builtin, so what
    the runner needs once the program ran is bound to locals first, and the code that handles
    the token calls nothing the program could have replaced (it could otherwise be handed the
    token, as an argument or through ``__radd__``). The request is emptied, so ``gc`` finds no
    copy of it.
    """
    write, exit_now, pack = os.write, os._exit, LENGTHS.pack
    type_of, str_type, length = type, str, len
    result_fd, capacity = RESULT_FD, server.pipe_capacity
    source, expr = request.pop("source"), request.pop("expr")
    request.clear()
    kind, text = b"E", "sandbox setup failed"
    try:
        os.setsid()
        server.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != server.server_pid:
            exit_now(1)
        os.dup2(wfd, RESULT_FD)
        for fd in (0, 1, 2):
            os.dup2(server.devnull, fd)
        ruleset = server.ruleset_fd
        if ruleset >= 0:
            os.dup2(ruleset, RESULT_FD + 1)
            ruleset = RESULT_FD + 1
        os.closerange(RESULT_FD + 2 if ruleset >= 0 else RESULT_FD + 1, 1 << 16)
        os.chdir(server.workdir)
        for resource_kind, limits in server.limits:
            resource.setrlimit(resource_kind, limits)
        if server.drop_root:
            os.setgroups([])
            os.setresgid(_NOBODY, _NOBODY, _NOBODY)
            os.setresuid(_NOBODY, _NOBODY, _NOBODY)
        if ruleset >= 0:
            landlock = server.landlock
            assert landlock is not None  # a ruleset is prepared only with Landlock
            landlock.restrict(ruleset)
            os.close(ruleset)
        if server.seccomp is not None:
            server.seccomp.install()
        seal_interpreter()
        sys.stdout = sys.stderr = writer
        kind, text = execute_program(source, expr, writer, server.max_value_chars)
    except BaseException as exc:  # setup failure or program escaping the handler
        kind, text = b"E", describe(exc)
    try:
        stdout = writer.getvalue()
        kind = b"V" if kind == b"V" else b"E"
        if type_of(text) is not str_type or type_of(stdout) is not str_type:
            kind, text, stdout = b"E", "the program's result is not a string", ""
        body = text.encode("utf-8", "surrogatepass")
        out = stdout.encode("utf-8", "surrogatepass")
        data = kind + token + pack(length(body), length(out)) + body + out
        if length(data) > capacity:  # the server reads only after the exit
            body = b"result too large for the result pipe"
            data = b"E" + token + pack(length(body), 0) + body
        while data:
            data = data[write(result_fd, data) :]
    finally:
        exit_now(0)


def execute_program(
    source: str, expr: str, writer: CappedWriter, max_value_chars: int
) -> tuple[bytes, str]:
    """Run ``source``, evaluate ``expr``; ``(b"V", repr)`` or ``(b"E", error)`` (never raises)."""
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        program = compile(source, "<program>", "exec")
        expression = compile(expr, "<expr>", "eval")
        del source, expr
        exec(program, namespace)
        value = eval(expression, namespace)
        text = repr(value)
        if type(text) is not str:
            raise TypeError("__repr__ returned a non-string")
    except BaseException as exc:
        return b"E", describe(exc)
    if writer.overflowed:
        return b"E", f"program printed more than {writer.limit} characters"
    if len(text) > max_value_chars:
        return b"E", f"value repr longer than {max_value_chars} characters"
    return b"V", text


def describe(exc: BaseException) -> str:
    """``"Type: message"``, truncated to 1000 characters."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 1000 else text[:997] + "..."
