"""Advisory locks of a run directory: one writing process, and readers that see one step.

``flock`` locks belong to an open file and vanish with the process that holds them, however it
ends (SIGKILL, a crash, a power cut for local disks), so a killed run never leaves a lock behind
that someone must clean by hand. They are advisory: they order redqueen's own processes, not
other programs editing the files. On network file systems without ``flock`` support they may
not hold across machines.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from redqueen.experiments._safe_paths import open_in

LOCK_FILE = ".lock"
SNAPSHOT_LOCK_FILE = ".snapshot.lock"


class RunDirectoryBusyError(ValueError):
    """Another live process holds the run directory's lock (the message names its pid)."""


class RunLock:
    """The advisory lock that makes one process the only writer of a run directory.

    An exclusive ``flock`` on ``<dir>/.lock``, taken without waiting; the holder's pid is written
    into the file for the message others get. The kernel drops the lock when its process ends,
    however it ends, so a lock left by a killed run is free again and nothing stale needs cleaning:
    the pid in the file is only ever read while the lock is held by someone.

    Args:
        directory: The run directory (or the staging directory a new run is built in; the lock
            stays held when that directory is renamed).

    Raises:
        RunDirectoryBusyError: If another process holds the lock, or the lock file cannot be
            created.
        UnsafePathError: If ``.lock`` is a symbolic link (it is neither followed nor created).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self._fd: int | None = None
        path = Path(directory) / LOCK_FILE
        try:
            fd = open_in(directory, LOCK_FILE, os.O_RDWR | os.O_CREAT)
        except OSError as error:
            raise RunDirectoryBusyError(
                f"{path}: cannot open the lock file ({error.strerror or error})"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"process {holder}" if holder else "another process"
            raise RunDirectoryBusyError(
                f"run directory {Path(directory)} is in use by {who} (lock {path}); wait for it to "
                "finish or stop it first"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Give the lock up (safe to call twice)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __del__(self) -> None:
        self.release()

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or 0) or None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def writer_active(path: str | os.PathLike[str]) -> bool:
    """Whether some process (this one included) holds the run directory's :class:`RunLock`.

    Raises:
        UnsafePathError: If ``.lock`` is a symbolic link.
    """
    try:
        fd = open_in(path, LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@contextlib.contextmanager
def file_lock(path: Path, mode: int) -> Iterator[None]:
    """Hold ``flock(mode)`` on ``path`` (created if missing, never through a symbolic link)."""
    try:
        fd = open_in(path.parent, path.name, os.O_RDWR | os.O_CREAT)
    except OSError:  # a read-only run directory: nobody can be writing to it
        yield
        return
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)
