"""What every plot shares: the run's data as read from its directory, the registry, and the
small helpers the plot functions use. :mod:`redqueen.experiments.plots` holds the plots.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, SupportsFloat, SupportsIndex, overload

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from redqueen._registry import Registry
from redqueen.experiments._safe_paths import read_in
from redqueen.experiments.rundir import RunDirectory, RunDirectoryError

_log = logging.getLogger(__name__)

ROLE_COLOURS = {"teacher": "tab:red", "student": "tab:blue", "solo": "tab:green"}


# One panel gives one Axes, as pyplot's does (the overlap with the general form is intended).
@overload
def subplots(  # type: ignore[overload-overlap]
    nrows: Literal[1] = 1,
    ncols: Literal[1] = 1,
    *,
    figsize: tuple[float, float] | None = None,
    squeeze: Literal[True] = True,
) -> tuple[Figure, Axes]: ...


@overload
def subplots(
    nrows: int,
    ncols: int = 1,
    *,
    figsize: tuple[float, float] | None = None,
    squeeze: bool = True,
) -> tuple[Figure, np.ndarray]: ...


def subplots(
    nrows: int = 1,
    ncols: int = 1,
    *,
    figsize: tuple[float, float] | None = None,
    squeeze: bool = True,
) -> tuple[Figure, Axes | np.ndarray]:
    """A figure drawn by Agg and its axes, as ``pyplot.subplots`` gives them, without pyplot.

    The figure belongs to no pyplot window list and leaves matplotlib's backend as the user
    set it, so importing or calling the plots changes nothing in a notebook; it is freed with
    its last reference. With ``squeeze`` (the default) one panel comes back as one ``Axes``,
    several as an array of them.
    """
    figure = Figure(figsize=figsize)
    FigureCanvasAgg(figure)
    return figure, figure.subplots(nrows, ncols, squeeze=squeeze)


class SkipPlot(Exception):
    """Raised by a plot function when the run holds no data for it; the message says why."""


@dataclass
class RunData:
    """The rows of a run directory's logs and lineage, as plots read them.

    Attributes:
        path: The run directory.
        metrics: ``metrics.jsonl`` rows.
        tasks: ``tasks.jsonl`` rows.
        ratings: ``ratings.jsonl`` rows.
        lineage: ``lineage.csv`` rows (strings, as the CSV holds them).
        config: ``config.yaml`` (the fully resolved configuration).
    """

    path: Path
    metrics: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    ratings: list[dict[str, Any]] = field(default_factory=list)
    lineage: list[dict[str, str]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PlotReport:
    """What :func:`make_plots` wrote and what it skipped.

    Attributes:
        written: Paths of the PNG files written.
        notes: One line per skipped plot, naming it and the reason.
    """

    written: list[Path]
    notes: list[str]


#: Plot functions by name; each writes ``plots/<name>.png``.
PLOTS: Registry[Callable[[RunData], Figure]] = Registry("plot", callables=True)


def load_run_data(path: str | os.PathLike[str]) -> RunData:
    """Read the logs and ``lineage.csv`` of a run directory (absent files read as empty).

    Raises:
        RunDirectoryError: If ``path`` is not a run directory, a log line is not JSON, a
            file is not UTF-8 text, or ``lineage.csv`` has no ``id`` column.
    """
    run_dir = RunDirectory(path)
    run_dir.require()
    lineage: list[dict[str, str]] = []
    if run_dir.lineage_path.is_file():
        try:
            text = read_in(run_dir.path, run_dir.lineage_path.name).decode("utf-8")
            reader = csv.DictReader(io.StringIO(text, newline=""))
            lineage = list(reader)
        except (UnicodeDecodeError, csv.Error) as error:
            raise RunDirectoryError(
                f"{run_dir.lineage_path}: not a readable CSV file ({error})"
            ) from None
        if text.strip() and "id" not in (reader.fieldnames or ()):
            raise RunDirectoryError(f"{run_dir.lineage_path}: no 'id' column, not a lineage file")
        lineage = [row for row in lineage if row.get("id")]
    return RunData(
        path=run_dir.path,
        metrics=run_dir.read_log("metrics"),
        tasks=run_dir.read_log("tasks"),
        ratings=run_dir.read_log("ratings"),
        lineage=lineage,
        config=run_dir.read_config(),
    )


def _number(value: object) -> float | None:
    if not isinstance(value, (str, bytes, bytearray, SupportsFloat, SupportsIndex)):
        return None  # what ``float`` refuses with a TypeError
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _series(rows: list[dict[str, Any]], key: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for row in rows:
        x, y = _number(row.get("step")), _number(row.get(key))
        if x is not None and y is not None:
            xs.append(x)
            ys.append(y)
    return xs, ys


def _plot_metric_panels(data: RunData, panels: list[list[str]], title: str) -> Figure:
    shown = [[k for k in keys if _series(data.metrics, k)[0]] for keys in panels]
    shown = [keys for keys in shown if keys]
    if not shown:
        wanted = ", ".join(k for keys in panels for k in keys)
        raise SkipPlot(f"metrics.jsonl has none of {wanted}")
    figure, axes = subplots(len(shown), 1, figsize=(7, 2.6 * len(shown)), squeeze=False)
    for ax, keys in zip(axes[:, 0], shown, strict=True):
        for key in keys:
            ax.plot(*_series(data.metrics, key), marker=".", label=key)
        ax.set_ylabel(" / ".join(keys) if len(keys) == 1 else "value")
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    axes[0, 0].set_title(title)
    return figure
