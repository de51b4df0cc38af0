"""The kernel layers on their own: the seccomp filter and Landlock, each in a throwaway child."""

from __future__ import annotations

import os
import platform
import socket

import pytest

from redqueen.verifiers._seccomp import Landlock, Seccomp, build_filter, landlock_abi
from tests.verifiers.conftest import in_child


def _refused(action) -> bool:
    try:
        action()
    except PermissionError:
        return True
    return False


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp table is x86-64 only")
def test_seccomp_without_landlock_refuses_writes_sockets_and_processes(tmp_path):
    existing = tmp_path / "existing.txt"
    existing.write_text("data")
    program = build_filter(allow_fs_writes=False)
    assert program is not None and len(program) % 8 == 0

    def body() -> int:
        Seccomp(program).install()
        checks = [
            _refused(lambda: open(tmp_path / "new.txt", "w")),
            _refused(lambda: open(existing, "a")),
            _refused(lambda: os.unlink(existing)),
            _refused(lambda: os.mkdir(tmp_path / "d")),
            _refused(lambda: os.chmod(existing, 0o600)),
            _refused(lambda: socket.socket()),
            _refused(os.fork),
            _refused(lambda: os.kill(os.getppid(), 0)),
            open(existing).read() == "data",  # reading is untouched
        ]
        return 0 if all(checks) else 1 + checks.index(False)

    assert in_child(body) == 0
    assert existing.read_text() == "data" and sorted(p.name for p in tmp_path.iterdir()) == [
        "existing.txt"
    ]


@pytest.mark.skipif(landlock_abi() < 1, reason="Landlock is not available on this kernel")
def test_landlock_confines_writes_to_one_directory(tmp_path):
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    landlock = Landlock(landlock_abi())

    def body() -> int:
        landlock.restrict(landlock.prepare(str(inside)))
        (inside / "ok.txt").write_text("fine")
        try:
            (outside / "no.txt").write_text("escaped")
        except PermissionError:
            return 0
        return 1

    assert in_child(body) == 0
    assert (inside / "ok.txt").read_text() == "fine" and not (outside / "no.txt").exists()


def _all_refused(calls: dict[int, tuple]) -> bool:
    """Whether, in a child under the filter, each system call ``number: args`` fails with EPERM
    (the filter's answer, which the kernel never gives for the bad arguments these tests pass)."""
    import ctypes

    program = build_filter(allow_fs_writes=True)
    assert program is not None

    def body() -> int:
        libc = ctypes.CDLL(None, use_errno=True)
        Seccomp(program).install()
        for i, (number, args) in enumerate(calls.items(), 1):
            if libc.syscall(number, *args) != -1 or ctypes.get_errno() != 1:
                return i
        return 0

    return in_child(body) == 0


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp table is x86-64 only")
def test_seccomp_refuses_metadata_changes_by_directory_and_path():
    """setxattrat, removexattrat and file_setattr (newer kernels) change what setxattr and
    chattr do; with null pointers the kernel answers EFAULT or ENOSYS, the filter EPERM."""
    calls = {
        463: (-100, None, 0, None, None, 0),
        466: (-100, None, 0, None),
        469: (-100, None, None, 0, 0),
    }

    assert _all_refused(calls)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp table is x86-64 only")
def test_seccomp_refuses_the_mount_api_by_descriptor():
    """open_tree, move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr, open_tree_attr,
    quotactl_fd, statmount, listmount and lsm_set_self_attr change or list mounts and security
    attributes without ``mount``; with bad arguments the kernel answers EFAULT, EINVAL, EBADF or
    ENOSYS, the filter EPERM before it looks at them."""
    calls = {
        428: (-100, None, 0),
        429: (-100, None, -100, None, 0),
        430: (None, 0),
        431: (-1, 0, None, None, 0),
        432: (-1, 0, 0),
        433: (-100, None, 0),
        442: (-100, None, 0, None, 0),
        443: (-1, 0, 0, None),
        457: (None, None, 0, 0),
        458: (None, None, 0, 0),
        460: (0, None, 0, 0),
        467: (-100, None, 0, None, 0),
    }

    assert _all_refused(calls)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp table is x86-64 only")
def test_seccomp_refuses_io_priority_changes():
    """ioprio_set has no wrapper in ``os``, and a sandboxed program cannot load ``ctypes``
    (``test_raw_memory.py``), so the filter's refusal is checked here, outside the executor."""
    import ctypes

    program = build_filter(allow_fs_writes=True)
    assert program is not None

    def body() -> int:
        libc = ctypes.CDLL(None, use_errno=True)
        allowed = libc.syscall(251, 1, 0, 3 << 13)  # ioprio_set(WHO_PROCESS, self, IDLE)
        Seccomp(program).install()
        refused = libc.syscall(251, 1, 0, 3 << 13) != 0 and ctypes.get_errno() == 1
        return 0 if (allowed == 0 and refused) else 1

    assert in_child(body) == 0


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp table is x86-64 only")
def test_seccomp_refuses_executable_mappings_so_no_new_native_code_loads():
    import mmap

    program = build_filter(allow_fs_writes=True)
    assert program is not None

    def body() -> int:
        Seccomp(program).install()
        checks = [
            _refused(lambda: mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)),
            mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE) is not None,
        ]
        try:
            import _testbuffer  # noqa: F401  an extension module nothing here had loaded
        except ImportError:
            checks.append(True)
        except Exception:
            checks.append(False)
        else:
            checks.append(False)
        return 0 if all(checks) else 1 + checks.index(False)

    import sys

    if "_testbuffer" in sys.modules:
        pytest.skip("_testbuffer is already loaded in this process")
    assert in_child(body) == 0
