"""Linux namespaces for the fork server: empty network and IPC, a private tmpfs work directory.

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

__all__ = ["mount_tmpfs", "private_mounts", "unmount", "unshare_ipc", "unshare_network"]

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_NOATIME = 0x2, 0x4, 0x8, 0x400
_MS_REC, _MS_PRIVATE = 0x4000, 0x40000
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


def unmount(path: str) -> None:
    """Detach whatever is mounted on ``path`` (its contents vanish with it)."""
    _succeeds(_kernel.umount2, path, _MNT_DETACH)
