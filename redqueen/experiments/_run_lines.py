"""What ``redqueen run`` and ``resume`` say around the progress bar.

A first line, before the model loads, names the run folder and where the metrics go (and a
logger that was asked for but is not installed); the bar's time left is the mean time of the
steps done so far times the steps left (rich's own estimate looks back 30 s only, so with
longer steps it never shows one); the last line names the plots folder.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from rich.progress import ProgressColumn, Task
from rich.text import Text

from redqueen.experiments._display import shown

if TYPE_CHECKING:
    from redqueen.experiments.config import LoggingConfig


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
