"""What runs in a sandboxed child forked by the fork server (``_zygote.py``).

The child, before any program code runs: starts its own session (so the whole process group
can be killed), dies with the server (``PR_SET_PDEATHSIG``), swaps stdin/stdout/stderr for
``/dev/null`` and keeps only the pipes it was given (renumbered from 3), moves into the server's
private working directory, sets resource limits (address space, CPU, file size, processes,
core), drops root to ``nobody``, and installs Landlock and seccomp. Its prints go to a capped
in-memory buffer.

Three roles share that confinement:

* :func:`run_child`: run a program, evaluate an expression, write one frame (``_verdict.py``)
  with the value's ``repr`` or the error, and exit with :data:`EXIT_VALUE` or
  :data:`EXIT_RAISED`. The program owns this process, so the frame is only a claim about a
  value the program chose; the host judges it and callers compare the value elsewhere.
* :func:`run_candidate`: load an untrusted program and answer calls to one of its functions,
  arguments and results passing as literal data (``_proxy.py``); its exit status means nothing.
* :func:`run_test`: run trusted test code whose ``candidate`` calls go to that other process,
  and report like :func:`run_child`. No program code ever runs here, so its verdict is honest.

Standard library only; imported by the fork server as a sibling module.
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import signal
import sys
from typing import TYPE_CHECKING

if __package__:
    from . import _kernel
    from ._library_guards import main_namespace
    from ._proxy import Candidate, serve_calls
    from ._verdict import EXIT_RAISED, EXIT_VALUE, encode_frame
else:  # imported by the fork-server script as a sibling module
    import _kernel
    from _library_guards import main_namespace
    from _proxy import Candidate, serve_calls
    from _verdict import EXIT_RAISED, EXIT_VALUE, encode_frame

if TYPE_CHECKING:
    from redqueen.verifiers._zygote import Zygote

_NOBODY = 65534
_FIRST_FD = 3
_HIGH_FD = 512


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


def confine(server: Zygote, keep: tuple[int, ...]) -> None:
    """Confine this freshly forked process; the descriptors in ``keep`` become 3, 4, ...

    Every other descriptor is closed, so a process holds only the pipes of its own role.
    """
    os.setsid()
    _kernel.set_pdeathsig(signal.SIGKILL)
    if os.getppid() != server.server_pid:
        os._exit(EXIT_RAISED)
    ruleset = server.ruleset_fd
    sources = (*keep, ruleset) if ruleset >= 0 else keep
    # This child's own /dev/null: a descriptor shared with the server would share its open
    # file's flags (O_APPEND, O_NONBLOCK) and locks, which outlive the child, with every later
    # child. Out of the way first, so that renumbering never overwrites a descriptor still to
    # move: the new /dev/null may itself sit at 3, where the first kept pipe lands.
    own_null = os.open(os.devnull, os.O_RDWR)
    null, *moved = (fcntl.fcntl(fd, fcntl.F_DUPFD, _HIGH_FD) for fd in (own_null, *sources))
    for fd in (0, 1, 2):  # the standard descriptors lead nowhere, whatever writes to them
        os.dup2(null, fd)
    for target, fd in enumerate(moved, start=_FIRST_FD):
        os.dup2(fd, target)
    os.closerange(_FIRST_FD + len(moved), 1 << 16)
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
        ruleset = _FIRST_FD + len(keep)
        landlock.restrict(ruleset)
        os.close(ruleset)
    if server.seccomp is not None:
        server.seccomp.install()
    seal(server)


#: Modules that read raw memory. The sandbox's own set-up calls the kernel through ``ctypes``
#: before a program runs; after that, no module name leads to them and no import brings them
#: back (``_refuse_raw_memory``).
RAW_MEMORY_MODULES = frozenset({"ctypes", "_ctypes"})
#: What :func:`seal` takes out of ``sys.modules``: the ``ctypes`` modules the set-up loaded,
#: and the sandbox's own modules (the script and its siblings), whose globals led to them.
_SEALED_MODULES = (
    "ctypes",
    "ctypes._endian",
    "_ctypes",
    "_zygote",
    "_template",
    "_child",
    "_proxy",
    "_library_guards",
    "_verdict",
    "_seccomp",
    "_landlock",
    "_namespaces",
    "_kernel",
    "_kernelcalls",
    *(f"redqueen.verifiers.{name}" for name in ("_zygote", "_template", "_seccomp", "_landlock")),
)
#: Audit events a program may not raise besides ``ctypes.*``: walks over the whole object
#: graph, which would find what no name leads to.
_REFUSED_EVENTS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents"})


def seal(server: Zygote) -> None:
    """Leave a confined child no way to ``ctypes`` by name, import or audited operation.

    Where the kernel calls are compiled (``_kernel.NATIVE``), ``ctypes`` was never loaded, and
    an audit hook, which no program can remove, refuses importing it (the seccomp filter
    refuses the executable mapping that loading ``_ctypes`` needs as well). Where they went
    through ``ctypes``, this also drops the references confinement used, takes the ``ctypes``
    modules and the sandbox's own modules out of ``sys.modules`` (``__main__`` becomes an empty
    module), and the hook refuses every audited ``ctypes`` operation and whole-heap walks; the
    interpreter's cache of ``_ctypes`` stays reachable there (``docs/verifier.md``). Every page
    a child writes is a page the kernel copies, so the native path touches almost nothing.
    """
    server.seccomp = server.landlock = None
    if "_ctypes" in sys.modules:
        _forget_ctypes()
    sys.addaudithook(_refuse_raw_memory)


def _forget_ctypes() -> None:
    modules = sys.modules
    for name in _SEALED_MODULES:
        module = modules.pop(name, None)
        if module is not None and name.partition(".")[0] not in RAW_MEMORY_MODULES:
            vars(module).pop("ctypes", None)
    main = modules.get("__main__")
    if main is not None:
        vars(main).pop("ctypes", None)
    modules["__main__"] = type(sys)("__main__")  # programs run as __main__; nothing in it


def _refuse_raw_memory(event: str, args: tuple) -> None:
    if event.startswith("ctypes.") or event in _REFUSED_EVENTS:
        raise PermissionError(f"{event} is not allowed in the sandbox")
    if event == "import" and str(args[0]).partition(".")[0] in RAW_MEMORY_MODULES:
        raise ImportError(f"{args[0]} is not available in the sandbox")


#: Small-object size classes (bytes) of the heap jitter and the scramble, besides ``object``
#: (16) and ``float`` (24, in the 32-byte class), taken as ``bytes`` (``bytes(n)`` takes
#: ``33 + n`` bytes): the classes most of a small program's objects come from.
_JITTER_CLASSES = tuple(range(48, 129, 16))
#: Blocks of each class a fork server frees in a random order before it serves.
_SCRAMBLE_BLOCKS = 64


def run_child(server: Zygote, request_fd: int, wfd: int, writer: CappedWriter) -> None:
    """Read this child's request, confine, run it, write its one frame to ``wfd``, exit."""
    request = _read_request(request_fd)
    held = _child_jitter()  # kept until the process exits
    _report(server, (wfd,), request, writer, {})
    del held  # not reached: _report exits


