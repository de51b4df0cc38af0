"""The worker process of :class:`redqueen.tinycoder.gold.GoldPool` (run as ``python -m``).

Reads length-prefixed pickled batches ``(pairs, timeout, max_value_chars, max_stdout)`` on
stdin and answers each with a pickled list of ``(ok, value, error, timed_out, stdout)``. Its
file descriptor 1 points at ``/dev/null`` while programs run; answers go to a private copy.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import resource
import signal
import struct
import sys
from collections.abc import Sequence
from types import CodeType

_HEADER = struct.Struct(">I")


class _RunTimeout(BaseException):
    """Raised by the timer inside a run (a BaseException: ``except Exception`` cannot eat it)."""


def _on_alarm(signum, frame):  # noqa: ARG001 - signal handler signature
    raise _RunTimeout


def run_batch(
    pairs: Sequence[tuple[str, str]], timeout: float, max_value_chars: int, max_stdout: int
) -> list[tuple[bool, str | None, str | None, bool, str]]:
    """Run every ``(source, expr)`` in a fresh namespace; ``(ok, value, error, timed_out, stdout)``."""
    codes: dict[str, CodeType] = {}
    out: list[tuple[bool, str | None, str | None, bool, str]] = []
    for source, expr in pairs:
        buffer = io.StringIO()
        try:
            code = codes.get(source)
            if code is None:
                code = codes[source] = compile(source, "<program>", "exec")
            namespace: dict = {"__name__": "__program__"}
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                with contextlib.redirect_stdout(buffer):
                    exec(code, namespace)  # noqa: S102 - generator output only (see gold.py)
                    text = repr(eval(expr, namespace))  # noqa: S307 - same
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            printed = buffer.getvalue()
            if len(printed) > max_stdout:
                out.append((False, None, "printed too much", False, ""))
            elif len(text) > max_value_chars:
                message = f"value repr longer than {max_value_chars} characters"
                out.append((False, None, message, False, ""))
            else:
                out.append((True, text, None, False, printed))
        except _RunTimeout:
            out.append((False, None, "timed out", True, ""))
        except MemoryError:
            out.append((False, None, "MemoryError: out of memory", False, ""))
        except Exception as exc:  # noqa: BLE001 - a failing program is a verdict, not a crash
            out.append((False, None, f"{type(exc).__name__}: {exc}", False, ""))
    return out


def main() -> None:
    """Serve batches until stdin closes."""
    memory_bytes = int(sys.argv[1])
    answers = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    requests = sys.stdin.buffer
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    signal.signal(signal.SIGALRM, _on_alarm)
    sys.setrecursionlimit(400)
    while True:
        head = requests.read(_HEADER.size)
        if len(head) < _HEADER.size:
            return
        batch = pickle.loads(requests.read(_HEADER.unpack(head)[0]))  # noqa: S301 - from GoldPool
        payload = pickle.dumps(run_batch(*batch))
        answers.write(_HEADER.pack(len(payload)) + payload)
        answers.flush()


if __name__ == "__main__":
    main()
