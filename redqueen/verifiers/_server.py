"""The request-reading side of a fork server (:class:`Server`): it parses, the template forks.

Requests arrive from the executor on stdin (4-byte big-endian length + JSON); each request's
parts go to its children over pipes of their own, and the children's result comes back on a
pipe that only this process reads. This process never runs program code and forks nothing: the
clean template (``_template.py``) does, so no child holds what this process parsed.

Standard library only; imported by the fork-server script as a sibling module.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import struct
from typing import TYPE_CHECKING

if __package__:
    from . import _template
    from ._verdict import verdict
else:  # imported by the fork-server script as a sibling module
    import _template
    from _verdict import verdict

if TYPE_CHECKING:
    from redqueen.verifiers._zygote import Zygote

_F_SETPIPE_SZ = 1031
_PIPE_CAPACITY = 1 << 20


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


class Server:
    """Reads requests, hands each child its part, judges the result (see the module docstring).

    A candidate's process gets only the program and its entry point, never the test.

    Args:
        zygote: The sandbox's prepared state (its limits bound the verdict).
        template_pid: The clean template, reaped when the server stops.
        control: The server's end of the socket pair to the template.
    """

    def __init__(self, zygote: Zygote, template_pid: int, control: socket.socket) -> None:
        self.zygote = zygote
        self.template_pid = template_pid
        self.control = control

    def serve(self, rfd: int, wfd: int) -> None:
        _send(wfd, {"ready": True, "features": self.zygote.features, "pid": os.getpid()})
        try:
            while True:
                request = _recv(rfd)
                if request is None:
                    return
                _send(wfd, self.run(request))
        finally:  # the template sees the socket close, removes the working directory, exits
            self.control.close()
            os.waitpid(self.template_pid, 0)

    def run(self, request: dict) -> dict:
        """Run one request in children forked by the template and judge their result."""
        timeout = float(request["timeout"])
        result_in, result_out = _pipe()
        if "test" in request:  # the program answers calls; trusted test code judges it
            parts = [
                {"source": request["source"], "entry_point": request["entry_point"]},
                {"source": request["test"], "expr": request["expr"]},
            ]
            mode = "test"
        else:
            parts = [{"source": request["source"], "expr": request["expr"]}]
            mode = "run"
        ends = [_pipe() for _ in parts]
        try:
            fds = (*(r for r, _ in ends), result_out)
            _template.send_control(self.control, {"mode": mode, "timeout": timeout}, fds)
        finally:
            for r, _ in ends:
                os.close(r)
            os.close(result_out)
        for (_, w), part in zip(ends, parts, strict=True):
            _write_request(w, part)
        report = _template.receive_control(self.control)
        if report is None:  # the template died: the executor restarts this server
            raise SystemExit(1)
        try:
            if report[0].get("timed_out") or report[0].get("status") is None:
                return {
                    "ok": False,
                    "value": None,
                    "error": "timed out" if report[0].get("timed_out") else "sandbox failure",
                    "stdout": "",
                    "timed_out": bool(report[0].get("timed_out")),
                }
            return verdict(
                _read_all(result_in),
                int(report[0]["status"]),
                max_value_chars=self.zygote.max_value_chars,
                max_stdout_chars=self.zygote.max_stdout_chars,
            )
        finally:
            os.close(result_in)


def _pipe() -> tuple[int, int]:
    """A pipe whose buffer holds a whole request or result (reads may come after the exit)."""
    rfd, wfd = os.pipe()
    try:
        fcntl.fcntl(wfd, _F_SETPIPE_SZ, _PIPE_CAPACITY)
    except OSError:
        pass
    return rfd, wfd


def _write_request(fd: int, part: dict) -> None:
    """Write one child's request and close the pipe; a child that died early is no error."""
    data = json.dumps(part).encode()
    try:
        while data:
            data = data[os.write(fd, data) :]
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
