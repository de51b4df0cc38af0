"""The package type-checks under the ``[tool.mypy]`` configuration in pyproject.toml."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy comes with the dev extras")

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_package_type_checks() -> None:
    # mypy's own incremental cache (git-ignored): a warm run takes seconds, a cold one minutes
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(ROOT / ".mypy_cache"), "redqueen"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "Success" in result.stdout


def test_py_typed_marks_the_package() -> None:
    assert (ROOT / "redqueen" / "py.typed").is_file()
    assert '"redqueen" = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()
