"""Hostile programs: each must fail inside its time bound, leave the host untouched, and leave
the executor working. ``execute`` runs raw source (no AST checks), so the sandbox itself holds."""

from __future__ import annotations

import os
import signal
import socket
import time

import psutil
import pytest

from redqueen.verifiers import Executor

TIMEOUT = 0.5
BOUND = TIMEOUT + 3.0  # wall-clock allowance per hostile program on a loaded 2-core machine


@pytest.fixture(scope="module")
def sandbox():
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    ex = Executor(workers=2, timeout=TIMEOUT, memory_mb=128)
    yield ex
    ex.close()
    after = {p.pid for p in psutil.Process().children(recursive=True)}
    assert after <= before, f"processes left behind: {after - before}"


def _run(sandbox, source, expr="1"):
    start = time.monotonic()
    result = sandbox.execute(source, expr)
    elapsed = time.monotonic() - start
    assert elapsed < BOUND, f"took {elapsed:.1f}s"
    return result


def _still_works(sandbox):
    result = sandbox.execute("def f(x):\n    return sorted(x)", "f([3, 1, 2])")
    assert result.ok and result.value == "[1, 2, 3]"


HOSTILE_FAILURES = {
    "infinite_loop": "while True:\n    pass",
    "sleep_forever": "import time\ntime.sleep(3600)",
    "ignore_sigterm": "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass",
    "deep_recursion": "def g(n):\n    return g(n + 1)\ng(0)",
    "deep_recursion_raised_limit": "import sys\nsys.setrecursionlimit(10**7)\ndef g(n):\n    return g(n + 1) + 1\ng(0)",
    "fork_bomb": "import os\nwhile True:\n    os.fork()",
    "thread_bomb": "import threading\nfor _ in range(1000):\n    threading.Thread(target=lambda: None).start()",
    "memory_bomb": "x = bytearray(10 ** 10)",
    "memory_growth": "xs = []\nwhile True:\n    xs.append(' ' * 10 ** 6)",
    "print_100mb": "print('x' * 100_000_000)",
    "print_loop": "while True:\n    print('y' * 1000)",
    "os_exit": "import os\nos._exit(0)",
    "sys_exit": "import sys\nsys.exit(0)",
    "segfault": "import ctypes\nctypes.string_at(0)",
    "kill_own_group": "import os, signal\nos.killpg(0, signal.SIGKILL)",
    "disk_fill": "i = 0\nwhile True:\n    open(f'f{i}', 'w').write('x' * 60000)\n    i += 1",
    "exec_binary": "import os\nos.execv('/bin/sh', ['sh', '-c', 'sleep 100'])",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_FAILURES))
def test_hostile_program_fails_within_bound(sandbox, name):
    result = _run(sandbox, HOSTILE_FAILURES[name])
    assert not result.ok and result.value is None and result.error
    if name in ("infinite_loop", "sleep_forever", "ignore_sigterm"):
        assert result.timed_out
    _still_works(sandbox)


def test_cannot_write_outside_the_sandbox(sandbox, tmp_path):
    tmp_path.chmod(0o777)  # even a world-writable directory stays out of reach
    target = tmp_path / "escaped.txt"
    attempts = [
        f"open({str(target)!r}, 'w').write('x')",
        f"import os\nos.close(os.open({str(target)!r}, os.O_CREAT | os.O_WRONLY))",
        f"import os\nos.mkdir({str(tmp_path / 'dir')!r})",
        f"import shutil\nshutil.copy('/etc/hostname', {str(target)!r})",
    ]
    for source in attempts:
        assert not _run(sandbox, source).ok
    assert list(tmp_path.iterdir()) == []
    _still_works(sandbox)


def test_cannot_remove_or_chmod_host_files(sandbox, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    victim.chmod(0o666)
    for source in (
        f"import os\nos.remove({str(victim)!r})",
        f"import os\nos.chmod({str(victim)!r}, 0)",
        f"open({str(victim)!r}, 'a').write('more')",
        f"getattr(__builtins__, '__imp' + 'ort__')('o' + 's').remove({str(victim)!r})",
    ):
        assert not _run(sandbox, source).ok
    assert victim.read_text() == "keep" and (victim.stat().st_mode & 0o777) == 0o666


def test_no_network_connection_reaches_a_host_listener(sandbox):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    try:
        for source in (
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=0.2)",
            f"import _socket\ns = _socket.socket()\ns.connect(('127.0.0.1', {port}))",
            "import socket\nsocket.socket(socket.AF_UNIX, socket.SOCK_STREAM)",
        ):
            assert not _run(sandbox, source).ok
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_shell_and_import_tricks_change_nothing(sandbox, tmp_path):
    marker = tmp_path / "marker"
    shell = f"touch {marker}"
    for source, expr in (
        (f"import os\nr = os.system({shell!r})", "r"),
        (f"r = __import__('o' + 's').system({shell!r})", "r"),
        (f"import subprocess\nr = subprocess.run(['touch', {str(marker)!r}]).returncode", "r"),
        (f"r = getattr(__builtins__, 'ev' + 'al')(\"__import__('os').system({shell!r})\")", "r"),
    ):
        result = _run(sandbox, source, expr)
        assert not result.ok or result.value != "0"
    assert not marker.exists()
    _still_works(sandbox)


def test_subclasses_walk_cannot_escape(sandbox, tmp_path):
    marker = tmp_path / "walked"
    source = (
        "wrap = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]\n"
        f"r = wrap.__init__.__globals__['system']('touch {marker}')"
    )
    result = _run(sandbox, source, "r")
    assert not result.ok or result.value != "0"
    assert not marker.exists()


def test_cannot_signal_the_host(sandbox):
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda *_: received.append(1))
    try:
        for source in (
            f"import os, signal\nos.kill({os.getpid()}, signal.SIGUSR1)",
            f"import os, signal\nos.killpg(os.getpgid({os.getpid()}), signal.SIGUSR1)",
            "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
        ):
            assert not _run(sandbox, source).ok
        time.sleep(0.05)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert received == []
    _still_works(sandbox)


def test_a_batch_of_hostile_programs_runs_in_parallel_and_leaves_the_executor_sound(sandbox):
    sources = list(HOSTILE_FAILURES.values())
    start = time.monotonic()
    results = sandbox.execute_many([(s, "1") for s in sources])
    assert time.monotonic() - start < BOUND * len(sources) / 2
    assert not any(r.ok for r in results)
    _still_works(sandbox)
