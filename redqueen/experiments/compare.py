"""Compare conditions over seeds (``redqueen compare``): bands over time and final values with CIs.

A condition is a group of run directories that differ only in their seed: the trials of one
grid point of a sweep directory (``sweep.json``), a folder whose sub-folders are runs, or a
single run. For each chosen metric (by default the runs' objective headline, e.g.
``heldout_lift``, then ``solve_rate`` and the relative ``best_rating``: :mod:`._headline`),
:func:`compare` computes per condition and step the mean over seeds with a Student t
confidence band (:func:`redqueen.experiments.stats.t_ci`: a bootstrap over 2-4 seeds covers far
less than it claims), each run's final value (its last logged value, or the mean of its last
``window`` logged steps), their mean with a CI, and a test between every pair of conditions:
a paired t test when both ran the same seeds (a seed shifts both alike), a two-sided
Mann-Whitney U test otherwise, with Holm's correction across the pairs of a metric. Intervals
of a metric with a known range (rates in [0, 1], lifts in [-1, 1]) are cut to that range
(:func:`redqueen.experiments.stats.within`: coverage is unchanged). Conditions are shown by
short labels from the configuration keys that set them apart
(:func:`redqueen.experiments.analysis.condition_labels`). Under :data:`FEW_SEEDS` seeds the
table carries a caveat. It writes ``compare.png`` (one panel per metric, one band per
condition: with the default metrics, a one-page summary of the study), ``compare.json``
(every number drawn) and ``compare.md`` (the table).

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
from dataclasses import asdict, dataclass, field
from pathlib import Path

from redqueen.experiments._conditions import condition_labels
from redqueen.experiments._display import shown
from redqueen.experiments._headline import headline_metric, metric_bounds, metric_label
from redqueen.experiments._safe_paths import check_links, write_in
from redqueen.experiments.rundir import RunDirectory
from redqueen.experiments.stats import (
    Interval,
    holm_adjusted,
    paired_t_test,
    rank_test,
    smallest_rank_p,
    t_ci,
    within,
)
from redqueen.experiments.sweep import MANIFEST, read_manifest

_log = logging.getLogger(__name__)

#: Metrics drawn when none are named, after the runs' objective headline (:func:`default_metrics`).
DEFAULT_METRICS = ("solve_rate", "best_rating")
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


def default_metrics(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """The runs' objective headline (:func:`redqueen.experiments._headline.headline_metric`,
    when any run logged one), then :data:`DEFAULT_METRICS`."""
    logged: set[str] = set()
    for runs in find_conditions(paths).values():
        for run in runs:
            for row in RunDirectory(run).read_log("metrics"):
                logged.update(row)
    headline = headline_metric(logged)
    return [*([headline] if headline else []), *DEFAULT_METRICS]


def metric_band(condition: str, runs: Sequence[Path], metric: str, *, confidence: float = 0.95) -> Band:
    """The condition's band for ``metric`` over the steps every run logged (cut to the
    metric's range, :func:`redqueen.experiments._headline.metric_bounds`)."""
    series = [_series(run, metric) for run in runs]
    steps = sorted(set.intersection(*(set(s) for s in series))) if series else []
    mean, low, high = [], [], []
    for step in steps:
        interval = within(t_ci([s[step] for s in series], confidence=confidence), metric_bounds(metric))
        mean.append(interval.mean)
        low.append(interval.low)
        high.append(interval.high)
    return Band(condition, metric, steps, mean, low, high, len(runs))


def final_values(condition: str, runs: Sequence[Path], metric: str, *, window: int = 1) -> FinalValues | None:
    """Each run's ``metric`` over its last ``window`` logged steps (their mean; ``window=1``:
    the last value) and their mean with a t CI cut to the metric's range (``None`` if no run
    logged it).

    Raises:
        ValueError: If ``window`` < 1.
    """
    if window < 1:
        raise ValueError(f"--window must be >= 1, got {window}")
    values = []
    for run in runs:
        series = _series(run, metric)
        if series:
            last = sorted(series)[-window:]
            values.append(sum(series[step] for step in last) / len(last))
    if not values:
        return None
    return FinalValues(condition, metric, values, within(t_ci(values), metric_bounds(metric)))


@dataclass(frozen=True)
class PairTest:
    """A test of one metric's final values between two conditions.

    Attributes:
        a: The first condition.
        b: The second condition.
        p: Two-sided p-value (``None``: too few runs to test).
        p_holm: ``p`` adjusted by Holm's method across the pairs of the metric.
        method: ``"paired t"`` (both ran the same seeds) or ``"Mann-Whitney U"``.
        paired: Whether the runs were paired by seed.
        n_a: Runs of ``a``.
        n_b: Runs of ``b``.
    """

    a: str
    b: str
    p: float | None
    p_holm: float | None
    method: str
    paired: bool
    n_a: int
    n_b: int


