"""Linux namespaces for the fork server: empty network and IPC, a private tmpfs work directory.

The fork server calls these once (network, mounts) or per work directory (tmpfs); its children
inherit the namespaces. Each call reports whether the host allowed it, so the server can run
with whatever subset of isolation the host permits. Standard library only.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["mount_tmpfs", "private_mounts", "unmount", "unshare_ipc", "unshare_network"]

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
_MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)


def unshare_network() -> bool:
    """Move this process (and so every later child) into an empty network namespace.

    Tries a plain network namespace (root), then one inside a new user namespace
    (unprivileged), mapping our own ids one-to-one so that files keep their owner.

    Returns:
        Whether the process now has no network.
    """
    if _libc.unshare(_CLONE_NEWNET) == 0:
        return True
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(_CLONE_NEWNET | _CLONE_NEWUSER) != 0:
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
    return _libc.unshare(_CLONE_NEWIPC) == 0


def private_mounts() -> bool:
    """Enter a private mount namespace, so that nothing mounted later reaches the host.

    Returns:
        Whether mounts made by this process are now private.
    """
    if _libc.unshare(_CLONE_NEWNS) != 0:
        return False
    # Without private propagation a mount would leak to the host: then mount nothing.
    return _libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) == 0


def mount_tmpfs(path: str, *, size: int, inodes: int) -> bool:
    """Mount a tmpfs of ``size`` bytes and ``inodes`` files on ``path`` (no exec, suid, devices).

    Returns:
        Whether the mount succeeded.
    """
    options = f"size={size},nr_inodes={inodes},mode=0700".encode()
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    return _libc.mount(b"tmpfs", path.encode(), b"tmpfs", flags, options) == 0


def unmount(path: str) -> None:
    """Detach whatever is mounted on ``path`` (its contents vanish with it)."""
    _libc.umount2(path.encode(), _MNT_DETACH)
