"""Build hook of the documentation site: the pages that are generated, never written by hand.

- ``configuration.md``: every configuration key, from the settings objects
  (``redqueen config keys --markdown``).
- ``reference/environments.md`` and ``reference/experiments.md``: these packages import their
  public names on first use (so that loading a configuration imports no torch), which static
  analysis cannot follow; their pages list each name of the package's ``_EXPORTS`` table.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]

CONFIGURATION_INTRO = """# Configuration reference

Every key of the configuration, generated from the settings objects of `redqueen.settings`
(each section *is* one of them) when this site is built; `redqueen config keys` prints the same
list (`--markdown` for these tables). A key is set in a YAML file, or with `--set key=value`
on the command line (the value read as YAML):

```bash
redqueen run surrogate --set evolution.cull_fraction=0.5 --set "evolution.operators={svd_merge: 1.0}"
```

The defaults are those of `ExperimentConfig()`; a preset (`redqueen list`) sets some of them
differently. Free-form mappings (`environment.options`, `environment.domain_params`,
`evolution.selection_params`, `evolution.operator_params`) are checked against the settings
model of the environment, domain, selection scheme or operator they configure.

"""

ENTRY_OPTIONS = """    options:
      heading_level: 2
      show_root_full_path: false
"""


#: Public names of a lazy package's public modules, documented after its ``_EXPORTS``.
MODULE_NAMES = {
    "redqueen.experiments": (
        "config.load_config", "config.ExperimentConfig", "config.EnvironmentConfig",
        "config.ConfigError", "config.PRESETS", "sweep.run_sweep",
    ),
}


def _lazy_package_page(package: str) -> str:
    """The package's docstring, then each lazily exported name from the module that defines it."""
    module = importlib.import_module(package)
    exports: dict[str, str] = module._EXPORTS
    lines = [f"::: {package}", "    options:", "      members: false", ""]
    names = [f"{exports[name]}.{name}" for name in exports]  # grouped by module, as the table is
    for dotted in (*names, *MODULE_NAMES.get(package, ())):
        lines += [f"::: {package}.{dotted}", ENTRY_OPTIONS]
    return "\n".join(lines)


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages to the site's files."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from redqueen.experiments._config_keys import config_keys, keys_markdown

    pages = {
        "configuration.md": CONFIGURATION_INTRO + keys_markdown(config_keys()),
        "reference/environments.md": _lazy_package_page("redqueen.environments"),
        "reference/experiments.md": _lazy_package_page("redqueen.experiments"),
    }
    for path, content in pages.items():
        files.append(File.generated(config, path, content=content))
    return files
