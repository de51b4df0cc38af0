"""Kernel-level confinement for sandboxed children: a seccomp-BPF deny list and Landlock.

This module is imported by the fork-server script (``_zygote.py``) as a sibling module, so it
uses only the standard library. Python-level tricks (replacing ``open`` or ``socket``) can be
undone by a hostile program through ``object.__subclasses__()`` walks; the kernel filters
installed here cannot, because a process can only add filters, never remove them.

Seccomp (x86-64 only, where the syscall table below was checked) refuses with ``EPERM``:
process creation and ``exec``, sockets, SysV and POSIX IPC, scheduling and priority changes (any
process of the user could be named), signals to other processes and
handlers for signals a program can raise on itself,
``ptrace``, privilege and limit changes, namespaces and mounts, terminal injection ioctls,
unnamed files (``O_TMPFILE``), and every filesystem mutation
(file creation, removal and writing are left to Landlock where it confines them to the sandbox
directory; metadata changes such as chmod, which Landlock does not cover, are always refused). Landlock (Linux >= 5.13)
limits filesystem writes to the private working directory and reads to that directory and the
interpreter's own files; where the kernel lacks Landlock, writes are refused by seccomp and
reads fall back to file modes (the server reports ``read_confinement: False``).
"""

from __future__ import annotations

import platform
import struct

if __package__:
    from . import _kernel
    from ._landlock import Landlock, landlock_abi
else:  # imported by the fork-server script as a sibling module
    import _kernel
    from _landlock import Landlock, landlock_abi

__all__ = ["Landlock", "Seccomp", "build_filter", "landlock_abi"]


_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_EPERM = 0x00050000 | 1
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000

# BPF opcodes.
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

# x86-64 syscall numbers refused outright.
_DENY_X86_64 = {
    # processes and programs
    "clone": 56,
    "fork": 57,
    "vfork": 58,
    "execve": 59,
    "execveat": 322,
    "clone3": 435,
    # networking
    "socket": 41,
    "socketpair": 53,
    "connect": 42,
    "bind": 49,
    "listen": 50,
    "accept": 43,
    "accept4": 288,
    # SysV and POSIX IPC: objects outlive the process, pin host memory, and link runs
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "shmdt": 67,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "semtimedop": 220,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
    # signals and other processes
    "timer_create": 222,
    "kill": 62,
    "tkill": 200,
    "tgkill": 234,
    "rt_sigqueueinfo": 129,
    "rt_tgsigqueueinfo": 297,
    "pidfd_send_signal": 424,
    "pidfd_open": 434,
    "pidfd_getfd": 438,
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    # privileges, limits, sessions
    "setuid": 105,
    "setgid": 106,
    "setreuid": 113,
    "setregid": 114,
    "setresuid": 117,
    "setresgid": 119,
    "setgroups": 116,
    "setsid": 112,
    "setpgid": 109,
    "setrlimit": 160,
    "prlimit64": 302,
    "capset": 126,
    # scheduling and priority: PRIO_USER reaches every process of the user (the trainer too),
    # and a pid names any process the user owns
    "setpriority": 141,
    "sched_setparam": 142,
    "sched_setscheduler": 144,
    "sched_setaffinity": 203,
    "sched_setattr": 314,
    "ioprio_set": 251,
    "migrate_pages": 256,
    "move_pages": 279,
    "process_madvise": 440,
    "process_mrelease": 448,
    # namespaces, mounts, system state
    "unshare": 272,
    "setns": 308,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "reboot": 169,
    "kexec_load": 246,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "swapon": 167,
    "swapoff": 168,
    "sethostname": 170,
    "setdomainname": 171,
    "settimeofday": 164,
    "clock_settime": 227,
    "adjtimex": 159,
    "clock_adjtime": 305,
    "acct": 163,
    "quotactl": 179,
    "syslog": 103,
    # kernel attack surface a pure function never needs
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "fanotify_init": 300,
    "openat2": 437,
    # the mount API by file descriptor (Linux 5.2-6.15) and mount listings (6.8): a child
    # without capabilities gets EPERM from the kernel anyway, one that kept them must not
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "quotactl_fd": 443,
    "statmount": 457,
    "listmount": 458,
    "lsm_set_self_attr": 460,
    "open_tree_attr": 467,
    # metadata changes, which Landlock does not cover
    "chmod": 90,
    "fchmod": 91,
    "chown": 92,
    "fchown": 93,
    "lchown": 94,
    "fchownat": 260,
    "fchmodat": 268,
    "fchmodat2": 452,
    "utime": 132,
    "utimes": 235,
    "futimesat": 261,
    "utimensat": 280,
    "setxattr": 188,
    "lsetxattr": 189,
    "fsetxattr": 190,
    "removexattr": 197,
    "lremovexattr": 198,
    "fremovexattr": 199,
    # the same by directory descriptor and path (Linux 6.13, 6.17)
    "setxattrat": 463,
    "removexattrat": 466,
    "file_setattr": 469,
}

