"""What ``redqueen run`` and ``resume`` say around the progress bar.

A first line, before the model loads, names the run folder and where the metrics go (and a
logger that was asked for but is not installed); the bar's time left is the mean time of the
steps done so far times the steps left (rich's own estimate looks back 30 s only, so with
longer steps it never shows one); the last line names the plots folder; a run that stops
mid-way is one line saying what failed, where, and how to continue.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from redqueen.experiments._display import shown
from redqueen.experiments._headline import HEADLINE_METRICS, progress_stats
from redqueen.experiments.plugins import one_line

if TYPE_CHECKING:
    from redqueen.environments.base import StepRecord
    from redqueen.experiments.config import LoggingConfig
    from redqueen.experiments.runner import Runner


def loggers(path: Path, logging: LoggingConfig) -> str:
    """Where a run's metrics go: ``metrics.jsonl``, then each live logger the configuration
    asks for, or why it is left out."""
    from redqueen.experiments.monitor import tensorboard_available, wandb_available

    sinks = ["metrics.jsonl"]
    if logging.tensorboard is not False:
        if tensorboard_available():
            sinks.append(f"tensorboard ({shown(path / 'tensorboard')})")
        else:
            sinks.append("tensorboard: not installed (pip install tensorboard, or logging.tensorboard: false)")
    if logging.wandb:
        sinks.append(f"wandb (project {shown(logging.wandb_project)})" if wandb_available()
                     else "wandb: not installed (pip install wandb)")
    return ", ".join(sinks)


def first_line(path: Path, logging: LoggingConfig | None, *, resuming: bool = False) -> str:
    """``run folder <path>; logs: ...`` (``resuming <path>`` for ``resume``)."""
    head = f"{'resuming' if resuming else 'run folder'} {shown(path)}"
    return head if logging is None else f"{head}; logs: {loggers(path, logging)}"


def last_line(path: Path, steps: int, plots: bool) -> str:
    """``run complete: N steps in <path>; plots in <path>/plots``."""
    where = (f"plots in {shown(path / 'plots')}" if plots
             else f"no plots (draw them with: redqueen plot {shown(path)})")
    return f"run complete: {steps} steps in {shown(path)}; {where}"


def time_left(total: float | None, completed: float, mean_step: float | None) -> str:
    """``H:MM:SS`` left at ``mean_step`` seconds a step, ``-:--:--`` before the first step."""
    if mean_step is None or total is None:
        return "-:--:--"
    return str(timedelta(seconds=round(max(0.0, total - completed) * mean_step)))


class MeanStepTimeLeft(ProgressColumn):
    """Time left from the mean step time of this process (the task's ``mean_step`` field)."""

    def render(self, task: Task) -> Text:
        text = time_left(task.total, task.completed, task.fields.get("mean_step"))
        return Text(f"left {text}", style="progress.remaining")


def live_progress(console: Console, runner: Runner) -> tuple[Progress, Callable[[StepRecord, Runner], None]]:
    """A progress bar over the run's steps and the callback that moves it after each step."""
    from rich.markup import escape

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=20),
        MofNCompleteColumn(),
        TextColumn("{task.fields[stats]}"),
        TimeElapsedColumn(),
        MeanStepTimeLeft(),
        console=console,
    )
    task = progress.add_task(
        escape(shown(runner.run_dir.path.name)), total=runner.steps, completed=runner.step_count, stats="",
        mean_step=None,
    )
    started, first_step = time.perf_counter(), runner.step_count

    latest: dict[str, object] = {}  # a headline logged every few steps stays on the line

    def on_step(record: StepRecord, current: Runner) -> None:
        latest.update({k: v for k, v in current.last_metrics.items() if k in HEADLINE_METRICS})
        stats = progress_stats({**current.last_metrics, **latest})
        mean_step = (time.perf_counter() - started) / max(1, current.step_count - first_step)
        progress.update(task, completed=current.step_count, stats=stats, mean_step=mean_step)

    return progress, on_step


def run_failure(runner: Runner, error: BaseException) -> str:
    """One line on a run that stopped mid-way: what failed, where, and how to continue."""
    import traceback

    from redqueen.experiments.checkpoint import CheckpointError, latest_checkpoint

    if isinstance(error, SystemExit):
        what = f"sys.exit({error.code!r}) was called"
    else:
        what = f"{type(error).__name__}: {one_line(error)}"
    frames = traceback.extract_tb(error.__traceback__)
    package = str(Path(__file__).resolve().parents[1])
    outside = [f for f in frames if not f.filename.startswith(package) and "site-packages" not in f.filename]
    where = ""
    if not isinstance(error, ValueError | OSError) and frames:
        frame = (outside or frames)[-1]
        where = f" in {frame.filename}:{frame.lineno}"
    try:
        ckpt = latest_checkpoint(runner.run_dir.checkpoints_dir)
    except CheckpointError:
        ckpt = None
    path = runner.run_dir.path
    if ckpt is None:
        # Nothing to continue from: `resume` starts over from the seed, which helps after a
        # passing failure (a full disk) and fails the same way after one from the config or code.
        return (
            f"the run stopped after {runner.step_count} of {runner.steps} steps: {what}{where}; "
            f"no checkpoint was written, so there is nothing to resume: `redqueen resume {path}` "
            "starts it over from step 0, which fails again if the cause is the configuration or "
            f"a plug-in (then remove {path})"
        )
    return (
        f"the run stopped after {runner.step_count} of {runner.steps} steps: {what}{where}; "
        f"checkpoint at step {ckpt.step} in {path}, continue with: redqueen resume {path}"
    )
