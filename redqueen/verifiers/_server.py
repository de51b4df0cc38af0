"""One fork server seen from the host (:class:`_Server`): its process, control socket and run.

The executor (:mod:`redqueen.verifiers._executor`) schedules requests over several of these;
this module holds what talks to one server: starting it, handing a run's pipes to it, reading
the child's result frame and judging it outside every process that ran program code.
"""

from __future__ import annotations

import array
import fcntl
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._reply import UNREADABLE
from ._verdict import verdict

_ZYGOTE = Path(__file__).with_name("_zygote.py")
_STARTUP_TIMEOUT = 60.0
_CONTROL_BYTES = 4096
_F_SETPIPE_SZ = 1031
_DEFAULT_PIPE_BYTES = 65536
#: A child's result must fit in its pipe: the host reads it after the child exited.
_PIPE_CAPACITY = 1 << 20


class _Server:
    """One fork server: its process, the control socket to it, and the run in flight.

    The server is the clean template (``_template.py``): it never sees a request. For each run
    this side makes the children's pipes, sends the server only their descriptors, the run's
    mode and timeout, writes each child's part of the request into that child's own pipe, and,
    once the server reports the wait status, reads the child's result frame and judges it
    (``_verdict.verdict``): no process that runs program code takes part in the verdict.
    """

    def __init__(self, config: dict, hash_seed: int) -> None:
        env = {
            "PYTHONHASHSEED": str(hash_seed),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONIOENCODING": "utf-8",
            "PATH": os.defpath,
            "LC_ALL": "C.UTF-8",
        }
        # The server's private directories live under this root, removed whatever its fate.
        self.root = tempfile.mkdtemp(prefix="redqueen-sandbox-")
        self.config = config
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        server_config = {**config, "temp_root": self.root, "control_fd": theirs.fileno()}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-S", "-B", str(_ZYGOTE), json.dumps(server_config)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=env,
                cwd="/",
                start_new_session=True,
                close_fds=True,
                pass_fds=(theirs.fileno(),),
            )
        finally:
            theirs.close()
        self.rfd = self.control.fileno()
        self.result_fd = -1
        hello = self._receive(time.monotonic() + _STARTUP_TIMEOUT)
        if not isinstance(hello, dict) or hello.get("ready") is not True:
            self.kill()
            raise RuntimeError(f"redqueen.verifiers: fork server {_ZYGOTE} failed to start")
        features = hello.get("features")
        self.features: dict[str, bool] = {
            str(k): v is True for k, v in (features.items() if isinstance(features, dict) else ())
        }
        pid = hello.get("pid")
        self.pid: int = pid if type(pid) is int else self.proc.pid

    def start(self, request: dict) -> None:
        """Start one run: children's pipes to the server, each child's part into its pipe."""
        if "test" in request:  # the program answers calls; trusted test code judges it
            parts = [
                {"source": request["source"], "entry_point": request["entry_point"]},
                {"source": request["test"], "expr": request["expr"]},
            ]
            mode = "test"
        else:
            parts = [{"source": request["source"], "expr": request["expr"]}]
            mode = "run"
        data = [json.dumps(part).encode() for part in parts]
        ends = [_pipe(len(body)) for body in data]
        result_in, result_out = _pipe(_PIPE_CAPACITY)
        try:
            message = json.dumps({"mode": mode, "timeout": request["timeout"]}).encode()
            fds = array.array("i", [*(r for r, _ in ends), result_out])
            self.control.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        except OSError:
            for fd in (*(fd for pair in ends for fd in pair), result_in):
                os.close(fd)
            raise
        finally:
            for r, _ in ends:
                os.close(r)
            os.close(result_out)
        self.result_fd = result_in
        for (_, w), body in zip(ends, data, strict=True):
            _write_all(w, body)

    def finish(self, deadline: float) -> dict | None:
        """The verdict on the run in flight, or None when the server did not report in time."""
        result_fd, self.result_fd = self.result_fd, -1
        try:
            report = self._receive(deadline)
            if not isinstance(report, dict):
                return None
            if report.get("timed_out") is True:
                return _failure("timed out", timed_out=True)
            status = report.get("status")
            if type(status) is not int:
                return _failure("sandbox failure")
            return verdict(
                _read_available(result_fd),
                status,
                max_value_chars=int(self.config["max_value_chars"]),
                max_stdout_chars=int(self.config["max_stdout_chars"]),
            )
        finally:
            if result_fd >= 0:
                os.close(result_fd)

    def _receive(self, deadline: float) -> object:
        """One control message: None on EOF or when the deadline passes."""
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([self.rfd], [], [], remaining)[0]:
            return None
        try:
            data = self.control.recv(_CONTROL_BYTES)
        except OSError:
            return None
        if not data:
            return None
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            return UNREADABLE

    def close(self, wait: float = 2.0) -> None:
        """Ask the server to exit (its socket closes); kill it if it does not."""
        self._drop_run()
        self.control.close()
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self.kill()
        shutil.rmtree(self.root, ignore_errors=True)

    def kill(self) -> None:
        self._drop_run()
        try:
            os.killpg(self.proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
        try:
            self.control.close()
        except OSError:
            pass

    def _drop_run(self) -> None:
        if self.result_fd >= 0:
            os.close(self.result_fd)
            self.result_fd = -1


def _pipe(size: int) -> tuple[int, int]:
    """A pipe whose buffer holds ``size`` bytes where the host allows it (default otherwise)."""
    rfd, wfd = os.pipe()
    if size > _DEFAULT_PIPE_BYTES:
        try:
            fcntl.fcntl(wfd, _F_SETPIPE_SZ, min(size, _PIPE_CAPACITY))
        except OSError:
            pass
    return rfd, wfd


def _write_all(fd: int, data: bytes) -> None:
    """Write a child's request and close its pipe; a child that died early is no error."""
    try:
        while data:
            data = data[os.write(fd, data) :]
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)


def _read_available(fd: int) -> bytes:
    """What the exited child left in its result pipe (everyone's write end is closed)."""
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _failure(error: str, *, timed_out: bool = False) -> dict:
    return {"ok": False, "value": None, "error": error, "stdout": "", "timed_out": timed_out}
