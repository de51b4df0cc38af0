"""Landlock for sandboxed children: filesystem reads and writes confined to a few directories.

This module is imported by the fork-server script (``_zygote.py``, through ``_seccomp``) as a
sibling module, so it uses only the standard library. Landlock (Linux >= 5.13) limits
filesystem writes to the private working directory and reads to that directory and the
interpreter's own files, and on ABI >= 6 scopes signals and abstract unix sockets; where the
kernel lacks it, writes are refused by seccomp (:mod:`._seccomp`) and reads fall back to file
modes.
"""

from __future__ import annotations

import os
import platform
import struct

if __package__:
    from . import _kernel
else:  # imported by the fork-server script as a sibling module
    import _kernel


# Landlock (x86-64 syscall numbers are shared by all architectures for these new calls).
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_MUTATIONS = sum(1 << b for b in range(4, 13))  # REMOVE_DIR .. MAKE_SYM
_FS_REFER = 1 << 13
_FS_TRUNCATE = 1 << 14
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
_SCOPE_SIGNAL = 1 << 1


class Landlock:
    """Confines filesystem reads and writes (and, on ABI >= 6, signals) of the calling process.

    Args:
        abi: The kernel's Landlock ABI version (see :func:`landlock_abi`).
    """

    def __init__(self, abi: int) -> None:
        self.abi = abi
        handled = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_READ_DIR | _FS_MUTATIONS
        if abi >= 2:
            handled |= _FS_REFER
        if abi >= 3:
            handled |= _FS_TRUNCATE
        self.handled = handled
        # Inside the sandbox directory: everything except exec and cross-directory links.
        self.allowed_beneath = handled & ~(_FS_EXECUTE | _FS_REFER)
        scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
        if abi >= 6:
            self._attr = struct.pack("QQQ", handled, 0, scoped)
        else:
            self._attr = struct.pack("Q", handled)

    def prepare(
        self,
        writable_dir: str,
        readable: tuple[str, ...] = (),
        listable: tuple[str, ...] = (),
    ) -> int:
        """Build a ruleset: reads and writes beneath ``writable_dir``, reads of ``readable``.

        Every other path can be neither read nor listed nor written, whatever its file mode.
        Building it once in the fork server leaves each child a single ``restrict`` call.

        Args:
            writable_dir: The sandbox's working directory.
            readable: Files, and directories with everything beneath them, that may be read
                (e.g. the standard library).
            listable: Directories that may be listed, with every directory beneath them, but
                whose files may not be read unless ``readable`` names them.

        Raises:
            OSError: If a Landlock call fails.
        """
        fd = _kernel.landlock_create_ruleset(self._attr)
        rules = [(writable_dir, self.allowed_beneath)]
        rules += [
            (path, _FS_READ_FILE | _FS_READ_DIR if os.path.isdir(path) else _FS_READ_FILE)
            for path in readable
        ]
        rules += [(path, _FS_READ_DIR) for path in listable]
        try:
            for path, access in rules:
                self._add_rule(int(fd), path, access)
        except OSError:
            os.close(fd)
            raise
        return int(fd)

    def _add_rule(self, ruleset_fd: int, path: str, access: int) -> None:
        dir_fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        try:
            rule = _kernel.path_beneath_rule(access, dir_fd)
            _kernel.landlock_add_rule(ruleset_fd, _LANDLOCK_RULE_PATH_BENEATH, rule)
        finally:
            os.close(dir_fd)

    def restrict_warm_up(self) -> None:
        """Make harmless calls (a restrict on an invalid fd) so later calls start warm."""
        _kernel.get_no_new_privs()
        try:
            _kernel.landlock_restrict_self(-1)
        except OSError:
            pass

    def restrict(self, ruleset_fd: int) -> None:
        """Apply a prepared ruleset to the calling process (irreversibly).

        Raises:
            OSError: If the kernel refuses.
        """
        _kernel.set_no_new_privs()
        _kernel.landlock_restrict_self(ruleset_fd)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 where Landlock is unavailable."""
    if platform.system() != "Linux":
        return 0
    return _kernel.landlock_abi()
