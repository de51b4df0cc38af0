"""Loading a configuration imports neither torch nor transformers: the sections are plain settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imported_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in ('torch', 'transformers', 'peft') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    return set(out.stdout.split())


def test_loading_the_tiny_config_with_overrides_imports_no_torch():
    code = (
        "from redqueen.experiments.config import load_config\n"
        "cfg = load_config('tiny', ['learner.lr=0.001', 'environment.task_types=[code_o]'])\n"
        "assert cfg.learner.lr == 0.001 and cfg.environment.task_types == ('code_o',)\n"
        "assert cfg.to_yaml_dict()['model']['name'] == 'tiny-coder'"
    )
    assert _imported_after(code) == set()


def test_the_settings_package_imports_no_torch():
    assert _imported_after("import redqueen.settings; redqueen.settings.ReplacementConfig()") == set()
