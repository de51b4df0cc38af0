"""Shared sandbox for the verifier tests (two workers, short timeouts), and a forked-child runner."""

from __future__ import annotations

import os

import pytest

from redqueen.verifiers import Executor


@pytest.fixture(scope="package")
def executor():
    with Executor(workers=2, timeout=1.0, memory_mb=256) as ex:
        yield ex


def in_child(body) -> int:
    """Run ``body()`` in a forked child; its exit code (0: every expectation held).

    For checks that install something irreversible (a seccomp filter, a Landlock ruleset) in
    the process that makes them: only the child is changed. An exception in ``body`` exits 99.
    """
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(body())
        except BaseException:
            os._exit(99)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
