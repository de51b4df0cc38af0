"""The clean template: the fork server's serving loop, which forks children and never reads a request.

A child is a copy of the process it was forked from, freed memory included. If that process had
parsed requests, every child could find them (another member's answer, a hidden test) by
walking frames or scanning its heap. So the fork server never reads a request: what it receives
from the host (``Executor``) is only the shape of a run, its mode, its timeout and the pipe
ends of its children (``SCM_RIGHTS`` over a socket pair). Each child reads its own part of the
request from its own pipe after the fork, and writes its result to a pipe only the host reads.
The server reads neither, nor the names of files a program left behind: it forks, waits for
the children, kills them at the deadline and reports their wait status, from which and the
result frame the host decides the verdict.

Every fork starts from the same template state (its small-object free lists scrambled once,
``_child.scramble_free_lists``; the child then takes a random heap shift of its own,
``_child._child_jitter``), so a program cannot tell validation from judging, nor one
run from another, by anything it can read.

Standard library only; imported by the fork-server script as a sibling module.
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
from typing import TYPE_CHECKING

if __package__:
    from ._child import CappedWriter, run_candidate, run_child, run_test, scramble_free_lists
else:  # imported by the fork-server script as a sibling module
    from _child import CappedWriter, run_candidate, run_child, run_test, scramble_free_lists

if TYPE_CHECKING:
    from redqueen.verifiers._zygote import Zygote

#: Descriptors a control message carries at most (a candidate test: two requests, one result).
MAX_FDS = 3
_CONTROL_BYTES = 4096


def send_control(sock: socket.socket, message: dict, fds: tuple[int, ...] = ()) -> None:
    """Send one small JSON message, with descriptors attached, over the server's socket pair."""
    data = json.dumps(message).encode()
    if fds:
        sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.send(data)


def receive_control(sock: socket.socket) -> tuple[dict, list[int]] | None:
    """One message and the descriptors that came with it; None when the other end closed."""
    fd_bytes = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)
    data, ancillary, _, _ = sock.recvmsg(_CONTROL_BYTES, fd_bytes)
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            received = array.array("i")
            received.frombytes(payload[: len(payload) - len(payload) % received.itemsize])
            fds.extend(received)
    if not data:
        for fd in fds:
            os.close(fd)
        return None
    return json.loads(data), fds


class Template:
    """The forking side of one fork server (see the module docstring).

    Args:
        zygote: The sandbox's prepared state (filters, limits, working directory).
        control: The server's end of the socket pair shared with the host.
    """

    def __init__(self, zygote: Zygote, control: socket.socket) -> None:
        self.zygote = zygote
        self.control = control
        self.waiting = False

    def serve(self) -> None:
        """Fork, wait and report, once per control message, until the host closes the socket."""
        zygote = self.zygote
        zygote.server_pid = os.getpid()  # the children's parent, which they check
        signal.signal(signal.SIGALRM, self._on_alarm)
        self.held = scramble_free_lists()  # kept while this server serves
        while True:
            try:
                received = receive_control(self.control)
            except OSError:
                return
            if received is None:
                return
            message, fds = received
            # No local keeps a run's report: the next run's children are copies of this frame.
            send_control(
                self.control, self._run(str(message.get("mode")), float(message["timeout"]), fds)
            )

    def _run(self, mode: str, timeout: float, fds: list[int]) -> dict:
        zygote = self.zygote
        zygote.set_timeout(timeout)
        if not os.path.isdir(zygote.workdir):  # removed behind our back (e.g. a tmp cleaner)
            zygote.fresh_workdir()
        candidate = -1
        try:
            if mode == "test" and len(fds) == 3:
                candidate, pid = self._fork_test(*fds)
            elif mode == "run" and len(fds) == 2:
                pid = os.fork()
                if pid == 0:  # never returns
                    run_child(zygote, fds[0], fds[1], CappedWriter(zygote.max_stdout_chars))
            else:
                return {"status": None, "timed_out": False, "error": "malformed control message"}
        finally:
            for fd in fds:
                os.close(fd)
        try:
            status = self._wait(pid, timeout)
        finally:
            if candidate > 0:
                kill_group(candidate)
                os.waitpid(candidate, 0)
            if zygote.workdir_touched():
                zygote.fresh_workdir()
        return {"status": status, "timed_out": status is None}

    def _fork_test(self, candidate_request: int, test_request: int, result: int) -> tuple[int, int]:
        """The candidate's process and the test's, joined by a call pipe and a reply pipe."""
        zygote = self.zygote
        calls_in, calls_out = os.pipe()
        replies_in, replies_out = os.pipe()
        try:
            candidate = os.fork()
            if candidate == 0:  # never returns
                run_candidate(
                    zygote,
                    candidate_request,
                    calls_in,
                    replies_out,
                    CappedWriter(zygote.max_stdout_chars),
                )
            pid = os.fork()
            if pid == 0:  # never returns
                run_test(
                    zygote,
                    test_request,
                    result,
                    calls_out,
                    replies_in,
                    CappedWriter(zygote.max_stdout_chars),
                )
        finally:
            for fd in (calls_in, calls_out, replies_in, replies_out):
                os.close(fd)
        return candidate, pid

    def _wait(self, pid: int, timeout: float) -> int | None:
        """The child's wait status, or None when it ran past ``timeout`` (its group is killed).

        While the child lives this process blocks in one ``waitpid``: every page it wrote now
        would be copied, since the child still shares it. A SIGALRM ends the wait at the
        deadline.
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
        kill_group(pid)  # the whole group: anything the program managed to start dies with it
        if status is None:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:  # reaped just as the alarm fired
                pass
        return status

    def _on_alarm(self, signum: int, frame: object) -> None:
        if self.waiting:
            raise _Deadline


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (a child that started its own session)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Deadline(Exception):
    """Raised by the SIGALRM handler to end the wait for a child at its deadline."""
