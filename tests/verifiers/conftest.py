"""Shared sandbox for the verifier tests: two workers, short timeouts."""

from __future__ import annotations

import pytest

from redqueen.verifiers import Executor


@pytest.fixture(scope="package")
def executor():
    with Executor(workers=2, timeout=1.0, memory_mb=256) as ex:
        yield ex
