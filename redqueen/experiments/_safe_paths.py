"""Paths inside a run directory that nothing in the directory can redirect.

A run directory is shared between people and machines, so its contents are input like any
other. Two rules keep what it holds from steering where redqueen reads and writes:

* **Ids are names, never paths.** A member id becomes a folder name (``population/<id>/``,
  ``snapshots/step_<n>/<id>/``) only after :func:`check_member_id` accepted it: ASCII letters,
  digits, ``.``, ``_`` and ``-``, starting with a letter or digit, at most 64 characters. No
  separator, no ``..``, no absolute path, no NUL, newline or look-alike letter gets through.
* **No symbolic links.** A run directory holds directories and regular files only.
  :func:`check_tree` refuses anything else before a command touches the directory, and every
  file is opened through :func:`open_in`, which walks from the run directory down with
  ``O_NOFOLLOW`` on each component, so a link planted later is refused too instead of followed.
  The run directory itself may be reached through a link (``runs/latest``); links inside it
  may not. Hard links are not detected: they need write access to the target's file system
  and cannot point at directories.
* **Outputs are written the same way.** :func:`write_in` makes the folders on the way and
  replaces the file from a directory handle, never through a link, so a planted
  ``compare`` or ``plots`` link, or one at ``compare/compare.md``, is refused rather than
  written through.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path, PurePosixPath

__all__ = [
    "STEP_NAME",
    "UnsafePathError",
    "check_links",
    "check_member_id",
    "check_tree",
    "open_in",
    "read_in",
    "step_of",
    "write_in",
]

#: What a member (and snapshot member) id may be.
MEMBER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", re.ASCII)
#: What a checkpoint or snapshot folder is named: ASCII digits only (``int`` and ``str.isdigit``
#: take other scripts' digits, and ``$`` a trailing newline, so neither decides it).
STEP_NAME = re.compile(r"step_([0-9]+)", re.ASCII)

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class UnsafePathError(ValueError):
    """A run directory holds a link, a special file or an id that would be a path (one line)."""


def check_member_id(value: object, where: str | None = None) -> str:
    """Return ``value`` if it is a plain member id, else raise naming it (and ``where`` it was).

    Raises:
        UnsafePathError: If ``value`` is not a string matching :data:`MEMBER_ID`.
    """
    if isinstance(value, str) and MEMBER_ID.fullmatch(value):
        return value
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    prefix = f"{where}: " if where else ""
    raise UnsafePathError(
        f"{prefix}member id {shown} is not a plain name (ASCII letters, digits, '.', '_', '-', "
        "starting with a letter or digit, at most 64 characters); refused before it became a path"
    )


def step_of(name: str) -> int | None:
    """The step of a folder named ``step_<ASCII digits>``, else ``None``."""
    match = STEP_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def _link_error(path: Path) -> UnsafePathError:
    return UnsafePathError(
        f"{path} is a symbolic link; a run directory holds none, so it is refused and not followed"
    )


def _relative_parts(rel: str | os.PathLike[str]) -> tuple[str, ...]:
    parts = PurePosixPath(os.fspath(rel)).parts
    if not parts or parts[0] == "/" or any(p in ("..", ".") for p in parts):
        raise UnsafePathError(f"{rel!s}: not a plain path inside the run directory")
    return parts


def check_links(root: str | os.PathLike[str], *names: str | os.PathLike[str]) -> None:
    """Refuse if any component of ``root/name`` below ``root`` is a symbolic link.

    Components that do not exist yet are fine (they will be created as real ones).

    Raises:
        UnsafePathError: Naming the link.
    """
    base = Path(root)
    for name in names:
        current = base
        for part in _relative_parts(name):
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                break
            if stat.S_ISLNK(mode):
                raise _link_error(current)


def check_tree(root: str | os.PathLike[str]) -> None:
    """Refuse a run directory that holds anything but directories and regular files.

    Entries that vanish while the tree is walked (a running writer renaming its staging
    folders) are skipped.

    Raises:
        UnsafePathError: Naming the first link or special file (FIFO, socket, device) found.
    """
    pending = [Path(root)]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            try:
                if entry.is_symlink():
                    raise _link_error(Path(entry.path))
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                elif not entry.is_file(follow_symlinks=False):
                    raise UnsafePathError(
                        f"{entry.path} is not a regular file or directory; refused"
                    )
            except FileNotFoundError:
                continue


def open_in(
    root: str | os.PathLike[str], rel: str | os.PathLike[str], flags: int, mode: int = 0o644
) -> int:
    """Open ``root/rel`` without following a symbolic link at or below ``root``.

    Each directory between ``root`` and the file is opened relative to the one before with
    ``O_NOFOLLOW``, then the file itself, so no link can redirect the open, whenever it was
    planted.

    Returns:
        The file descriptor (the caller closes it).

    Raises:
        UnsafePathError: Naming the link met on the way.
        OSError: As ``os.open`` (``FileNotFoundError`` for a missing file, ...).
    """
    parts = _relative_parts(rel)
    base = Path(root)
    fd = os.open(base, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        here = base
        for part in parts[:-1]:
            here = here / part
            try:
                inner = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            except OSError as error:
                if _is_link(part, fd):
                    raise _link_error(here) from None
                # Name the folder (a file where it should be, ...), not just its last part.
                raise type(error)(error.errno, error.strerror, str(here)) from None
            os.close(fd)
            fd = inner
        try:
            return os.open(parts[-1], flags | _NOFOLLOW | _CLOEXEC, mode, dir_fd=fd)
        except OSError as error:
            if error.errno == errno.ELOOP or _is_link(parts[-1], fd):
                raise _link_error(base.joinpath(*parts)) from None
            raise
    finally:
        os.close(fd)


def read_in(root: str | os.PathLike[str], rel: str | os.PathLike[str]) -> bytes:
    """The bytes of the regular file ``root/rel``, opened as :func:`open_in` does.

    Raises:
        UnsafePathError: If a component is a link or the file is not a regular file.
        OSError: As ``os.open`` and ``read``.
    """
    fd = open_in(root, rel, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise UnsafePathError(f"{Path(root, rel)} is not a regular file; refused")
        return handle.read()


def write_in(root: str | os.PathLike[str], rel: str | os.PathLike[str], data: bytes) -> Path:
    """Replace the file ``root/rel`` with ``data``, never through a symbolic link below ``root``.

    The folders between ``root`` and the file are made when missing and entered one by one
    with ``O_NOFOLLOW``; the data goes to a hidden temporary file opened the same way, is
    fsynced and renamed over the file from the folder's handle. A link where a folder or the
    file should be is refused (a rename would replace one planted between the check and the
    rename, not write through it). ``root`` itself may be a link.

    Returns:
        ``root/rel``.

    Raises:
        UnsafePathError: Naming the link met on the way.
        OSError: As ``os.open`` and ``write`` (a full disk, no permission, ...).
    """
    parts = _relative_parts(rel)
    base = Path(root)
    target = base.joinpath(*parts)
    fd = os.open(base, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        here = base
        for part in parts[:-1]:
            here = here / part
            try:
                os.mkdir(part, 0o777, dir_fd=fd)
            except FileExistsError:
                pass
            try:
                inner = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            except OSError as error:
                if _is_link(part, fd):
                    raise _link_error(here) from None
                # Name the folder (a file where it should be, ...), not just its last part.
                raise type(error)(error.errno, error.strerror, str(here)) from None
            os.close(fd)
            fd = inner
        name = parts[-1]
        if _is_link(name, fd):
            raise _link_error(target)
        tmp = f".{name}.tmp"
        try:
            out = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW | _CLOEXEC, 0o644, dir_fd=fd
            )
        except OSError as error:
            if error.errno == errno.ELOOP or _is_link(tmp, fd):
                raise _link_error(base.joinpath(*parts[:-1], tmp)) from None
            # Name the file asked for, not the hidden name it is first written under.
            raise type(error)(error.errno, error.strerror, str(target)) from None
        try:
            with os.fdopen(out, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            raise
        try:
            os.fsync(fd)
        except OSError:  # some file systems cannot sync a directory; the rename has happened
            pass
    finally:
        os.close(fd)
    return target


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False
