"""Experiments: configuration, the runner, run directories, checkpoints, plots and the CLI.

- :mod:`.config`: :func:`~redqueen.experiments.config.load_config`, ``ExperimentConfig``, ``PRESETS``.
- :mod:`.build`: ``build_environment(cfg)``.
- :mod:`.runner`: :class:`Runner`, :func:`start_run`, :func:`resume_run` — step an environment,
  write its run directory, checkpoint atomically, stop cleanly on SIGINT.
- :mod:`.rundir`: :class:`RunDirectory` (the files of a run) and :func:`export_adapter`.
- :mod:`.checkpoint`: atomic ``checkpoints/step_<n>/`` with the log offsets resume truncates to.
- :mod:`.plots`: ``make_plots(run_dir)`` and the ``PLOTS`` registry (imports matplotlib; not
  imported here).
- :mod:`.monitor`: TensorBoard and Weights & Biases sinks.
- :mod:`.cli`: the ``redqueen`` command (``run``, ``resume``, ``plot``, ``export``, ``list``).
"""

from __future__ import annotations

from redqueen.experiments.checkpoint import Checkpoint, CheckpointError, latest_checkpoint
from redqueen.experiments.rundir import RunDirectory, RunDirectoryError, export_adapter
from redqueen.experiments.runner import RunError, Runner, RunResult, resume_run, start_run

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "RunDirectory",
    "RunDirectoryError",
    "RunError",
    "RunResult",
    "Runner",
    "export_adapter",
    "latest_checkpoint",
    "resume_run",
    "start_run",
]