# Filesystem mutations; refused unless Landlock confines them to the sandbox directory.
_FS_WRITE_X86_64 = {
    "creat": 85,
    "truncate": 76,
    "rename": 82,
    "mkdir": 83,
    "rmdir": 84,
    "link": 86,
    "unlink": 87,
    "symlink": 88,
    "mknod": 133,
    "mkdirat": 258,
    "mknodat": 259,
    "unlinkat": 263,
    "renameat": 264,
    "linkat": 265,
    "symlinkat": 266,
    "renameat2": 316,
}
_NR_OPEN, _NR_OPENAT = 2, 257
_OPEN_WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000  # O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND
# Calls refused only for some values of one argument: syscall -> (argument index, values).
_ARGUMENT_RULES = {
    # ioctl: terminal input injection (TIOCSTI, TIOCLINUX).
    16: (1, (0x5412, 0x541C)),
    # rt_sigaction: no handler for a signal the program can raise on itself (timers, limits,
    # faults, broken pipes, async I/O). A Python handler is handed the interrupted frame, whose
    # callers hold the runner's state; the signals it may still handle (SIGTERM, SIGUSR1 ...)
    # cannot reach it, since kill, timer_create and the fcntl calls below are refused.
    13: (0, (4, 5, 6, 7, 8, 11, 13, 14, 17, 23, 24, 25, 26, 27, 29, 31)),
    # fcntl: F_SETOWN, F_SETSIG, F_SETOWN_EX, F_SETLEASE, F_NOTIFY (signals on I/O or leases).
    72: (1, (8, 10, 15, 1024, 1026)),
}


# Calls refused when one argument has any of some bits set: syscall -> (argument index, bits).
# No executable mappings: a confined child loads no new native code (an extension module such
# as ``_ctypes`` that the fork server never imported cannot be loaded), and runs no code it wrote.
# No unnamed files (O_TMPFILE): each takes a number from the work directory's inode counter
# without creating a name, so it would leave that counter moved for the next run on the same
# directory, whose time stamps and inode count show nothing.
_PROT_EXEC = 0x4
_O_TMPFILE = 0o20000000  # __O_TMPFILE; O_TMPFILE adds O_DIRECTORY
_FLAG_RULES = {
    9: (2, _PROT_EXEC),
    10: (2, _PROT_EXEC),
    329: (2, _PROT_EXEC),
    _NR_OPEN: (1, _O_TMPFILE),
    _NR_OPENAT: (2, _O_TMPFILE),
}  # mmap, mprotect, pkey_mprotect, open, openat


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _arg_low(index: int) -> int:
    return 16 + 8 * index  # offsetof(struct seccomp_data, args[index]), little-endian low word


def build_filter(*, allow_fs_writes: bool) -> bytes | None:
    """Return the BPF program (``struct sock_filter[]`` bytes), or None off x86-64.

    Args:
        allow_fs_writes: Leave filesystem mutations to Landlock (which confines them to the
            sandbox directory) instead of refusing them all.
    """
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    deny = set(_DENY_X86_64.values())
    if not allow_fs_writes:
        deny |= set(_FS_WRITE_X86_64.values())
    code: list[tuple[int, int | str, int | str, int]] = []
    labels: dict[str, int] = {}

    def emit(op: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        code.append((op, jt, jf, k))

    emit(_LD_W_ABS, 4)  # seccomp_data.arch
    emit(_JEQ_K, _AUDIT_ARCH_X86_64, jt=1)
    emit(_RET_K, _RET_KILL_PROCESS)
    emit(_LD_W_ABS, 0)  # seccomp_data.nr
    emit(_JGE_K, _X32_SYSCALL_BIT, jt="eperm")
    for nr in sorted(deny):
        emit(_JEQ_K, nr, jt="eperm")
    if not allow_fs_writes:
        emit(_JEQ_K, _NR_OPEN, jt="open")
        emit(_JEQ_K, _NR_OPENAT, jt="openat")
    for nr in _ARGUMENT_RULES:
        emit(_JEQ_K, nr, jt=f"arg{nr}")
    for nr in _FLAG_RULES:
        emit(_JEQ_K, nr, jt=f"flag{nr}")
    emit(_RET_K, _RET_ALLOW)
    if not allow_fs_writes:
        for name, flags_arg in (("open", 1), ("openat", 2)):
            labels[name] = len(code)
            emit(_LD_W_ABS, _arg_low(flags_arg))
            emit(_JSET_K, _OPEN_WRITE_FLAGS, jt="eperm")
            emit(_RET_K, _RET_ALLOW)
    for nr, (index, values) in _ARGUMENT_RULES.items():
        labels[f"arg{nr}"] = len(code)
        emit(_LD_W_ABS, _arg_low(index))
        for value in values:
            emit(_JEQ_K, value, jt="eperm")
        emit(_RET_K, _RET_ALLOW)
    for nr, (index, bits) in _FLAG_RULES.items():
        labels[f"flag{nr}"] = len(code)
        emit(_LD_W_ABS, _arg_low(index))
        emit(_JSET_K, bits, jt="eperm")
        emit(_RET_K, _RET_ALLOW)
    labels["eperm"] = len(code)
    emit(_RET_K, _RET_EPERM)

    def offset(target: int | str, pos: int) -> int:
        if isinstance(target, int):
            return target
        jump = labels[target] - pos - 1
        if not 0 <= jump <= 255:
            raise ValueError(f"seccomp filter jump to {target!r} out of range")
        return jump

    return b"".join(
        _insn(op, offset(jt, pos), offset(jf, pos), k) for pos, (op, jt, jf, k) in enumerate(code)
    )


class Seccomp:
    """A prepared seccomp filter; :meth:`install` applies it to the calling process.

    The program is built in the fork server, so that a child only makes the two ``prctl``
    calls (through ``_kernel``).
    """

    def __init__(self, program: bytes) -> None:
        self._program = bytes(program)

    def warm_up(self) -> None:
        """Make a harmless ``prctl`` call (PR_GET_SECCOMP) so later calls start warm."""
        _kernel.get_seccomp()

    def install(self) -> None:
        """Set no_new_privs and load the filter.

        Raises:
            OSError: If the kernel refuses either call.
        """
        _kernel.seccomp_filter(self._program)