def _read_request(fd: int) -> dict:
    """The request the server wrote to this child's own pipe (its only copy anywhere here)."""
    chunks = []
    try:
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        request = json.loads(b"".join(chunks))
    except (OSError, ValueError):
        request = None
    finally:
        os.close(fd)
    if not isinstance(request, dict):
        os._exit(EXIT_RAISED)
    return request


class _Held:
    """Blocks kept until the process exits (a short ``repr`` for anything that prints it)."""

    __slots__ = ("blocks",)

    def __init__(self, blocks: list[list[object]]) -> None:
        self.blocks = blocks


def _blocks(size: int, count: int) -> list[object]:
    """``count`` fresh objects of the small-object size class ``size`` (16, 32, or 48-128)."""
    if size == 16:
        return [object() for _ in range(count)]
    if size == 32:
        return [float(i) + 0.5 for i in range(count)]
    return [bytes(size - 33) for _ in range(count)]


def _child_jitter() -> _Held:
    """A random number (0-15) of objects of each small size class, taken before the program.

    Taken from the child's own free lists just before the program allocates, they move the
    program's objects along those lists (with probability 15/16 per size class), whatever the
    heap looks like. The count is drawn here, so no program can read it anywhere before its
    run. Together with the server's scrambled free lists (:func:`scramble_free_lists`), an
    output that depends on addresses differs between two runs.
    """
    count = os.urandom(1)[0] % 16
    return _Held([_blocks(size, count) for size in (16, 32, *_JITTER_CLASSES)])


