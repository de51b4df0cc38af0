"""Plug-ins reach every command: by ``--plugin`` on list and plot, and by the ``redqueen.plugins``
entry-point group of an installed package (a dist-info folder on the path, as pip writes it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-c", "from redqueen.experiments.cli import main; main()"]

PLUGIN = '''
from redqueen.evo.selection import SELECTIONS


@SELECTIONS.register("{name}")
def {name}(individuals, k, *, rng):
    """A plug-in selection: the first k members, cycling."""
    return [i % len(individuals) for i in range(k)]
'''


def _install(site: Path, module: str, source: str) -> None:
    """Make ``module`` an installed package registering an entry point of the plug-in group."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(source)
    dist = site / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[redqueen.plugins]\n{module} = {module}\n")


def _run(args: list[str], site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_list_shows_plugins_from_an_entry_point_and_from_the_flag(tmp_path):
    site = tmp_path / "site"
    _install(site, "installed_plug", PLUGIN.format(name="from_entry_point"))
    flagged = tmp_path / "flagged.py"
    flagged.write_text(PLUGIN.format(name="from_flag"))
    listed = _run(["list", "--plugin", str(flagged)], site)
    assert listed.returncode == 0, listed.stderr
    assert "from_entry_point" in listed.stdout and "from_flag" in listed.stdout
    assert "the first k members" in listed.stdout  # the plug-in's docstring, as for shipped ones
    plain = _run(["list"], tmp_path / "empty-site")
    assert plain.returncode == 0 and "from_entry_point" not in plain.stdout


@pytest.mark.slow
def test_a_broken_installed_plugin_is_one_line_and_exit_2(tmp_path):
    site = tmp_path / "site"
    _install(site, "broken_plug", "raise RuntimeError('boom at import')\n")
    listed = _run(["list"], site)
    assert listed.returncode == 2
    lines = listed.stderr.strip().splitlines()
    assert len(lines) == 1 and "broken_plug" in lines[0] and "boom at import" in lines[0]


@pytest.mark.slow
def test_plot_names_a_missing_plugin_file(tmp_path):
    result = _run(["plot", str(tmp_path), "--plugin", str(tmp_path / "absent.py")], tmp_path)
    assert result.returncode == 2
    assert "absent.py" in result.stderr and len(result.stderr.strip().splitlines()) == 1
