"""SysV and POSIX IPC: no segment, queue or semaphore a program creates survives its run.

Seccomp refuses the IPC system calls and the fork server lives in a private IPC namespace, so
the host's tables (``/proc/sysvipc/*``, ``/dev/mqueue``, ``/dev/shm``) are the same before and
after hostile runs and after :meth:`Executor.close`.
"""

from __future__ import annotations

import ctypes
import os
import platform

import pytest

from redqueen.verifiers import Executor
from redqueen.verifiers._seccomp import Seccomp, build_filter
from tests.verifiers.conftest import in_child

_IPC_RMID = 0
_PREAMBLE = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
PROGRAMS = {
    "shmget_400mib": "shmid = libc.shmget(0, 400 * 2**20, 0o1600)\n"
    "addr = libc.shmat(shmid, None, 0) if shmid >= 0 else -1\n"
    "r = shmid",
    "shmget_keyed": "r = libc.shmget(0x5251, 4096, 0o1600)",
    "msgget": "r = libc.msgget(0x5252, 0o1600)",
    "semget": "r = libc.semget(0x5253, 1, 0o1600)",
    "mq_open": "r = libc.mq_open(b'/redqueen-ipc-test', os.O_CREAT | os.O_RDWR, 0o600, None)",
    "shm_open": "r = libc.shm_open(b'/redqueen-ipc-test', os.O_CREAT | os.O_RDWR, 0o600)",
}


def _host_ipc() -> dict[str, list[str]]:
    """The host's IPC objects: SysV tables and the POSIX queue and shared-memory directories."""
    snapshot = {}
    for kind in ("shm", "msg", "sem"):
        path = f"/proc/sysvipc/{kind}"
        if os.path.exists(path):
            with open(path) as handle:
                snapshot[kind] = sorted(handle.read().splitlines()[1:])
    for path in ("/dev/mqueue", "/dev/shm"):
        if os.path.isdir(path):
            snapshot[path] = sorted(os.listdir(path))
    return snapshot


def _remove_new_sysv(before: dict, after: dict) -> None:
    """Clean up what a failing run left (so one failure does not pin host memory)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for kind in ("shm", "msg", "sem"):
        for row in set(after.get(kind, ())) - set(before.get(kind, ())):
            ident = int(row.split()[1])
            if kind == "sem":
                libc.semctl(ident, 0, _IPC_RMID)
            else:
                getattr(libc, f"{kind}ctl")(ident, _IPC_RMID, None)


def test_no_ipc_object_survives_a_run_or_close():
    before = _host_ipc()
    try:
        with Executor(workers=2, timeout=2.0) as ex:
            results = ex.execute_many([(_PREAMBLE + body, "r") for body in PROGRAMS.values()])
            for name, result in zip(PROGRAMS, results, strict=True):
                assert not result.ok or int(result.value) < 0, (name, result)
            assert _host_ipc() == before
            healthy = ex.execute("def f(x):\n    return x + 1", "f(1)")
            assert healthy.ok and healthy.value == "2"
        assert _host_ipc() == before
    finally:
        _remove_new_sysv(before, _host_ipc())


def test_server_has_its_own_ipc_namespace():
    with Executor(workers=1, timeout=1.0) as ex:
        if not ex.features["ipc_namespace"]:
            pytest.skip("this host does not allow a private IPC namespace")
        server = os.readlink(f"/proc/{ex._servers[0].pid}/ns/ipc")
        assert server != os.readlink("/proc/self/ns/ipc")


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp table is x86-64 only")
def test_seccomp_refuses_the_ipc_calls():
    program = build_filter(allow_fs_writes=True)

    def body() -> int:
        Seccomp(program).install()
        libc = ctypes.CDLL(None, use_errno=True)
        calls = [
            lambda: libc.shmget(0, 4096, 0o1600),
            lambda: libc.msgget(0, 0o1600),
            lambda: libc.semget(0, 1, 0o1600),
            lambda: libc.mq_open(b"/redqueen-seccomp", os.O_CREAT | os.O_RDWR, 0o600, None),
        ]
        for k, call in enumerate(calls):
            ctypes.set_errno(0)
            if call() != -1 or ctypes.get_errno() != 1:  # EPERM
                return 1 + k
        return 0

    before = _host_ipc()
    assert in_child(body) == 0
    assert _host_ipc() == before
