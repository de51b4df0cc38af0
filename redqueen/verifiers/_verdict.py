"""The result channel between a sandboxed child and the host, and the verdict on it.

The child runs untrusted code, so everything it sends is a *claim*: the program owns its whole
process and can write to the result pipe, replace any function the runner uses, or exit at any
moment. Nothing in that process is secret (a secret in the memory of a process that runs
untrusted code can always be read), so the channel carries data only and the verdict is built
so that forging it buys nothing: the host, which never runs program code, decides from
the child's wait status and one strictly parsed frame.

A frame is ``kind (1 byte: V value, E error) + two big-endian u32 lengths + text + stdout``
(UTF-8 with lone surrogates passed through). A run is ``ok`` only when the child exited with
status 0 after writing exactly one well-formed value frame; anything else (a second frame, a
frame followed by a raise or a nonzero exit, a bad length, a death by signal) is a failed run
with a reason. A program can always write a value frame and exit 0 itself, but then the run
reports a value the program chose, which it could as well have returned: every comparison with
an expected value happens outside its process. Sizes are checked against the server's limits,
so the reply's fields always have the types and bounds the host expects.

Standard library only; imported by the executor (and the fork-server script) as a sibling module.
"""

from __future__ import annotations

import os
import signal
import struct

__all__ = ["EXIT_RAISED", "EXIT_VALUE", "LENGTHS", "encode_frame", "verdict"]

#: The two lengths in a frame's header (text, stdout).
LENGTHS = struct.Struct(">II")
_PREFIX = 1 + LENGTHS.size
#: Exit status of a child whose program returned a value, and of one whose program raised.
EXIT_VALUE, EXIT_RAISED = 0, 1
MAX_ERROR_CHARS = 1000


def encode_frame(kind: bytes, text: str, stdout: str) -> bytes:
    """A frame: ``kind`` is ``b"V"`` (text is the value's repr) or ``b"E"``.

    The runner in the child writes the same bytes inline (``_child.run_child``), calling only
    what it bound before the program ran.
    """
    body = text.encode("utf-8", "surrogatepass")
    out = stdout.encode("utf-8", "surrogatepass")
    return kind + LENGTHS.pack(len(body), len(out)) + body + out


def _failure(error: str, *, timed_out: bool = False) -> dict:
    return {"ok": False, "value": None, "error": error, "stdout": "", "timed_out": timed_out}


def _parse(data: bytes) -> tuple[bytes, str, str] | str:
    """``(kind, text, stdout)`` from exactly one well-formed frame, or why it is not one."""
    if len(data) < _PREFIX:
        return "result frame truncated"
    kind = data[:1]
    if kind not in (b"V", b"E"):
        return "result frame of unknown kind"
    n_text, n_out = LENGTHS.unpack_from(data, 1)
    if len(data) != _PREFIX + n_text + n_out:
        return "result frame length mismatch (extra or missing bytes)"
    try:
        text = data[_PREFIX : _PREFIX + n_text].decode("utf-8", "surrogatepass")
        stdout = data[_PREFIX + n_text :].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return "result frame is not UTF-8"
    return kind, text, stdout


def _death(status: int) -> dict | None:
    """The failure for a child killed by a signal (None if it exited)."""
    if not os.WIFSIGNALED(status):
        return None
    sig = os.WTERMSIG(status)
    if sig == signal.SIGXCPU:
        return _failure("CPU time limit exceeded", timed_out=True)
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = str(sig)
    return _failure(f"killed by signal {name}")


def verdict(data: bytes, status: int, *, max_value_chars: int, max_stdout_chars: int) -> dict:
    """The reply for one run, decided from the child's frame bytes and wait status.

    Args:
        data: Everything the child left in its result pipe.
        status: The child's wait status.
        max_value_chars: Longest accepted value repr.
        max_stdout_chars: Most characters of captured stdout.

    Returns:
        ``{"ok", "value", "error", "stdout", "timed_out"}`` with ``ok`` a bool, ``value`` a str
        exactly when ``ok``, ``error`` a str exactly when not, ``stdout`` a str, all bounded.
    """
    death = _death(status)
    if death is not None:
        return death
    code = os.waitstatus_to_exitcode(status)
    if not data:
        return _failure(f"program exited (status {code}) without a result")
    parsed = _parse(data)
    if isinstance(parsed, str):
        return _failure(f"malformed result: {parsed}")
    kind, text, stdout = parsed
    if len(stdout) > max_stdout_chars:
        return _failure(f"program printed more than {max_stdout_chars} characters")
    if kind == b"E":
        if len(text) > MAX_ERROR_CHARS:
            text = text[: MAX_ERROR_CHARS - 3] + "..."
        return {"ok": False, "value": None, "error": text, "stdout": stdout, "timed_out": False}
    if code != EXIT_VALUE:
        return _failure(f"malformed result: program exited (status {code}) after its value")
    if len(text) > max_value_chars:
        return _failure(f"value repr longer than {max_value_chars} characters")
    return {"ok": True, "value": text, "error": None, "stdout": stdout, "timed_out": False}
