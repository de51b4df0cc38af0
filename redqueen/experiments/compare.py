"""Compare conditions over seeds (``redqueen compare``): bands over time and final values with CIs.

A condition is a group of run directories that differ only in their seed: the trials of one
grid point of a sweep directory (``sweep.json``), a folder whose sub-folders are runs, or a
single run. For each chosen metric, :func:`compare` computes per condition and step the mean
over seeds with a Student t confidence band (:func:`redqueen.experiments.stats.t_ci`: a
bootstrap over 2-4 seeds covers far less than it claims), the final value of every run, their
mean with a CI, and a two-sided Mann-Whitney U test between every pair of conditions. Under
:data:`FEW_SEEDS` seeds the table carries a caveat. It writes ``compare.png`` (one panel per metric, one band per
condition), ``compare.json`` (every number drawn) and ``compare.md`` (the table).

The folders it reads are run directories and hold data only: each run is walked for links
first (:meth:`~redqueen.experiments.rundir.RunDirectory.require`), a sweep's ``sweep.json``
may name only folders inside the sweep, and the three files are written from the output
folder's handle down, never through a symbolic link (a planted ``compare`` link, or one at
``compare/compare.md``, is refused before anything is written).
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from redqueen.experiments._display import shown
from redqueen.experiments._safe_paths import check_links, write_in
from redqueen.experiments.rundir import RunDirectory
from redqueen.experiments.stats import Interval, rank_test, smallest_rank_p, t_ci
from redqueen.experiments.sweep import MANIFEST, read_manifest

_log = logging.getLogger(__name__)

#: Metrics drawn when none are named.
DEFAULT_METRICS = ("best_rating", "solve_rate")
#: Conditions with fewer seeds than this get a caveat under the table.
FEW_SEEDS = 5


@dataclass(frozen=True)
class Band:
    """One condition's metric over time: mean over seeds and a t band per step.

    Attributes:
        condition: The condition's name.
        metric: The metric.
        steps: Steps at which every run of the condition logged the metric.
        mean: Mean over runs per step.
        low: Lower end of the band per step.
        high: Upper end of the band per step.
        runs: Number of runs (seeds).
    """

    condition: str
    metric: str
    steps: list[float]
    mean: list[float]
    low: list[float]
    high: list[float]
    runs: int


@dataclass(frozen=True)
class FinalValues:
    """The last logged value of a metric in every run of a condition, with its mean's CI."""

    condition: str
    metric: str
    values: list[float]
    interval: Interval


def find_conditions(paths: Sequence[str | os.PathLike[str]]) -> dict[str, list[Path]]:
    """Condition -> run directories, from sweep directories, folders of runs or single runs.

    Every run found is walked for links and special files before anything is read.

    Raises:
        ValueError: Naming the path, if it is none of these or two conditions share a name.
        UnsafePathError: If a run, or the folder of runs, holds a symbolic link.
    """
    groups: dict[str, list[Path]] = {}
    for raw in paths:
        path = Path(raw)
        if (path / MANIFEST).is_file():
            found = read_manifest(path)
        elif (path / "config.yaml").is_file():
            found = {path.name: [path]}
        elif path.is_dir() and any((p / "config.yaml").is_file() for p in path.iterdir()):
            runs = sorted(p for p in path.iterdir() if (p / "config.yaml").is_file())
            check_links(path, *(p.name for p in runs))
            found = {path.name: runs}
        else:
            raise ValueError(f"{path}: not a sweep directory, a run directory or a folder of runs")
        for name, runs in found.items():
            if name in groups:
                raise ValueError(f"{path}: condition {name!r} is given twice")
            for run in runs:
                RunDirectory(run).require()
            groups[name] = runs
    return groups


def _series(run: Path, metric: str) -> dict[float, float]:
    series = {}
    for row in RunDirectory(run).read_log("metrics"):
        step, value = row.get("step"), row.get(metric)
        if isinstance(step, (int, float)) and isinstance(value, (int, float)) and not isinstance(value, bool):
            series[float(step)] = float(value)
    return series


def metric_band(condition: str, runs: Sequence[Path], metric: str, *, confidence: float = 0.95) -> Band:
    """The condition's band for ``metric`` over the steps every run logged."""
    series = [_series(run, metric) for run in runs]
    steps = sorted(set.intersection(*(set(s) for s in series))) if series else []
    mean, low, high = [], [], []
    for step in steps:
        interval = t_ci([s[step] for s in series], confidence=confidence)
        mean.append(interval.mean)
        low.append(interval.low)
        high.append(interval.high)
    return Band(condition, metric, steps, mean, low, high, len(runs))


