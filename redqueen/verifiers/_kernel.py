"""The sandbox's kernel calls, through the compiled ``_kernelcalls`` module where it was built.

The fork server needs a few calls the standard library does not wrap (seccomp, Landlock,
``PR_SET_PDEATHSIG``, ``unshare``, ``mount``). Made through ``ctypes``, they would leave
``ctypes`` in every sandboxed child, and with it raw memory reads that a program can rebuild
from the type objects alone. ``_kernelcalls`` (a small C module built with the package) makes
each call and nothing else; :data:`NATIVE` says whether it is in use. Where it was not built
(a platform without a compiler), the same functions go through ``ctypes``, and the executor
reports ``raw_memory_unloaded: False``.

Every function raises ``OSError`` on failure. Standard library only (plus the sibling
``_kernelcalls``); imported by the fork-server script as a sibling module.
"""

from __future__ import annotations

import os
import struct

try:
    if __package__:
        from . import _kernelcalls as _native
    else:  # imported by the fork-server script as a sibling module
        import _kernelcalls as _native
    NATIVE = hasattr(_native, "seccomp_filter")
except ImportError:
    NATIVE = False

__all__ = [
    "NATIVE",
    "get_no_new_privs",
    "get_seccomp",
    "landlock_abi",
    "landlock_add_rule",
    "landlock_create_ruleset",
    "landlock_restrict_self",
    "mount",
    "seccomp_filter",
    "set_no_new_privs",
    "set_pdeathsig",
    "umount2",
    "unshare",
]

if NATIVE:
    get_no_new_privs = _native.get_no_new_privs
    get_seccomp = _native.get_seccomp
    landlock_abi = _native.landlock_abi
    landlock_add_rule = _native.landlock_add_rule
    landlock_create_ruleset = _native.landlock_create_ruleset
    landlock_restrict_self = _native.landlock_restrict_self
    mount = _native.mount
    seccomp_filter = _native.seccomp_filter
    set_no_new_privs = _native.set_no_new_privs
    set_pdeathsig = _native.set_pdeathsig
    umount2 = _native.umount2
    unshare = _native.unshare
else:
    import ctypes

    _PR_SET_PDEATHSIG, _PR_GET_SECCOMP, _PR_SET_SECCOMP = 1, 21, 22
    _PR_SET_NO_NEW_PRIVS, _PR_GET_NO_NEW_PRIVS = 38, 39
    _SECCOMP_MODE_FILTER = 2
    _SYS_LANDLOCK = (444, 445, 446)  # create_ruleset, add_rule, restrict_self
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.syscall.restype = ctypes.c_long

    class _SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    def _checked(result: int, what: str) -> int:
        if result < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{what}: {os.strerror(errno)}")
        return result

    def set_pdeathsig(signal: int) -> None:
        _checked(_libc.prctl(_PR_SET_PDEATHSIG, signal, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")

    def set_no_new_privs() -> None:
        _checked(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")

    def get_no_new_privs() -> int:
        return _checked(_libc.prctl(_PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), "prctl")

    def get_seccomp() -> int:
        return _checked(_libc.prctl(_PR_GET_SECCOMP, 0, 0, 0, 0), "prctl")

    def seccomp_filter(program: bytes) -> None:
        buffer = ctypes.create_string_buffer(program, len(program))
        fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
        set_no_new_privs()
        _checked(
            _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0),
            "prctl(PR_SET_SECCOMP)",
        )

    def landlock_abi() -> int:
        version = _libc.syscall(_SYS_LANDLOCK[0], None, ctypes.c_size_t(0), 1)
        return max(int(version), 0)

    def landlock_create_ruleset(attr: bytes) -> int:
        fd = _libc.syscall(_SYS_LANDLOCK[0], attr, ctypes.c_size_t(len(attr)), 0)
        return int(_checked(fd, "landlock_create_ruleset"))

    def landlock_add_rule(ruleset_fd: int, rule_type: int, rule: bytes) -> None:
        _checked(_libc.syscall(_SYS_LANDLOCK[1], ruleset_fd, rule_type, rule, 0), "landlock")

    def landlock_restrict_self(ruleset_fd: int) -> None:
        _checked(_libc.syscall(_SYS_LANDLOCK[2], ruleset_fd, 0), "landlock_restrict_self")

    def unshare(flags: int) -> None:
        _checked(_libc.unshare(flags), "unshare")

    def mount(
        source: str | None, target: str, fstype: str | None, flags: int, data: str | None
    ) -> None:
        def encode(text: str | None) -> bytes | None:
            return None if text is None else text.encode()

        result = _libc.mount(
            encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)
        )
        _checked(result, "mount")

    def umount2(target: str, flags: int) -> None:
        _checked(_libc.umount2(target.encode(), flags), "umount2")


def path_beneath_rule(access: int, parent_fd: int) -> bytes:
    """Landlock's ``struct landlock_path_beneath_attr`` (packed: u64 access, s32 fd)."""
    return struct.pack("=Qi", access, parent_fd)
