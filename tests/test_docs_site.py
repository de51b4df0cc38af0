"""The documentation site builds with ``mkdocs build --strict`` and logs no warning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")
pytest.importorskip("material")

ROOT = Path(__file__).resolve().parents[1]


def test_site_builds_strict_without_warnings(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site"),
         "--config-file", str(ROOT / "mkdocs.yml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    log = proc.stdout + proc.stderr
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert proc.returncode == 0 and not warnings, log[-4000:]
    site = tmp_path / "site"
    configuration = (site / "configuration" / "index.html").read_text()
    assert "evolution.cull_fraction" in configuration
    for page in ("settings", "evo", "environments", "experiments"):
        assert (site / "reference" / page / "index.html").is_file()
    assert (site / "tutorials" / "selection-study" / "index.html").is_file()
