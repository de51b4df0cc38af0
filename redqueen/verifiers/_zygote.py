"""Fork server ("zygote") for the sandboxed executor; run as a script, one per worker.

The executor starts this script once per worker with ``PYTHONHASHSEED`` fixed and a clean
environment. It pre-imports the modules that programs commonly use, prepares the kernel
filters, then serves requests read from stdin (4-byte big-endian length + JSON) and answers on
stdout in the same framing. Each request runs in a fresh child forked from this process, so
start-up costs a fork instead of an interpreter launch, and a crash or kill of one program
never touches the server.

What the child does before the program runs is in ``_child.py``; how the server judges what the
child sends back is in ``_verdict.py`` (the server, which never runs program code, decides every
verdict). The server also moves itself into an empty network namespace, a private IPC namespace
and a private mount namespace (where allowed), so every child inherits them, and holds a requested number of heap blocks across each fork so that the child's
fresh objects land at shifted addresses (``id()``- and ``hash()``-dependent programs then
differ between runs).

The module uses only the standard library and imports nothing from ``redqueen``.
"""

from __future__ import annotations

import ctypes
import fcntl
import gc
import io
import json
import os
import resource
import shutil
import signal
import struct
import sys

if __package__:
    from ._child import CappedWriter, refuse_socket, run_candidate, run_child, run_test
    from ._namespaces import mount_tmpfs, private_mounts, unmount, unshare_ipc, unshare_network
    from ._seccomp import Landlock, Seccomp, build_filter, landlock_abi
    from ._verdict import verdict
else:  # run as a script: the sibling modules are importable from the script's directory
    from _child import CappedWriter, refuse_socket, run_candidate, run_child, run_test
    from _namespaces import mount_tmpfs, private_mounts, unmount, unshare_ipc, unshare_network
    from _seccomp import Landlock, Seccomp, build_filter, landlock_abi
    from _verdict import verdict

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
_PR_GET_NO_NEW_PRIVS = 39
_F_SETPIPE_SZ, _F_GETPIPE_SZ = 1031, 1032
_PIPE_CAPACITY = 1 << 20
_WORKDIR_BYTES = 16 * 2**20
_WORKDIR_INODES = 1024
_NOBODY = 65534
_JITTER_CLASSES = tuple(range(48, 513, 16))
_MAX_JITTER = 16


def _send(fd: int, message: dict) -> None:
    data = json.dumps(message).encode()
    data = struct.pack(">I", len(data)) + data
    while data:
        data = data[os.write(fd, data) :]


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv(fd: int) -> dict | None:
    header = _read_exact(fd, 4)
    if header is None:
        return None
    body = _read_exact(fd, struct.unpack(">I", header)[0])
    return None if body is None else json.loads(body)


