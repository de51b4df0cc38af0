"""Gold outputs for the project's own generated programs, fast: :class:`GoldPool`.

The sandbox (:class:`~redqueen.verifiers.Executor`) forks a fresh, seccomp-filtered process for
every run, because a model's program is hostile until proven otherwise. A corpus program is not
a model's: it comes from :mod:`redqueen.tinycoder.programs`, whose grammar has no imports, no
attribute access outside a fixed list of string, list and dict methods, no I/O and bounded
loops. For those programs the threats left are accidents, not attacks: a slow or runaway call, a
huge value, deep recursion, and outputs that depend on hash seeds or object addresses. A
:class:`GoldPool` guards against exactly those, at about 100x the sandbox's rate:

- worker processes started afresh (``python -m redqueen.tinycoder._gold_worker``, so no state
  leaks from the parent) with an address-space limit;
- a fresh namespace for every run (the source's code object is compiled once per batch);
- a wall-clock timer per run (``setitimer``), a recursion limit and a cap on the value's repr;
- two pools with different ``PYTHONHASHSEED`` values: the first run of an input goes to one,
  the second to the other, so :func:`~redqueen.verifiers.validate_programs` (which runs every
  input twice and rejects any difference) sees set and dict orders that depend on the seed;
- a batch that kills or wedges a worker is re-run, whole, in the real sandbox (``fallback``).

It is a drop-in for the executor in :func:`~redqueen.verifiers.validate_programs` and
:func:`~redqueen.tinycoder.corpus.build_corpus` (the same ``execute_many``), so the static checks
and the judgement of outputs are the verifier's own. Never hand it programs a model wrote.
"""

from __future__ import annotations

import os
import pickle
import selectors
import struct
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence

from redqueen.verifiers import ExecResult, Executor

__all__ = ["GoldPool"]

#: Seconds to wait for one batch's result before its worker counts as wedged (a batch that is
#: merely slow is then re-run in the sandbox: slower, never wrong).
_BATCH_WAIT = 60.0
_HEADER = struct.Struct(">I")


