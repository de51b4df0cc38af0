"""Experiments: configuration, the runner, run directories, checkpoints, plots and the CLI.

- :mod:`.config`: :func:`~redqueen.experiments.config.load_config`, ``ExperimentConfig``, ``PRESETS``;
  its sections are the settings objects of :mod:`redqueen.settings`. Loading a configuration
  imports neither torch nor transformers.
- :mod:`.build`: ``build_environment(cfg)`` and ``plan_environment(cfg)``: every environment is
  built from the settings objects its constructor declares (:mod:`._wiring`);
  :func:`check_config` checks a configuration against the registries and its environment
  (parameters, needs, keys nobody reads) before anything runs.
- :mod:`.runner`: :class:`Runner`, :func:`start_run`, :func:`resume_run` — step an environment,
  write its run directory, checkpoint atomically, stop cleanly on SIGINT.
- :mod:`.rundir`: :class:`RunDirectory` (the files of a run) and :func:`export_adapter`.
- :mod:`.checkpoint`: atomic ``checkpoints/step_<n>/`` with the log offsets resume truncates to.
- :mod:`.plots`: ``make_plots(run_dir)`` and the ``PLOTS`` registry (imports matplotlib; not
  imported here).
- :mod:`.monitor`: TensorBoard and Weights & Biases sinks.
- :mod:`.analysis`: :func:`load_runs` (runs as one tidy pandas table, configuration keys as
  columns) and :func:`export_table` (CSV or Parquet).
- :mod:`.cli`: the ``redqueen`` command (``run``, ``resume``, ``plot``, ``export``, ``list``).
"""

from __future__ import annotations

import importlib
from typing import Any

# Re-exports resolve on first use, so ``redqueen list`` and config errors stay fast and
# importing the configuration does not load torch or the engine.
_EXPORTS = {
    "Checkpoint": "checkpoint",
    "CheckpointError": "checkpoint",
    "latest_checkpoint": "checkpoint",
    "RunDirectory": "rundir",
    "RunDirectoryError": "rundir",
    "export_adapter": "rundir",
    "check_config": "_config_checks",
    "EnvironmentPlan": "build",
    "build_environment": "build",
    "plan_environment": "build",
    "export_table": "analysis",
    "load_runs": "analysis",
    "RunError": "runner",
    "Runner": "runner",
    "RunResult": "runner",
    "resume_run": "launch",
    "start_run": "launch",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'redqueen.experiments' has no attribute {name!r}")
    return getattr(importlib.import_module(f"redqueen.experiments.{_EXPORTS[name]}"), name)