def final_values(condition: str, runs: Sequence[Path], metric: str) -> FinalValues | None:
    """Each run's last logged ``metric`` and their mean with a t CI (``None`` if none logged it)."""
    values = []
    for run in runs:
        series = _series(run, metric)
        if series:
            values.append(series[max(series)])
    if not values:
        return None
    return FinalValues(condition, metric, values, t_ci(values))


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` computed and wrote.

    Attributes:
        bands: Per metric, one :class:`Band` per condition.
        finals: Per metric, one :class:`FinalValues` per condition that logged it.
        tests: Per metric, ``(condition a, condition b, Mann-Whitney U p-value)`` per pair.
        files: The files written.
        table: What ``compare.md`` holds.
    """

    bands: dict[str, list[Band]]
    finals: dict[str, list[FinalValues]]
    tests: dict[str, list[tuple[str, str, float | None]]]
    files: list[Path]
    table: str = ""


def compare(
    paths: Sequence[str | os.PathLike[str]],
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    out: str | os.PathLike[str] | None = None,
) -> Comparison:
    """Bands, final values with CIs and rank tests for ``metrics`` across the conditions in ``paths``.

    Args:
        paths: Sweep directories, folders of runs or run directories.
        metrics: Columns of ``metrics.jsonl`` to compare.
        out: Folder for ``compare.png``, ``compare.json`` and ``compare.md`` (default: a
            ``compare`` folder inside the first path).

    Raises:
        ValueError: If a path holds no runs or no run logged one of the metrics (it is named).
        UnsafePathError: If a run holds a symbolic link, or one stands where an output goes.
    """
    conditions = find_conditions(paths)
    bands: dict[str, list[Band]] = {}
    finals: dict[str, list[FinalValues]] = {}
    tests: dict[str, list[tuple[str, str, float | None]]] = {}
    for metric in metrics:
        finals[metric] = [f for name, runs in conditions.items() if (f := final_values(name, runs, metric))]
        if not finals[metric]:
            raise ValueError(f"metric {metric!r}: no run in {', '.join(map(str, paths))} logged it")
        bands[metric] = [metric_band(name, runs, metric) for name, runs in conditions.items()]
        tests[metric] = [(a.condition, b.condition, rank_test(a.values, b.values))
                         for a, b in itertools.combinations(finals[metric], 2)]
    if out is not None:
        root, folder = Path(out), ""
        root.mkdir(parents=True, exist_ok=True)
    else:
        root, folder = Path(paths[0]), "compare"
    table = _markdown(finals, tests)
    contents = {
        "compare.png": _draw(bands),
        "compare.json": _json_text(bands, finals, tests).encode(),
        "compare.md": table.encode(),
    }
    names = {name: f"{folder}/{name}" if folder else name for name in contents}
    check_links(root, *names.values())  # every output refused before any is written
    files = [write_in(root, names[name], data) for name, data in contents.items()]
    _log.info("compared %d conditions on %s into %s", len(conditions), ", ".join(metrics), shown(files[0].parent))
    return Comparison(bands, finals, tests, files, table)


def _draw(bands: Mapping[str, list[Band]]) -> bytes:
    """``compare.png``: one panel per metric, a band per condition."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(bands), 1, figsize=(7, 3 * len(bands)), squeeze=False)
    for ax, (metric, per_condition) in zip(axes[:, 0], bands.items(), strict=True):
        for band in per_condition:
            if not band.steps:
                continue
            line, = ax.plot(band.steps, band.mean, label=f"{band.condition} (n={band.runs})")
            ax.fill_between(band.steps, band.low, band.high, color=line.get_color(), alpha=0.25)
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    axes[-1, 0].set_xlabel("step")
    axes[0, 0].set_title("mean over seeds, 95% t band")
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=110)
    plt.close(figure)
    return image.getvalue()


def _json_text(bands: Mapping[str, list[Band]], finals: Mapping[str, list[FinalValues]],
               tests: Mapping[str, list[tuple[str, str, float | None]]]) -> str:
    """``compare.json``: every number drawn."""
    data = {
        metric: {
            "bands": [asdict(b) for b in bands[metric]],
            "final": [{"condition": f.condition, "values": f.values, **asdict(f.interval)} for f in finals[metric]],
            "mann_whitney_u": [{"a": a, "b": b, "p": p} for a, b, p in tests[metric]],
        }
        for metric in bands
    }
    return json.dumps(data, indent=2) + "\n"


def _markdown(finals: Mapping[str, list[FinalValues]],
              tests: Mapping[str, list[tuple[str, str, float | None]]]) -> str:
    """``compare.md``: the table of final values and the rank tests (condition names escaped)."""
    lines = ["# Final values per condition", "",
             "Mean over seeds of each run's last logged value, 95% Student t CI (over seeds).", ""]
    for metric, rows in finals.items():
        lines += [f"## {metric}", "", "| condition | runs | mean | 95% CI |", "| --- | ---: | ---: | --- |"]
        for f in rows:
            ci = "n/a (one run)" if f.interval.n < 2 else f"{f.interval.low:.4g} to {f.interval.high:.4g}"
            lines.append(f"| {shown(f.condition)} | {f.interval.n} | {f.interval.mean:.4g} | {ci} |")
        few = [f"{shown(f.condition)} (n = {f.interval.n})" for f in rows if f.interval.n < FEW_SEEDS]
        if few:
            lines += ["", f"Caveat: fewer than {FEW_SEEDS} seeds in {', '.join(few)}. The t interval assumes "
                      "roughly normal seed means and is wide; read such comparisons as rough."]
        if tests[metric]:
            sizes = {f.condition: f.interval.n for f in rows}
            lines += ["", "Two-sided Mann-Whitney U between conditions (the smallest p possible with "
                      "n1 and n2 seeds is 2/C(n1 + n2, n1)):", ""]
            for a, b, p in tests[metric]:
                floor = smallest_rank_p(sizes[a], sizes[b])
                p_text = "n/a" if p is None else f"{p:.3g}"
                lines.append(f"- {shown(a)} vs {shown(b)}: p = {p_text} (n = {sizes[a]} vs {sizes[b]}; "
                             f"smallest possible p {floor:.3g})")
        lines.append("")
    return "\n".join(lines)