class _Worker:
    """One worker process with a fixed ``PYTHONHASHSEED``; batches go in and out as pickles."""

    def __init__(self, which: int, memory_bytes: int) -> None:
        self.which = which  # pool 0 or 1; its hash seed is which + 1
        env = dict(os.environ, PYTHONHASHSEED=str(1 + which))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "redqueen.tinycoder._gold_worker", str(memory_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both are pipes
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.part: list[int] = []  # indices of the batch in flight
        self.deadline = 0.0

    def send(self, part: list[int], payload: bytes, wait: float) -> None:
        self.part, self.deadline = part, time.monotonic() + wait
        self.stdin.write(_HEADER.pack(len(payload)) + payload)
        self.stdin.flush()

    def receive(self) -> list:
        size = _HEADER.unpack(_read_exactly(self.stdout, _HEADER.size))[0]
        return pickle.loads(_read_exactly(self.stdout, size))  # noqa: S301 - our own worker

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.stdin.close()
        self.stdout.close()


def _read_exactly(stream, n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) != n:
        raise EOFError("gold worker closed its pipe")
    return data


class GoldPool:
    """Computes gold outputs of generated programs; the same ``execute_many`` as an Executor.

    Use as a context manager. See the module docstring for what it guards against and why it
    is only for the project's own generator.

    Args:
        workers: Processes per hash-seed pool (two pools; default: half the cores, at least 1).
        timeout: Wall-clock seconds per run.
        memory_mb: Address-space limit of each worker.
        fallback: Sandbox that re-runs a batch which killed or wedged a worker; without one
            such a batch's runs fail (and those programs are dropped).
        chunk: Runs per task sent to a worker.
        max_value_chars: Longest value repr returned (longer is an error, as in the sandbox).
        batch_timeout: Seconds to wait for a batch before its worker counts as wedged (it is
            then killed and replaced, and the batch goes to ``fallback``).

    Raises:
        ValueError: On a non-positive ``workers``, ``timeout`` or ``chunk``.
    """

    def __init__(
        self,
        *,
        workers: int | None = None,
        timeout: float = 2.0,
        memory_mb: int = 1024,
        fallback: Executor | None = None,
        chunk: int = 256,
        max_value_chars: int = 100_000,
        batch_timeout: float = _BATCH_WAIT,
    ) -> None:
        workers = workers if workers is not None else max(1, (os.cpu_count() or 2) // 2)
        if workers < 1 or not timeout > 0 or chunk < 1:
            raise ValueError(
                f"GoldPool: workers, timeout and chunk must be positive, got {workers}, {timeout}, {chunk}"
            )
        self.workers = workers
        self.timeout = float(timeout)
        self.memory_bytes = int(memory_mb) * 2**20
        self.fallback = fallback
        self.chunk = chunk
        self.max_value_chars = max_value_chars
        self.batch_timeout = float(batch_timeout)
        self.fallback_batches = 0
        self._pools: list[list[_Worker] | None] = [None, None]

    def _pool(self, which: int) -> list[_Worker]:
        pool = self._pools[which]
        if pool is None:
            pool = self._pools[which] = [
                _Worker(which, self.memory_bytes) for _ in range(self.workers)
            ]
        return pool

    def execute_many(
        self, pairs: Iterable[tuple[str, str]], *, heap_jitter: Sequence[int] | None = None
    ) -> list[ExecResult]:
        """Run every ``(source, expr)`` pair; results in order.

        ``heap_jitter`` is the executor's argument; here its parity picks the hash-seed pool
        (validation's two runs of an input have jitters of opposite parity), so the two runs
        of one input always see different ``PYTHONHASHSEED`` values.
        """
        pairs = list(pairs)
        parity = [0] * len(pairs) if heap_jitter is None else [j & 1 for j in heap_jitter]
        if len(parity) != len(pairs):
            raise ValueError("GoldPool.execute_many: heap_jitter must match pairs in length")
        results: list[ExecResult | None] = [None] * len(pairs)
        queues: dict[int, list[list[int]]] = {}
        for which in (0, 1):
            indices = [i for i, p in enumerate(parity) if p == which]
            queues[which] = [
                indices[s : s + self.chunk] for s in range(0, len(indices), self.chunk)
            ]
        with selectors.DefaultSelector() as selector:
            for which in (0, 1):
                if queues[which]:
                    for worker in self._pool(which):
                        self._feed(worker, queues[which], pairs, selector)
            while selector.get_map():
                events = selector.select(timeout=1.0)
                now = time.monotonic()
                ready = {key.data for key, _ in events}
                busy = [key.data for key in list(selector.get_map().values())]
                for worker in busy:
                    if worker not in ready and now < worker.deadline:
                        continue
                    which, part = worker.which, worker.part
                    selector.unregister(worker.stdout)
                    try:
                        if worker not in ready:
                            raise TimeoutError
                        rows = [ExecResult(*row) for row in worker.receive()]
                    except (TimeoutError, EOFError, OSError, pickle.UnpicklingError):
                        worker.kill()
                        pool = self._pool(which)
                        slot = pool.index(worker)
                        worker = pool[slot] = _Worker(which, self.memory_bytes)
                        rows = self._fall_back([pairs[i] for i in part])
                    for i, row in zip(part, rows, strict=True):
                        results[i] = row
                    worker.part = []
                    self._feed(worker, queues[which], pairs, selector)
        return results  # type: ignore[return-value]

    def _feed(self, worker: _Worker, queue: list[list[int]], pairs, selector) -> None:
        if not queue:
            return
        part = queue.pop(0)
        payload = pickle.dumps(
            ([pairs[i] for i in part], self.timeout, self.max_value_chars, 100_000)
        )
        worker.send(part, payload, self.batch_timeout)
        selector.register(worker.stdout, selectors.EVENT_READ, worker)

    def _fall_back(self, pairs: list[tuple[str, str]]) -> list[ExecResult]:
        self.fallback_batches += 1
        if self.fallback is None:
            return [ExecResult(False, None, "worker died or wedged", False, "")] * len(pairs)
        return self.fallback.execute_many(pairs)

    def close(self) -> None:
        """Stop the worker processes."""
        for which in (0, 1):
            for worker in self._pools[which] or ():
                worker.kill()
            self._pools[which] = None

    def __enter__(self) -> GoldPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
