"""The sandboxed, deterministic Python executor (:class:`Executor`, :class:`ExecResult`)."""

from __future__ import annotations

import operator
import os
import select
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence

from redqueen.settings import ExecutorSettings
from redqueen.settings._game import MAX_EXECUTOR_WORKERS as MAX_WORKERS

from ._reply import CandidateTest, ExecResult, checked_reply
from ._server import _Server

__all__ = ["CandidateTest", "ExecResult", "Executor", "ExecutorClosedError"]

#: The settings schema's defaults, written once there.
_DEFAULTS = ExecutorSettings()

#: Extra seconds the executor waits for a fork server beyond the program's own timeout.
_SERVER_GRACE = 5.0
#: How far down the queue an idle server looks for a request it may run (see ``_run``).
_LOOKAHEAD = 64


class ExecutorClosedError(RuntimeError):
    """Raised when an :class:`Executor` is used after :meth:`Executor.close`."""


class Executor:
    """Runs untrusted Python programs in isolated, resource-limited, deterministic processes.

    Each worker is a fork server started once with ``PYTHONHASHSEED`` fixed and common modules
    pre-imported; each program then runs in a fresh child forked from it, so a check costs a fork
    instead of an interpreter launch. The child is confined by resource limits (address space,
    CPU, file size, no new processes, 32 descriptors), a wall-clock timeout that kills its whole process group,
    a private working directory (a 16 MiB tmpfs where mounts are permitted, emptied after any run
    that wrote to it), empty network and IPC namespaces where permitted, Landlock (writes only
    inside its directory, reads only there and in the interpreter's files) and a seccomp filter
    (no sockets, exec, fork, SysV or POSIX IPC, signals to others, metadata changes), and a
    dropped root identity. No child is a copy of a process that read a request: the fork server
    receives only each run's mode, timeout and pipe descriptors, and each child reads its own
    part of the request from its own pipe (a ``run_tests`` candidate never sees the test). The
    host, not the program's process, decides each verdict from one data-only frame and the
    exit status the server reports, and type- and size-checks every reply; values are compared with expectations outside the program's process
    (:meth:`run_tests` keeps test code out of it as well). :attr:`features` says which layers this host supports (seccomp is x86-64 only). A
    crashed, killed or hostile program never takes the executor down, and no process or IPC
    object it created outlives :meth:`close`.

    Example::

        with Executor(workers=2, timeout=2.0) as ex:
            ex.execute("def f(x):\\n    return x * 2", "f(21)").value  # '42'

    Args:
        workers: Number of fork servers, i.e. programs run in parallel (default: CPU count).
        timeout: Wall-clock seconds allowed per program (a CPU limit backs it up).
        memory_mb: Address space a program may allocate beyond the interpreter's baseline.
        max_value_chars: Longest accepted ``repr`` of a result.
        max_stdout_chars: Most characters a program may print; printing more fails the run.
        hash_seed: ``PYTHONHASHSEED`` of every run, so string hashing and set order are stable.
        preload: Extra standard-library modules the fork servers import up front. Programs can
            import only what the servers hold (the unprivileged children cannot read the
            interpreter's library), so a benchmark whose tests import, say, ``random`` lists it
            here; the code-task executors leave it out because it makes every fork dearer.

    Raises:
        TypeError: If ``workers`` is not an integer.
        ValueError: If an argument is out of range.
    """

    def __init__(
        self,
        workers: int | None = _DEFAULTS.workers,
        *,
        timeout: float = _DEFAULTS.timeout,
        memory_mb: int = _DEFAULTS.memory_mb,
        max_value_chars: int = 100_000,
        max_stdout_chars: int = 65_536,
        hash_seed: int = 0,
        preload: Sequence[str] = (),
    ) -> None:
        workers = min(os.cpu_count() or 1, MAX_WORKERS) if workers is None else workers
        try:  # an integer of any kind (numpy's too), never a string, a fraction or a flag
            if isinstance(workers, bool):
                raise TypeError
            workers = operator.index(workers)
        except TypeError:
            raise TypeError(f"Executor: workers must be an integer, got {workers!r}") from None
        if not 1 <= workers <= MAX_WORKERS:
            raise ValueError(f"Executor: workers must be in [1, {MAX_WORKERS}], got {workers}")
        if not timeout > 0:
            raise ValueError(f"Executor: timeout must be > 0 seconds, got {timeout}")
        if int(memory_mb) < 16:
            raise ValueError(f"Executor: memory_mb must be >= 16, got {memory_mb}")
        if max_value_chars < 1 or max_stdout_chars < 0:
            raise ValueError("Executor: max_value_chars must be >= 1 and max_stdout_chars >= 0")
        if not 0 <= hash_seed <= 4294967295:
            raise ValueError(f"Executor: hash_seed must be in [0, 2**32 - 1], got {hash_seed}")
        self.workers = int(workers)
        self.timeout = float(timeout)
        self.memory_mb = int(memory_mb)
        self.hash_seed = int(hash_seed)
        self._config = {
            "memory_bytes": self.memory_mb * 2**20,
            "max_value_chars": int(max_value_chars),
            "max_stdout_chars": int(max_stdout_chars),
            "preload": [str(name) for name in preload],
        }
        self._lock = threading.Lock()
        self._closed = False
        self._servers: list[_Server] = []
        try:
            for _ in range(self.workers):
                self._servers.append(_Server(self._config, self.hash_seed))
        except BaseException:
            self.close()
            raise

    @property
    def features(self) -> dict[str, bool]:
        """Isolation layers active on this host (e.g. ``{"seccomp": True, "landlock": True}``)."""
        self._check_open()
        return dict(self._servers[0].features)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._closed

    def execute(self, source: str, expr: str, *, heap_jitter: int | None = None) -> ExecResult:
        """Run ``source`` in a fresh sandbox, evaluate ``expr`` there and return its repr.

        Args:
            source: Program text executed as a module (defines ``f`` and helpers).
            expr: Expression evaluated in the program's namespace, e.g. ``"f([3, 1], 'ab')"``.
            heap_jitter: Accepted and ignored (see :meth:`execute_many`).

        Raises:
            TypeError: If ``source`` or ``expr`` is not a string.
            ExecutorClosedError: If the executor was closed.
        """
        jitter = None if heap_jitter is None else [heap_jitter]
        return self.execute_many([(source, expr)], heap_jitter=jitter)[0]

    def execute_many(
        self,
        pairs: Iterable[tuple[str, str]],
        *,
        heap_jitter: Sequence[int] | None = None,
    ) -> list[ExecResult]:
        """Run many ``(source, expr)`` pairs in parallel across the workers, results in order.

        Args:
            pairs: ``(source, expr)`` tuples, as for :meth:`execute`.
            heap_jitter: Accepted for :class:`~redqueen.verifiers.ProgramRunner`'s signature
                (other runners use it); here it must match ``pairs`` in length and changes
                nothing. Every run already takes a random heap shift of its own, drawn after
                the request is out of reach, and each repeat of a pair within a call runs on
                another fork server than the one before it (separate interpreters with their
                own address layout and their own scrambled small-object free lists),
                so programs whose result depends on ``id()``, ``hash()`` of objects or set
                order over objects disagree between repeats
                (:func:`~redqueen.verifiers.validate_program` relies on this), and nothing a
                program can read tells one run, or validation, from another.

        Raises:
            TypeError: If a pair is not two strings.
            ValueError: If ``heap_jitter`` has the wrong length.
            ExecutorClosedError: If the executor was closed.
        """
        jobs = [_check_pair(i, pair) for i, pair in enumerate(pairs)]
        if heap_jitter is not None and len(heap_jitter) != len(jobs):
            raise ValueError(
                f"Executor.execute_many: heap_jitter has {len(heap_jitter)} entries for {len(jobs)} pairs"
            )
        requests = [
            {"source": source, "expr": expr, "timeout": self.timeout} for source, expr in jobs
        ]
        with self._lock:
            self._check_open()
            return self._run(requests)

    def run_tests(self, tests: Iterable[CandidateTest]) -> list[ExecResult]:
        """Run trusted test code against untrusted programs, results in order.

        Each :class:`CandidateTest` takes two sandboxed processes: the program's, which only
        answers calls to its entry point with data, and the test's, which no program code
        reaches. The result is the test's: ``ok`` when ``expr`` returned within the timeout.

        Raises:
            TypeError: If an item is not a :class:`CandidateTest` of strings.
            ExecutorClosedError: If the executor was closed.
        """
        requests = []
        for i, test in enumerate(tests):
            if not isinstance(test, CandidateTest) or not all(
                isinstance(field, str)
                for field in (test.program, test.entry_point, test.test, test.expr)
            ):
                raise TypeError(f"Executor.run_tests: item {i} must be a CandidateTest of strings")
            requests.append(
                {
                    "source": test.program,
                    "entry_point": test.entry_point,
                    "test": test.test,
                    "expr": test.expr,
                    "timeout": self.timeout,
                }
            )
        with self._lock:
            self._check_open()
            return self._run(requests)

    def _run(self, requests: list[dict]) -> list[ExecResult]:
        """Run ``requests`` on the servers, at most :attr:`workers` at a time.

        A request equal to one already run in this call goes to another server than the one
        that ran it last, so the repeats of validation see different address layouts; with one
        worker, a second server is started for them (it never runs beside the first).
        """
        results: list[ExecResult | None] = [None] * len(requests)
        pending = deque(range(len(requests)))
        busy: dict[int, tuple[int, float]] = {}  # server index -> (job index, deadline)
        last_on: dict[tuple, int] = {}  # request -> pid of the server that ran it last
        keys = [tuple(request.values()) for request in requests]
        while pending or busy:
            for k in range(len(self._servers)):
                if len(busy) >= self.workers or not pending:
                    break
                if k in busy:
                    continue
                i = self._next_for(k, pending, keys, last_on)
                if i is None:
                    continue
                self._start(k, requests[i])
                last_on[keys[i]] = self._servers[k].pid
                busy[k] = (i, time.monotonic() + self.timeout + _SERVER_GRACE)
            if not busy:  # the one server ran the next request last: start a second one
                self._servers.append(_Server(self._config, self.hash_seed))
                continue
            by_fd = {self._servers[k].rfd: k for k in busy}
            wait = max(0.0, min(deadline for _, deadline in busy.values()) - time.monotonic())
            ready = select.select(list(by_fd), [], [], wait)[0]
            now = time.monotonic()
            for fd in ready:
                k = by_fd[fd]
                i, deadline = busy.pop(k)
                reply = self._servers[k].finish(deadline)
                if reply is None:
                    results[i] = ExecResult(False, None, "sandbox worker crashed", False)
                    self._restart(k)
                else:
                    results[i] = checked_reply(reply, self._config)
            for k, (i, deadline) in list(busy.items()):
                if deadline <= now and self._servers[k].rfd not in ready:
                    del busy[k]
                    results[i] = ExecResult(False, None, "timed out", True)
                    self._restart(k)
        return results  # type: ignore[return-value]

    def _next_for(
        self, k: int, pending: deque[int], keys: list[tuple], last_on: dict[tuple, int]
    ) -> int | None:
        """The first queued request that server ``k`` did not run last (None if none near)."""
        pid = self._servers[k].pid
        for position, i in enumerate(pending):
            if position >= _LOOKAHEAD:
                return None
            if last_on.get(keys[i]) != pid:
                del pending[position]
                return i
        return None

    def _start(self, k: int, request: dict) -> None:
        try:
            self._servers[k].start(request)
        except OSError:  # the server died between calls: replace it and retry once
            self._restart(k)
            self._servers[k].start(request)

    def _restart(self, k: int) -> None:
        self._servers[k].kill()
        self._servers[k] = _Server(self._config, self.hash_seed)

    def _check_open(self) -> None:
        if self._closed:
            raise ExecutorClosedError("Executor is closed; create a new one")

    def close(self) -> None:
        """Stop every fork server; no process started by this executor outlives the call."""
        if getattr(self, "_closed", True):
            return
        with self._lock:
            self._closed = True
            for server in self._servers:
                server.close()
            self._servers = []

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: modules may already be gone
            pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"Executor(workers={self.workers}, timeout={self.timeout}, memory_mb={self.memory_mb}, {state})"


def _check_pair(index: int, pair: object) -> tuple[str, str]:
    if not isinstance(pair, tuple | list) or len(pair) != 2:
        raise TypeError(f"Executor: pair {index} must be (source, expr), got {type(pair).__name__}")
    source, expr = pair
    if not isinstance(source, str) or not isinstance(expr, str):
        raise TypeError(f"Executor: pair {index}: source and expr must be str")
    return source, expr
