"""Linux namespaces for the fork server: empty network and IPC, a private tmpfs work directory,
read-only views without access times of what children may read.

The fork server calls these once (network, mounts) or per work directory (tmpfs); its children
inherit the namespaces. Each call reports whether the host allowed it, so the server can run
with whatever subset of isolation the host permits. Standard library only.
"""

from __future__ import annotations

import os

if __package__:
    from . import _kernel
else:  # imported by the fork-server script as a sibling module
    import _kernel

__all__ = [
    "bind_read_only",
    "mount_tmpfs",
    "private_mounts",
    "unmount",
    "unshare_ipc",
    "unshare_network",
]

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
_MS_NOATIME, _MS_BIND, _MS_REC, _MS_PRIVATE = 0x400, 0x1000, 0x4000, 0x40000
_MNT_DETACH = 2


def _succeeds(call, *args: object) -> bool:
    try:
        call(*args)
    except OSError:
        return False
    return True


def unshare_network() -> bool:
    """Move this process (and so every later child) into an empty network namespace.

    Tries a plain network namespace (root), then one inside a new user namespace
    (unprivileged), mapping our own ids one-to-one so that files keep their owner.

    Returns:
        Whether the process now has no network.
    """
    if _succeeds(_kernel.unshare, _CLONE_NEWNET):
        return True
    uid, gid = os.getuid(), os.getgid()
    if not _succeeds(_kernel.unshare, _CLONE_NEWNET | _CLONE_NEWUSER):
        return False
    maps = (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1"))
    try:
        for name, text in maps:
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    except OSError:
        pass
    return True


def unshare_ipc() -> bool:
    """Move this process (and so every later child) into a private, empty IPC namespace.

    SysV shared memory, message queues and semaphores, and POSIX message queues, created in it
    are invisible to the host and are destroyed with the namespace's last process (the fork
    server). Needs root, or the user namespace :func:`unshare_network` may have entered.

    Returns:
        Whether the process now has a private IPC namespace.
    """
    return _succeeds(_kernel.unshare, _CLONE_NEWIPC)


def private_mounts() -> bool:
    """Enter a private mount namespace, so that nothing mounted later reaches the host.

    Returns:
        Whether mounts made by this process are now private.
    """
    if not _succeeds(_kernel.unshare, _CLONE_NEWNS):
        return False
    # Without private propagation a mount would leak to the host: then mount nothing.
    return _succeeds(_kernel.mount, "none", "/", None, _MS_REC | _MS_PRIVATE, None)


def mount_tmpfs(path: str, *, size: int, inodes: int) -> bool:
    """Mount a tmpfs of ``size`` bytes and ``inodes`` files on ``path`` (no exec, suid, devices).

    No access times either: the first listing of a directory would set its access time to the
    moment a program chose, for the next run on the same directory to read.

    Returns:
        Whether the mount succeeded.
    """
    options = f"size={size},nr_inodes={inodes},mode=0700"
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_NOATIME
    return _succeeds(_kernel.mount, "tmpfs", path, "tmpfs", flags, options)


def bind_read_only(path: str) -> bool:
    """Mount ``path`` over itself read-only, without access times, suid programs or devices.

    Call it only inside a private mount namespace (:func:`private_mounts`). A child's first
    read of a file after a change sets the file's access time, where the file system keeps
    them, to a moment the program chose, for a later run to read with ``stat``. In a user
    namespace the kernel locks the access-time flags of the mounts it inherits: then nothing
    stays mounted.

    Returns:
        Whether the mount is in place.
    """
    if not _succeeds(_kernel.mount, path, path, None, _MS_BIND | _MS_REC, None):
        return False
    flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOATIME | _MS_NOSUID | _MS_NODEV
    if _succeeds(_kernel.mount, "none", path, None, flags, None):
        return True
    unmount(path)
    return False


def unmount(path: str) -> None:
    """Detach whatever is mounted on ``path`` (its contents vanish with it)."""
    _succeeds(_kernel.umount2, path, _MNT_DETACH)
