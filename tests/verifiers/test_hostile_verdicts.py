"""Hostile programs of the audit's families (G1, G4): frame and gc walks, finalizers, patched
streams and early exits may shape the value a run reports, but never a pass a judge did not
compute from that value; scheduling calls are refused.

``execute`` runs raw source (no static checks), so these hold for any program."""

from __future__ import annotations

import platform

import pytest

from redqueen.verifiers import AnswerStatus, ExecResult, check_answers, make_task

# Collects every frame object the interpreter can be made to leak, and every local it can see.
FRAME_WALK = """
import gc, os, struct
def _leak():
    def g():
        try:
            raise ValueError
        except ValueError as e:
            err = e
    g()
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    found = {}
    for obj in list(gc.garbage):
        frame = obj if type(obj).__name__ == 'frame' else None
        while frame is not None:
            for key, value in list(frame.f_locals.items()):
                found.setdefault(key, value)
            frame = frame.f_back
    return found
def _forge(value):
    found = _leak()
    token = found.get('token', b'')
    body = repr(value).encode()
    for fd in range(3, 8):
        try:
            os.write(fd, b'V' + token + struct.pack('>II', len(body), 0) + body)
        except OSError:
            pass
    os._exit(0)
"""

HOSTILE_ANSWERS = {
    # A raise, after the value was forged from inside.
    "frame_walk_then_exit": FRAME_WALK + "def f(x):\n    _forge(999)\n",
    "finalizer_forges": FRAME_WALK + "class Late:\n    def __del__(self):\n        _forge(999)\n"
    "keep = [Late()]\nkeep.append(keep)\ndef f(x):\n    raise ValueError('wrong')\n",
    "patched_stdout_forges": FRAME_WALK + "import sys\n"
    "sys.stdout.getvalue = lambda: _forge(999)\ndef f(x):\n    raise ValueError('wrong')\n",
    "exit_zero_after_own_frame": "import os, struct\ndef f(x):\n"
    "    body = b'999'\n    os.write(3, b'V' + struct.pack('>I', len(body)) + body)\n"
    "    os._exit(0)\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_ANSWERS))
def test_a_raise_or_forgery_never_becomes_a_correct_answer(executor, name):
    task = make_task("code_f", "def f(x):\n    return x * 2", ["1", "2", "3"], ["2", "4", "6"])
    answer = HOSTILE_ANSWERS[name]
    assert check_answers([(task, answer)], executor) != [AnswerStatus.CORRECT]
    result = executor.execute(answer, "f(3)")
    # At most the value the program chose: never the gold one, never another field's type.
    assert not result.ok or result.value != "6"
    assert executor.execute("def f(x):\n    return x", "f(1)") == ExecResult(True, "1", None)


def test_a_raising_program_is_a_failed_run(executor):
    result = executor.execute("def f(x):\n    raise KeyError('k')", "f(1)")
    assert result == ExecResult(False, None, "KeyError: 'k'", False, "")


SCHEDULING = {
    "setpriority_self": "import os\nos.setpriority(os.PRIO_PROCESS, 0, 19)",
    "sched_setaffinity_self": "import os\nos.sched_setaffinity(0, {0})",
    "sched_setscheduler_self": "import os\nos.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))",
    "sched_setparam_self": "import os\nos.sched_setparam(0, os.sched_param(0))",
}


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp table is x86-64 only")
@pytest.mark.parametrize("name", sorted(SCHEDULING))
def test_scheduling_and_priority_calls_are_refused(executor, name):
    if not executor.features.get("seccomp"):
        pytest.skip("no seccomp on this host")
    result = executor.execute(SCHEDULING[name], "1")
    assert not result.ok and result.error.startswith("PermissionError"), result
