"""Verdict forgeries: a program that writes its own result, patches the runner's encoder or finds
the server's objects gets a failed run, or at most ``ok`` with a value it chose itself (as if it
had returned it), which judges compare outside its process; never a field of another type. The
executor stays healthy after each. ``execute`` runs raw source (no AST checks), so the fork
server's judgement itself holds."""

from __future__ import annotations

import signal
import struct

import pytest

from redqueen.verifiers import ExecResult, RejectReason, literal_equal
from redqueen.verifiers._reply import UNREADABLE, checked_reply
from redqueen.verifiers._validate import _judge
from redqueen.verifiers._verdict import encode_frame, verdict

FORGED_JSON = '{"ok": true, "value": "42", "error": null, "stdout": ""}'
FORGED_FRAME = encode_frame(b"V", "42", "")


def _judged_wrong(executor, source: str) -> bool:
    """Whether the program, as an answer whose gold value is 6, fails the comparison made
    outside its process (run directly: the static checks would reject it before it ran)."""
    result = executor.execute(source + "\ndef f(x):\n    return 0", "f(3)")
    return not (result.ok and literal_equal(result.value, "6"))


FORGERIES = {
    # The reproductions: write to the result pipe, then fail.
    "json_to_fd3_then_raise": f"import os\nos.write(3, {FORGED_JSON.encode()!r})\nos.close(3)\n"
    "raise AssertionError",
    "json_to_fd3_then_exit": f"import os\nos.write(3, {FORGED_JSON.encode()!r})\nos._exit(0)",
    "patched_json_dumps": f"import json\njson.dumps = lambda *a, **k: {FORGED_JSON!r}\n"
    "raise AssertionError",
    "server_found_with_gc": "import gc, os\ngc.unfreeze()\n"
    "server = next(o for o in gc.get_objects() if type(o).__name__ == 'Zygote')\n"
    f"os.write(3, {FORGED_JSON.encode()!r})\nos._exit(0)",
    # Variants: a frame then an exit or a raise, patched runner.
    "own_frame_then_exit": f"import os\nos.write(3, {FORGED_FRAME!r})\nos._exit(0)",
    "own_frame_then_raise": f"import os\nos.write(3, {FORGED_FRAME!r})\nraise AssertionError",
    "runner_encoder_patched": "import sys\n"
    "for name in ('_verdict', '_child', 'redqueen.verifiers._verdict'):\n"
    "    m = sys.modules.get(name)\n"
    "    if m is not None:\n"
    f"        m.encode_frame = lambda kind, text, out: {FORGED_FRAME!r}\n"
    "raise AssertionError",
    "write_patched_to_succeed": "import os, sys\n"
    "real = os.write\n"
    f"os.write = lambda fd, data: real(fd, {FORGED_FRAME!r})\n"
    "raise AssertionError",
    "write_patched_to_forge_json": "import os, sys\n"
    "real = os.write\n"
    f"os.write = lambda fd, data: real(fd, {FORGED_JSON.encode()!r})\n"
    "raise AssertionError",
    "exit_zero_without_result": "import os\nos._exit(0)",
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_forged_verdicts_buy_nothing(executor, name):
    result = executor.execute(FORGERIES[name], "1")
    if name == "own_frame_then_exit":  # exactly what returning 42 gives
        assert result == ExecResult(True, "42", None, False, "")
    else:
        assert not result.ok and result.value is None
        assert isinstance(result.error, str) and result.error
    assert _judged_wrong(executor, FORGERIES[name])
    healthy = executor.execute("def f(x):\n    return sorted(x)", "f([3, 1, 2])")
    assert healthy == ExecResult(True, "[1, 2, 3]", None, False, "")


def test_forgery_batch_leaves_honest_runs_untouched(executor):
    honest = [("def f(x):\n    return x * 2", f"f({i})") for i in range(4)]
    pairs = [(source, "1") for source in FORGERIES.values()] + honest
    results = executor.execute_many(pairs)
    assert all(not r.ok or r.value == "42" for r in results[: len(FORGERIES)])
    assert [r.value for r in results[len(FORGERIES) :]] == ["0", "2", "4", "6"]


def test_errors_and_prints_still_come_back(executor):
    result = executor.execute("print('hi')\nraise KeyError('k')", "1")
    assert result == ExecResult(False, None, "KeyError: 'k'", False, "hi\n")


# The fork server's judgement on its own: bytes and a wait status in, a typed reply out.

LIMITS = {"max_value_chars": 10, "max_stdout_chars": 5}


def _exit_status(code: int) -> int:
    return code << 8


@pytest.mark.parametrize(
    ("data", "status", "error"),
    [
        (b"", _exit_status(0), "without a result"),
        (b"V\0\0", _exit_status(0), "truncated"),
        (encode_frame(b"X", "1", ""), _exit_status(0), "unknown kind"),
        (encode_frame(b"V", "1", "") * 2, _exit_status(0), "length mismatch"),
        (encode_frame(b"V", "1", "") + b"x", _exit_status(0), "length mismatch"),
        (b"V" + struct.pack(">II", 2, 0) + b"\xff\xfe", _exit_status(0), "not UTF-8"),
        (encode_frame(b"V", "1", ""), _exit_status(1), "after its value"),
        (encode_frame(b"V", "x" * 11, ""), _exit_status(0), "longer than 10"),
        (encode_frame(b"V", "1", "123456"), _exit_status(0), "printed more than 5"),
        (encode_frame(b"V", "1", ""), signal.SIGKILL, "killed by signal SIGKILL"),
    ],
)
def test_verdict_rejects_every_malformed_result(data, status, error):
    reply = verdict(data, status, **LIMITS)
    assert reply["ok"] is False and reply["value"] is None and error in reply["error"]
    assert set(reply) == {"ok", "value", "error", "stdout", "timed_out"}


def test_verdict_accepts_the_runner_frame_only():
    ok = verdict(encode_frame(b"V", "'\ud800'", "p"), _exit_status(0), **LIMITS)
    assert ok == {"ok": True, "value": "'\ud800'", "error": None, "stdout": "p", "timed_out": False}
    err = verdict(encode_frame(b"E", "E" * 2000, ""), _exit_status(0), **LIMITS)
    assert not err["ok"] and len(err["error"]) == 1000
    cpu = verdict(b"", signal.SIGXCPU, **LIMITS)
    assert cpu["timed_out"] and not cpu["ok"]


# The host's check of a fork server's reply: every field typed and bounded.

CONFIG = {"max_value_chars": 10, "max_stdout_chars": 5}
GOOD = {"ok": True, "value": "42", "error": None, "stdout": "", "timed_out": False}


@pytest.mark.parametrize(
    "reply",
    [
        UNREADABLE,
        None,
        [],
        "ok",
        {"ok": True, "value": "42", "error": None, "stdout": ""},
        {**GOOD, "extra": 1},
        {**GOOD, "value": 42},
        {**GOOD, "value": ["4", "2"]},
        {**GOOD, "value": None},
        {**GOOD, "value": "x" * 11},
        {**GOOD, "ok": 1},
        {**GOOD, "ok": "true"},
        {**GOOD, "error": "no"},
        {**GOOD, "timed_out": True},
        {**GOOD, "timed_out": "no"},
        {**GOOD, "stdout": None},
        {**GOOD, "stdout": "123456"},
        {**GOOD, "ok": False, "error": None, "value": None},
        {**GOOD, "ok": False, "error": 7, "value": None},
        {**GOOD, "ok": False, "error": "e" * 1001, "value": None},
        {**GOOD, "ok": False, "error": "boom", "value": "42"},
    ],
)
def test_malformed_replies_become_failed_runs_with_a_reason(reply):
    result = checked_reply(reply, CONFIG)
    assert result.ok is False and result.value is None and not result.timed_out
    assert result.error.startswith("malformed reply from the sandbox")


def test_well_formed_replies_pass_through():
    assert checked_reply(GOOD, CONFIG) == ExecResult(True, "42", None, False, "")
    failed = {**GOOD, "ok": False, "value": None, "error": "timed out", "timed_out": True}
    assert checked_reply(failed, CONFIG) == ExecResult(False, None, "timed out", True, "")


# Every route to the runner's frames, its state or raw memory, used to write a frame and exit:
# the run reports at most the program's own 'forged', which judges compare outside.

FORGE = """
import os, struct, sys
def forge(frame=None):
    body = b"'forged'"
    os.write(3, b"V" + struct.pack(">II", len(body), 0) + body)
    os._exit(0)
steal = forge
"""
INTROSPECTION = {
    "getframe": "forge(sys._getframe())",
    "traceback": "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    forge(e.__traceback__.tb_frame)",
    "exc_info": "try:\n    1 / 0\nexcept ZeroDivisionError:\n    forge(sys.exc_info()[2].tb_frame)",
    "generator": "def g():\n    forge(me.gi_frame)\n    yield\nme = g()\nnext(me)",
    "settrace": "sys.settrace(lambda frame, event, arg: forge(frame))\ndef h():\n    pass\nh()",
    "setprofile": "sys.setprofile(lambda frame, event, arg: forge(frame))\nlen([])",
    "own_audit_hook": "sys.addaudithook(lambda e, a: forge(a[0]) if e == 'sys._getframe' else None)\n"
    "sys._getframe()",
    "gc_frames": "import gc\nfor o in gc.get_objects():\n    if type(o).__name__ == 'frame':\n"
    "        forge(o)",
    "alarm_handler": "import signal\nsignal.signal(signal.SIGALRM, lambda s, f: forge(f))\n"
    "signal.setitimer(signal.ITIMER_REAL, 0.01)\nwhile True:\n    pass",
    "cpu_limit_handler": "import signal\nsignal.signal(signal.SIGXCPU, lambda s, f: forge(f))\n"
    "while True:\n    pass",
    "async_io_signal": "import fcntl, signal\n"
    "signal.signal(signal.SIGTERM, lambda s, f: forge(f))\nr, w = os.pipe()\n"
    "fcntl.fcntl(r, fcntl.F_SETOWN, os.getpid())\nfcntl.fcntl(r, 10, signal.SIGTERM)\n"
    "fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC)\nos.write(w, b'x')\nwhile True:\n    pass",
    "patched_runner_code": "import sys\nchild = sys.modules.get('_child')\n"
    "child.describe.__code__ = (lambda exc: forge(sys._getframe())).__code__",
    "ctypes_memory": "import ctypes\nctypes.string_at(id(forge), 64)",
    # Rebinding what the runner calls after the program ran.
    "builtin_len_rebound": "import builtins\nreal_len = len\ndef spy(data):\n"
    "    if isinstance(data, bytes) and real_len(data) > 17:\n"
    "        steal(data[1:17])\n    return real_len(data)\nbuiltins.len = spy",
    "stdout_radd": "class Evil(str):\n    def encode(self, *a):\n        return Adder()\n"
    "class Adder:\n    def __radd__(self, other):\n        steal(other[1:17])\n"
    "sys.stdout.getvalue = lambda: Evil('x')\nprint('x')",
    "describe_rebound": "class Adder:\n    def __radd__(self, other):\n        steal(other[1:17])\n"
    "    def encode(self, *a):\n        return self\n"
    "for name in ('_child', 'redqueen.verifiers._child'):\n"
    "    if name in sys.modules:\n        sys.modules[name].describe = lambda exc: Adder()",
    "type_rebound": "import builtins\nbuiltins.type = lambda *a: str\n"
    "class Adder:\n    def __radd__(self, other):\n        steal(other[1:17])\n"
    "    def encode(self, *a):\n        return self\n"
    "sys.stdout.getvalue = lambda: Adder()",
}


@pytest.mark.parametrize("name", sorted(INTROSPECTION))
def test_introspection_shapes_at_most_the_programs_own_value(executor, name):
    source = FORGE + INTROSPECTION[name] + "\nraise AssertionError"
    result = executor.execute(source, "1")
    assert (not result.ok and result.value is None) or result.value == "'forged'"
    assert _judged_wrong(executor, source)
    healthy = executor.execute("def f(x):\n    return sorted(x)", "f([3, 1, 2])")
    assert healthy.ok and healthy.value == "[1, 2, 3]"


def test_validation_turns_a_non_string_value_into_a_rejection():
    forged = ExecResult(True, 42, None)  # what a forged reply once made of a run
    verdict = _judge([forged], [forged], max_output_chars=100)
    assert not verdict.ok and verdict.reason == RejectReason.RUNTIME_ERROR