def _seeds(runs: Sequence[Path]) -> list[object]:
    return [RunDirectory(run).read_config().get("seed") for run in runs]


def _by_seed(final: FinalValues, seeds: Sequence[object]) -> dict[str, float] | None:
    """Seed -> final value, when every run has its own seed (else the runs cannot be paired)."""
    if len(final.values) != len(seeds) or None in seeds or len(set(map(repr, seeds))) < len(seeds):
        return None
    return {repr(seed): value for seed, value in zip(seeds, final.values, strict=True)}


def pair_tests(finals: Sequence[FinalValues], seeds: Mapping[str, Sequence[object]]) -> list[PairTest]:
    """Every pair of conditions tested, paired by seed where both ran the same seeds, with
    Holm's correction across the pairs."""
    raw = []
    for first, second in itertools.combinations(finals, 2):
        x, y = _by_seed(first, seeds[first.condition]), _by_seed(second, seeds[second.condition])
        if x is not None and y is not None and set(x) == set(y) and len(x) >= 2:
            order = sorted(x)
            raw.append((first, second, paired_t_test([x[k] for k in order], [y[k] for k in order]), "paired t"))
        else:
            raw.append((first, second, rank_test(first.values, second.values), "Mann-Whitney U"))
    adjusted = holm_adjusted([p for _, _, p, _ in raw])
    return [PairTest(a.condition, b.condition, p, holm, method, method == "paired t", a.interval.n, b.interval.n)
            for (a, b, p, method), holm in zip(raw, adjusted, strict=True)]


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` computed and wrote.

    Attributes:
        bands: Per metric, one :class:`Band` per condition.
        finals: Per metric, one :class:`FinalValues` per condition that logged it.
        tests: Per metric, one :class:`PairTest` per pair of conditions.
        files: The files written.
        table: What ``compare.md`` holds.
        labels: Condition -> its short label (plots and the table show these).
        window: Final values are the mean of each run's last this many logged steps.
    """

    bands: dict[str, list[Band]]
    finals: dict[str, list[FinalValues]]
    tests: dict[str, list[PairTest]]
    files: list[Path]
    table: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    window: int = 1


def compare(
    paths: Sequence[str | os.PathLike[str]],
    *,
    metrics: Sequence[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    window: int = 1,
) -> Comparison:
    """Bands, final values with CIs and tests for ``metrics`` across the conditions in ``paths``.

    Args:
        paths: Sweep directories, folders of runs or run directories.
        metrics: Columns of ``metrics.jsonl`` to compare (default: :func:`default_metrics`).
        out: Folder for ``compare.png``, ``compare.json`` and ``compare.md`` (default: a
            ``compare`` folder inside the first path).
        window: A run's final value is the mean of its last ``window`` logged steps.

    Raises:
        ValueError: If a path holds no runs, no run logged one of the metrics (it is named), or
            ``window`` < 1.
        UnsafePathError: If a run holds a symbolic link, or one stands where an output goes.
    """
    if window < 1:
        raise ValueError(f"--window must be >= 1, got {window}")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ValueError(f"--out {out} is a file, not a folder")
    conditions = find_conditions(paths)
    if metrics is None:
        metrics = [m for m in default_metrics(paths)
                   if any(_series(run, m) for runs in conditions.values() for run in runs)] or list(DEFAULT_METRICS)
    labels = condition_labels(conditions)
    seeds = {name: _seeds(runs) for name, runs in conditions.items()}
    bands: dict[str, list[Band]] = {}
    finals: dict[str, list[FinalValues]] = {}
    tests: dict[str, list[PairTest]] = {}
    for metric in metrics:
        finals[metric] = [f for name, runs in conditions.items()
                          if (f := final_values(name, runs, metric, window=window))]
        if not finals[metric]:
            raise ValueError(f"metric {metric!r}: no run in {', '.join(map(str, paths))} logged it")
        bands[metric] = [metric_band(name, runs, metric) for name, runs in conditions.items()]
        tests[metric] = pair_tests(finals[metric], seeds)
    if out is not None:
        root, folder = Path(out), ""
        root.mkdir(parents=True, exist_ok=True)
    else:
        root, folder = Path(paths[0]), "compare"
    table = _markdown(finals, tests, labels, window)
    contents = {
        "compare.png": _draw(bands, labels),
        "compare.json": _json_text(bands, finals, tests, labels, window).encode(),
        "compare.md": table.encode(),
    }
    names = {name: f"{folder}/{name}" if folder else name for name in contents}
    check_links(root, *names.values())  # every output refused before any is written
    files = [write_in(root, names[name], data) for name, data in contents.items()]
    _log.info("compared %d conditions on %s into %s", len(conditions), ", ".join(metrics), shown(files[0].parent))
    return Comparison(bands, finals, tests, files, table, labels, window)


def _draw(bands: Mapping[str, list[Band]], labels: Mapping[str, str]) -> bytes:
    """``compare.png``: one panel per metric, a band per condition, the legend beside the panels."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9, 3 * len(bands)))
    axes = figure.subplots(len(bands), 1, squeeze=False)
    for ax, (metric, per_condition) in zip(axes[:, 0], bands.items(), strict=True):
        for band in per_condition:
            if not band.steps:
                continue
            line, = ax.plot(band.steps, band.mean, label=f"{labels.get(band.condition, band.condition)} (n={band.runs})")
            ax.fill_between(band.steps, band.low, band.high, color=line.get_color(), alpha=0.25)
        ax.set_ylabel(metric_label(metric), fontsize="small")
        ax.grid(alpha=0.3)
    handles, names = axes[0, 0].get_legend_handles_labels()
    if handles:  # outside the axes, so it never covers a curve
        figure.legend(handles, names, fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0),
                      bbox_transform=axes[0, 0].transAxes)
    axes[-1, 0].set_xlabel("step")
    axes[0, 0].set_title("mean over seeds, 95% t band")
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=110, bbox_inches="tight")
    return image.getvalue()


def _json_text(bands: Mapping[str, list[Band]], finals: Mapping[str, list[FinalValues]],
               tests: Mapping[str, list[PairTest]], labels: Mapping[str, str], window: int) -> str:
    """``compare.json``: every number drawn, and each condition's label."""
    data: dict[str, object] = {
        metric: {
            "bands": [asdict(b) for b in bands[metric]],
            "final": [{"condition": f.condition, "values": f.values, **asdict(f.interval)} for f in finals[metric]],
            "tests": [asdict(t) for t in tests[metric]],
        }
        for metric in bands
    }
    data["_conditions"] = {"labels": dict(labels), "window": window}
    return json.dumps(data, indent=2) + "\n"


def _markdown(finals: Mapping[str, list[FinalValues]], tests: Mapping[str, list[PairTest]],
              labels: Mapping[str, str], window: int) -> str:
    """``compare.md``: the table of final values and the tests (condition labels escaped)."""
    def name(condition: str) -> str:
        return shown(labels.get(condition, condition))

    what = "last logged value" if window == 1 else f"mean over its last {window} steps"
    lines = ["# Final values per condition", "",
             f"Mean over seeds of each run's {what}, 95% Student t CI (over seeds; cut to the metric's "
             "range where it has one, e.g. [0, 1] for rates).", ""]
    for metric, rows in finals.items():
        lines += [f"## {metric_label(metric)}", "", "| condition | runs | mean | 95% CI |",
                  "| --- | ---: | ---: | --- |"]
        for f in rows:
            ci = "n/a (one run)" if f.interval.n < 2 else f"{f.interval.low:.4g} to {f.interval.high:.4g}"
            lines.append(f"| {name(f.condition)} | {f.interval.n} | {f.interval.mean:.4g} | {ci} |")
        few = [f"{name(f.condition)} (n = {f.interval.n})" for f in rows if f.interval.n < FEW_SEEDS]
        if few:
            lines += ["", f"Caveat: fewer than {FEW_SEEDS} seeds in {', '.join(few)}. The t interval assumes "
                      "roughly normal seed means and is wide; read such comparisons as rough."]
        if tests[metric]:
            lines += ["", "Two-sided tests between conditions: paired t over the seeds both ran, Mann-Whitney U "
                      "where the seeds differ (its smallest p with n1 and n2 seeds is 2/C(n1 + n2, n1)); "
                      f"Holm's correction across the {len(tests[metric])} comparison(s):", ""]
            for t in tests[metric]:
                p_text = "n/a" if t.p is None else f"{t.p:.3g}"
                holm = "n/a" if t.p_holm is None else f"{t.p_holm:.3g}"
                if t.paired:
                    detail = f"paired t over {t.n_a} seeds"
                else:
                    detail = (f"Mann-Whitney U, n = {t.n_a} vs {t.n_b}; smallest possible p "
                              f"{smallest_rank_p(t.n_a, t.n_b):.3g}")
                lines.append(f"- {name(t.a)} vs {name(t.b)}: p = {p_text} ({detail}; Holm {holm})")
        lines.append("")
    return "\n".join(lines)