def scramble_free_lists() -> _Held:
    """Scramble the free list of each small size class; a fork server calls it once, to serve.

    For each class it takes ``2 * _SCRAMBLE_BLOCKS`` blocks, keeps a random half and frees the
    other half in a random order. The allocator hands freed blocks out last-freed first, so a
    program's first objects of each class come back at addresses in an order this server drew,
    not in address order. A shift of the heap alone leaves a set of objects made one after
    another in the same order under most shifts (its blocks are contiguous and fill a run of
    the set's table); two servers with free lists scrambled apart order them differently, and
    validation's two runs of an input go to two servers. The server's own allocations between
    forks take blocks from these lists and give them back, so the order stays drawn. The kept
    half holds every pool partly used, so none is returned empty and handed out again in
    address order. Drawn once per server, it costs its children nothing.
    """
    held: list[list[object]] = []
    for size in (16, 32, *_JITTER_CLASSES):
        blocks: list[object | None] = list(_blocks(size, 2 * _SCRAMBLE_BLOCKS))
        keys = os.urandom(2 * _SCRAMBLE_BLOCKS)
        order = sorted(range(2 * _SCRAMBLE_BLOCKS), key=keys.__getitem__)
        held.append([blocks[i] for i in order[:_SCRAMBLE_BLOCKS]])
        for i in order[_SCRAMBLE_BLOCKS:]:
            blocks[i] = None  # freed now, in the drawn order
    return _Held(held)


def run_test(
    server: Zygote,
    request_fd: int,
    wfd: int,
    calls: int,
    replies: int,
    writer: CappedWriter,
) -> None:
    """Run trusted test code (read from ``request_fd``) against a candidate in another process.

    ``candidate`` in the test's namespace sends each call's arguments on ``calls`` and reads
    the result on ``replies`` (``_proxy.Candidate``); the frame goes to ``wfd``.
    """
    request = _read_request(request_fd)
    candidate = Candidate(_FIRST_FD + 1, _FIRST_FD + 2, server.max_value_chars)
    _report(server, (wfd, calls, replies), request, writer, {"candidate": candidate})


def run_candidate(
    server: Zygote, request_fd: int, calls: int, replies: int, writer: CappedWriter
) -> None:
    """Load the untrusted program (read from ``request_fd``: the program and its entry point,
    never the test) and answer calls to its entry point; exit."""
    try:
        request = _read_request(request_fd)
        confine(server, (calls, replies))
        sys.stdout = sys.stderr = writer
        serve_calls(
            request["source"],
            request["entry_point"],
            _FIRST_FD,
            _FIRST_FD + 1,
            server.max_value_chars,
        )
    finally:
        os._exit(EXIT_RAISED)


def _report(
    server: Zygote, keep: tuple[int, ...], request: dict, writer: CappedWriter, extra: dict
) -> None:
    """Confine, run ``request``, write one frame to descriptor 3, exit with its status.

    What the runner calls once the program ran is bound first, so that a program that rebinds
    ``os.write`` or ``os._exit`` does not garble an honest error report. Nothing here is secret
    and nothing here is trusted: the host judges the frame and the exit status.
    """
    write, exit_now, encode, length = os.write, os._exit, encode_frame, len
    type_of, str_type = type, str
    capacity = server.pipe_capacity
    kind, text = b"E", "sandbox setup failed"
    try:
        confine(server, keep)
        sys.stdout = sys.stderr = writer
        kind, text = execute_program(
            request["source"], request["expr"], writer, server.max_value_chars, extra
        )
    except BaseException as exc:  # setup failure or program escaping the handler
        kind, text = b"E", describe(exc)
    kind = b"V" if kind == b"V" else b"E"
    try:
        stdout = writer.getvalue()
        if type_of(text) is not str_type or type_of(stdout) is not str_type:
            kind, text, stdout = b"E", "the program's result is not a string", ""
        data = encode(kind, text, stdout)
        if length(data) > capacity:  # the server reads only after the exit
            kind = b"E"
            data = encode(kind, "result too large for the result pipe", "")
        while data:
            data = data[write(_FIRST_FD, data) :]
    finally:
        exit_now(EXIT_VALUE if kind == b"V" else EXIT_RAISED)


def execute_program(
    source: str, expr: str, writer: CappedWriter, max_value_chars: int, extra: dict
) -> tuple[bytes, str]:
    """Run ``source``, evaluate ``expr``; ``(b"V", repr)`` or ``(b"E", error)`` (never raises).

    The program runs as a fresh ``__main__`` module of its own, ``extra`` names bound in it.
    """
    try:
        namespace = main_namespace(extra)
        program = compile(source, "<program>", "exec")
        expression = compile(expr, "<expr>", "eval")
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
    """``"Type: message"``, truncated to 1000 characters; never raises.

    A program's exception may carry a ``__str__`` that raises or returns a non-string; its
    report is then the type's name alone.
    """
    try:
        text = f"{type(exc).__name__}: {exc}"
    except BaseException:
        text = f"{type(exc).__name__}: (its message could not be written)"
    return text if len(text) <= 1000 else text[:997] + "..."
