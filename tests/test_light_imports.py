"""What importing redqueen costs a notebook or a shell: each check runs in a fresh interpreter.

The plots leave matplotlib's backend as the user set it; the surrogate environment and the
games import no ``transformers``; ``redqueen --version`` and ``--help`` import neither torch
nor matplotlib, so they answer in well under a second on a quiet machine.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "peft", "matplotlib", "pandas", "ray")


def _fresh(code: str, **env: str) -> dict:
    """Run ``code`` in a new interpreter; it prints one JSON value, returned here."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**os.environ, **env},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_the_plots_leaves_matplotlib_backend_alone():
    seen = _fresh(
        "import json, sys, matplotlib\n"
        "import redqueen.experiments.plots\n"
        "print(json.dumps([matplotlib.get_backend(), 'matplotlib.pyplot' in sys.modules]))",
        MPLBACKEND="svg",
    )
    assert seen == ["svg", False]


@pytest.mark.parametrize(
    "statement",
    [
        "import redqueen.environments.surrogate",
        "from redqueen.environments import SurrogateEnv",
        "import redqueen.environments.games",
        "from redqueen.environments import GamesEnv, GAMES",
    ],
)
def test_surrogate_and_games_import_no_transformers(statement):
    loaded = _fresh(f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))")
    assert "transformers" not in loaded and "redqueen.engine" not in loaded


@pytest.mark.parametrize("preset", ["surrogate", "game-ladder"])
def test_a_surrogate_run_from_its_configuration_loads_no_language_model_stack(preset):
    """What ``redqueen run`` does before the run directory: plug-ins, config, check, build, a step."""
    loaded = _fresh(
        "import json, sys\n"
        "from redqueen.experiments.plugins import load_plugins\n"
        "from redqueen.experiments.config import load_config\n"
        "from redqueen.experiments.build import plan_environment\n"
        "load_plugins(shipped=False)\n"
        f"env = plan_environment(load_config({preset!r}, ['population.teachers=2'])).build()\n"
        "env.step(); env.close()\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    assert "transformers" not in loaded and "redqueen.engine" not in loaded


def test_the_command_line_module_imports_nothing_heavy():
    loaded = _fresh("import json, sys\nimport redqueen.experiments.cli\nprint(json.dumps(sorted(sys.modules)))")
    assert [name for name in HEAVY if name in loaded] == []


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_answer_quickly(flag):
    """Timed in the child's CPU seconds: on a shared machine its wall time measures the neighbours."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(
        [sys.executable, "-c", "from redqueen.experiments.cli import main; main()", flag],
        capture_output=True, text=True, timeout=60,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert result.returncode == 0, result.stderr
    assert "redqueen" in result.stdout
    # About 0.5 s on a quiet machine; the bound leaves room for a busy test machine.
    assert seconds < 2.0, f"redqueen {flag} took {seconds:.1f} CPU seconds"