class Zygote:
    """The fork server's state: limits from the executor, prepared filters, held jitter blocks."""

    def __init__(self, config: dict) -> None:
        self.memory_bytes = int(config["memory_bytes"])
        self.max_value_chars = int(config["max_value_chars"])
        self.max_stdout_chars = int(config["max_stdout_chars"])
        self.temp_root = str(config["temp_root"])
        self.is_root = os.geteuid() == 0
        self.netns = unshare_network()
        self.ipcns = unshare_ipc()  # SysV objects and POSIX queues die with the server
        self.readable = readable_paths(config.get("preload", ()))
        abi = landlock_abi()
        self.landlock = Landlock(abi) if abi >= 1 else None
        program = build_filter(allow_fs_writes=self.landlock is not None)
        self.seccomp = Seccomp(program) if program is not None else None
        self.devnull = os.open(os.devnull, os.O_RDWR)
        self.limits: list[tuple[int, tuple[int, int]]] = []
        self.limits_timeout = -1.0
        self.pipe_capacity = _PIPE_CAPACITY
        self.waiting = False
        signal.signal(signal.SIGALRM, self._on_alarm)
        socket_module = sys.modules.get("socket")
        if socket_module is not None:  # children inherit the refusal
            for name in ("socket", "socketpair", "create_connection", "create_server"):
                setattr(socket_module, name, refuse_socket)
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.prctl = self.libc.prctl
        self.server_pid = os.getpid()
        # One private directory per server, emptied after any run that wrote to it; a size- and
        # inode-capped tmpfs seen only by this server and its children where mounts are allowed.
        self.tmpfs = private_mounts()
        self.workdir = ""
        self.ruleset_fd = -1
        self._fresh_workdir()
        with open("/proc/self/statm") as handle:  # the children start from this footprint
            vm_size = int(handle.read().split()[0]) * resource.getpagesize()
        self.address_space = vm_size + 64 * 2**20 + self.memory_bytes
        self.held: list[list[object]] = []  # heap-jitter blocks held across one fork
        self.features = {
            "fork_server": True,
            "network_namespace": self.netns,
            "ipc_namespace": self.ipcns,
            "landlock": self.landlock is not None and self._probe(self._probe_landlock),
            "seccomp": self.seccomp is not None and self._probe(self.seccomp.install),
            "drop_root": self.is_root and self._probe(_drop_root),
            "workdir_tmpfs": self.tmpfs,
            "socket_refused": True,
            "separate_test_process": True,
            "rlimits": True,
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
        self.prctl(_PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
        if self.landlock is not None:
            self.landlock.restrict_warm_up()
        if self.seccomp is not None:
            self.seccomp.warm_up()

    def _remove_workdir(self) -> None:
        if self.tmpfs:
            unmount(self.workdir)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _probe_landlock(self) -> None:
        landlock = self.landlock
        assert landlock is not None  # probed only when the kernel offers Landlock
        landlock.restrict(landlock.prepare(self.temp_root, self.readable))

    def _fresh_workdir(self) -> None:
        """(Re)create the private working directory and its Landlock ruleset."""
        if self.workdir:
            self._remove_workdir()
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
        if self.landlock is not None:
            try:
                self.ruleset_fd = self.landlock.prepare(self.workdir, self.readable)
            except OSError:
                self._disable_landlock()

    @staticmethod
    def _probe(install) -> bool:
        """Check in a throwaway child that a kernel filter installs."""
        pid = os.fork()
        if pid == 0:
            try:
                install()
                os._exit(0)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0

    def serve(self, rfd: int, wfd: int) -> None:
        _send(wfd, {"ready": True, "features": self.features, "pid": os.getpid()})
        try:
            while True:
                request = _recv(rfd)
                if request is None:
                    return
                _send(wfd, self.run(request))
        finally:
            self._remove_workdir()

    def run(self, request: dict) -> dict:
        """Run one program in a forked child and report its result."""
        timeout = float(request["timeout"])
        if not os.path.isdir(self.workdir):  # removed behind our back (e.g. a tmp cleaner)
            self._fresh_workdir()
        if timeout != self.limits_timeout:
            cpu = int(timeout) + 1
            fsize = self.max_stdout_chars
            self.limits = [
                (resource.RLIMIT_CPU, _capped(resource.RLIMIT_CPU, cpu, cpu + 1)),
                (resource.RLIMIT_FSIZE, _capped(resource.RLIMIT_FSIZE, fsize, fsize)),
                (resource.RLIMIT_CORE, (0, 0)),
                (resource.RLIMIT_NPROC, (0, 0)),
                (
                    resource.RLIMIT_AS,
                    _capped(resource.RLIMIT_AS, self.address_space, self.address_space),
                ),
            ]
            self.limits_timeout = timeout
        # Heap jitter: blocks allocated here before the fork shift the child's later allocations
        # (and cost the child nothing); the server frees them once the child is gone.
        self._jitter(int(request.get("jitter", 0)))
        rfd, wfd = self._pipe()
        candidate = -1
        if "test" in request:  # the program answers calls; trusted test code judges it
            calls_in, calls_out = self._pipe()
            replies_in, replies_out = self._pipe()
            candidate = os.fork()
            if candidate == 0:  # never returns
                run_candidate(self, calls_in, replies_out, request, self._writer())
            pid = os.fork()
            if pid == 0:  # never returns
                run_test(self, wfd, calls_out, replies_in, request, self._writer())
            for fd in (calls_in, calls_out, replies_in, replies_out):
                os.close(fd)
        else:
            pid = os.fork()
            if pid == 0:  # never returns
                run_child(self, wfd, request, self._writer())
        os.close(wfd)
        try:
            return self._collect(pid, rfd, timeout)
        finally:
            if candidate > 0:
                _kill_group(candidate)
                os.waitpid(candidate, 0)
            os.close(rfd)
            self._jitter(0)
            if os.listdir(self.workdir):
                self._fresh_workdir()

    def _writer(self) -> CappedWriter:
        return CappedWriter(self.max_stdout_chars)

    def _pipe(self) -> tuple[int, int]:
        """A pipe whose buffer holds a whole result (the server reads only after the exit)."""
        rfd, wfd = os.pipe()
        try:
            self.pipe_capacity = fcntl.fcntl(wfd, _F_SETPIPE_SZ, _PIPE_CAPACITY)
        except OSError:
            self.pipe_capacity = fcntl.fcntl(wfd, _F_GETPIPE_SZ)
        return rfd, wfd

    def _collect(self, pid: int, rfd: int, timeout: float) -> dict:
        """Wait for the child (killing its group at the deadline), then read its result.

        While the child lives this process blocks in one ``waitpid``: every page it wrote now
        would be copied, since the child still shares it. A SIGALRM ends the wait at the
        deadline; the child's result fits in the pipe, so it never waits for a reader.
        """
        status: int | None = None
        self.waiting = True
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            status = os.waitpid(pid, 0)[1]
            self.waiting = False
        except _Deadline:
            pass
        finally:
            self.waiting = False
            signal.setitimer(signal.ITIMER_REAL, 0)
        timed_out = status is None
        _kill_group(pid)  # the whole group: anything the program managed to start dies with it
        if status is None:
            try:
                status = os.waitpid(pid, 0)[1]
            except ChildProcessError:  # reaped just as the alarm fired
                status = 0
        if timed_out:
            return {
                "ok": False,
                "value": None,
                "error": "timed out",
                "stdout": "",
                "timed_out": True,
            }
        chunks = []
        while True:
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return verdict(
            b"".join(chunks),
            status,
            max_value_chars=self.max_value_chars,
            max_stdout_chars=self.max_stdout_chars,
        )

    def _on_alarm(self, signum: int, frame: object) -> None:
        if self.waiting:
            raise _Deadline

    def _jitter(self, blocks: int) -> None:
        """Hold ``blocks`` objects in each small size class (0 releases them)."""
        blocks = max(0, min(blocks, _MAX_JITTER))
        if not blocks:
            self.held = []
            return
        span = range(blocks)
        held: list[list[object]] = [[object() for _ in span], [float(i) + 0.5 for i in span]]
        held.extend([bytes(size - 33) for _ in span] for size in _JITTER_CLASSES)
        self.held = held


def readable_paths(preload: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Directories a child may read (Landlock): the interpreter's prefixes and import path.

    The modules a program imports are pre-imported by the server, so the children read little;
    this covers lazy imports inside the standard library (codecs, for one). Everything else,
    including every home directory, stays unreadable even where file modes would allow it.
    """
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *sys.path]
    for name in (*PRELOAD, *preload):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            candidates.append(os.path.dirname(path))
    found = {os.path.realpath(path) for path in candidates if path and os.path.isdir(path)}
    return tuple(sorted(found))


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _drop_root() -> None:
    os.setgroups([])
    os.setresgid(_NOBODY, _NOBODY, _NOBODY)
    os.setresuid(_NOBODY, _NOBODY, _NOBODY)


class _Deadline(Exception):
    """Raised by the SIGALRM handler to end the wait for a child at its deadline."""


def _capped(kind: int, soft: int, hard: int) -> tuple[int, int]:
    """A resource limit pair no higher than the hard limit this process already has."""
    current = resource.getrlimit(kind)[1]
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    return soft, hard


def main() -> None:
    """Entry point: ``python _zygote.py '<json config>'``; serves until stdin closes."""
    config = json.loads(sys.argv[1])
    for name in (*PRELOAD, *config.get("preload", ())):
        __import__(name)
    sys.dont_write_bytecode = True
    rfd, wfd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdin = io.StringIO()  # what programs read: nothing
    zygote = Zygote(config)
    gc.collect()
    gc.freeze()  # children's collections then skip (and so do not copy) the server's objects
    zygote.serve(rfd, wfd)


if __name__ == "__main__":
    main()
