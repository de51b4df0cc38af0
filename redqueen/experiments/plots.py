"""Plots of a run, drawn from its run directory alone (``redqueen plot DIR``).

Every plot is a function ``(RunData) -> Figure`` registered in :data:`PLOTS`; it raises
:class:`SkipPlot` with a reason when the run has no data for it (a surrogate run has no task
types, a single-objective run no Pareto front), and :func:`make_plots` turns that into a note.
A new plot is one decorated function::

    @PLOTS.register("my_plot")
    def my_plot(data: RunData) -> Figure:
        ...

Objective values are taken as "larger is better" (ratings, rewards, solve rates).
"""

from __future__ import annotations

import io
import logging
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, TypedDict

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from redqueen.experiments._pareto_plot import (
    configured_matrix,
    draw_front,
    draw_hypervolume,
    objective_rows,
)
from redqueen.experiments._plot_base import (
    PLOTS,
    ROLE_COLOURS,
    PlotReport,
    RunData,
    SkipPlot,
    _number,
    _plot_metric_panels,
    _series,
    load_run_data,
    subplots,
)
from redqueen.experiments._safe_paths import check_links, write_in

__all__ = ["PLOTS", "PlotReport", "RunData", "SkipPlot", "load_run_data", "make_plots"]

_log = logging.getLogger(__name__)


def make_plots(
    path: str | os.PathLike[str], *, out_dir: str | os.PathLike[str] | None = None
) -> PlotReport:
    """Write every registered plot of a run as ``<out_dir>/<name>.png``.

    Args:
        path: The run directory.
        out_dir: Where the PNG files go; default ``<path>/plots``.

    Returns:
        The files written and a note per plot skipped for lack of data.

    Raises:
        UnsafePathError: If ``plots/`` (or a file in it, or in ``out_dir``) is a symbolic
            link: every file is written from the folder's handle, never through a link.
    """
    data = load_run_data(path)
    if out_dir is None:
        root, folder = data.path, "plots"
        check_links(root, folder)  # refused before any figure is drawn
    else:
        root, folder = Path(out_dir), ""
        root.mkdir(parents=True, exist_ok=True)
    written, notes = [], []
    for name in PLOTS:
        try:
            figure = PLOTS[name](data)
        except SkipPlot as reason:
            notes.append(f"{name}: skipped ({reason})")
            _log.debug("plot %s skipped: %s", name, reason)
            continue
        figure.tight_layout()
        image = io.BytesIO()
        figure.savefig(image, format="png", dpi=110, bbox_inches="tight")
        _release(figure)
        written.append(write_in(root, f"{folder}/{name}.png" if folder else f"{name}.png", image.getvalue()))
    return PlotReport(written, notes)


def _release(figure: Figure) -> None:
    """Drop a plug-in's pyplot figure from pyplot's window list (ours are not in it)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close(figure)


def _parse_ancestors(text: str) -> list[str]:
    inner = (text or "").strip().strip("[]")
    parts = [p.strip().strip("'\"") for p in inner.split(",")]
    return [p for p in parts if p and p.lower() not in ("none", "nan")]


def _last_rows_by_member(ratings: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    last: dict[str, dict[str, Any]] = {}
    for row in ratings:
        if "id" in row:
            last[str(row["id"])] = row
    return last


@PLOTS.register("performance")
def plot_performance(data: RunData) -> Figure:
    """Student solve rate, teacher reward and valid-task share over time."""
    per_type = sorted({k for row in data.metrics for k in row if k.startswith("solve_rate/")})
    panels = [["solve_rate", *per_type], ["teacher_reward"], ["valid_share"]]
    return _plot_metric_panels(data, panels, "student solve rate and teacher reward")


@PLOTS.register("diversity")
def plot_diversity(data: RunData) -> Figure:
    """Genotypic (weight-space) and behavioural diversity of the population over time."""
    panels = [["genotypic_diversity"], ["behavioural_diversity"], ["coverage"]]
    return _plot_metric_panels(data, panels, "population diversity")


@PLOTS.register("complexity")
def plot_complexity(data: RunData) -> Figure:
    """Mean complexity of valid proposed tasks per step, one line per task type (code runs only)."""
    if (data.config.get("environment") or {}).get("name") == "surrogate":
        raise SkipPlot("a surrogate run's tasks are vectors, with no program complexity")
    sums: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in data.tasks:
        value, step = _number(row.get("complexity")), _number(row.get("step"))
        if row.get("task_type") and value is not None and step is not None:
            sums[str(row["task_type"])][step].append(value)
    if not sums:  # fall back on per-type metrics
        for key in sorted({k for row in data.metrics for k in row if k.startswith("complexity/")}):
            for x, y in zip(*_series(data.metrics, key), strict=True):
                sums[key.split("/", 1)[1]][x].append(y)
    if not sums:
        raise SkipPlot("no task types with a complexity in tasks.jsonl or metrics.jsonl")
    figure, ax = subplots(figsize=(7, 3.5))
    for task_type in sorted(sums):
        steps = sorted(sums[task_type])
        ax.plot(steps, [np.mean(sums[task_type][s]) for s in steps], marker=".", label=task_type)
    ax.set_xlabel("step")
    ax.set_ylabel("mean complexity of valid tasks")
    ax.set_title("task complexity per task type")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return figure


@PLOTS.register("ratings")
def plot_ratings(data: RunData) -> Figure:
    """Each member's latest rating, mu +- sigma (hollow: no longer rated), and mu over time."""
    last = _last_rows_by_member(data.ratings)
    members = [m for m, r in last.items() if _number(r.get("mu")) is not None]
    if not members:
        raise SkipPlot("ratings.jsonl has no rows with mu")
    final_step = max(_number(last[m].get("step")) or 0.0 for m in members)
    members.sort(key=lambda m: (str(last[m].get("role", "")), -float(last[m]["mu"])))
    figure, (left, right) = subplots(1, 2, figsize=(12, max(3.0, 0.25 * len(members) + 1.5)))
    for y, member in enumerate(members):
        row = last[member]
        colour = ROLE_COLOURS.get(str(row.get("role")), "tab:gray")
        current = (_number(row.get("step")) or 0.0) == final_step
        left.errorbar(float(row["mu"]), y, xerr=_number(row.get("sigma")) or 0.0, fmt="o",
                      color=colour, capsize=3, markerfacecolor=colour if current else "white")
    left.set_yticks(range(len(members)), members, fontsize="x-small")
    left.set_xlabel(f"rating mu +- sigma (filled: rated at the last step, {final_step:g})")
    left.grid(alpha=0.3)
    history: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row in data.ratings:
        step, mu = _number(row.get("step")), _number(row.get("mu"))
        if step is not None and mu is not None and "id" in row:
            history[str(row["id"])].append((step, mu))
    for member, points in history.items():
        colour = ROLE_COLOURS.get(str(last.get(member, {}).get("role")), "tab:gray")
        right.plot(*zip(*points, strict=True), ".-", color=colour, alpha=0.6, linewidth=1)
    right.set_xlabel("step")
    right.set_ylabel("rating mu (relative, inflates)")
    right.grid(alpha=0.3)
    figure.suptitle("ratings (colour: role; relative to the other members, so they rise by themselves)")
    return figure


@PLOTS.register("pareto")
def plot_pareto(data: RunData) -> Figure:
    """Per role: the last step's vectors of the configured objectives (``objectives.<role>`` in
    ``config.yaml``) with the Pareto front, and hypervolume over time; single-objective roles
    are left out."""
    configured, by_role = objective_rows(data)
    roles = [r for r in sorted(by_role) if len(configured_matrix(by_role[r], configured[r]))]
    if not roles:
        raise SkipPlot("config.yaml configures no role with two or more objectives (or ratings.jsonl lacks their values)")
    figure, axes = subplots(len(roles), 2, figsize=(11, 4 * len(roles)), squeeze=False)
    for (front_ax, hv_ax), role in zip(axes, roles, strict=True):
        rows = by_role[role]
        names = configured[role]
        everything = configured_matrix(rows, names)
        worst, spread = everything.min(axis=0), np.ptp(everything, axis=0)
        reference = worst - 0.1 * np.where(spread > 0, spread, 1.0)
        draw_front(front_ax, role, rows, names)
        draw_hypervolume(hv_ax, role, rows, names, reference)
    return figure


class _Member(TypedDict):
    """One member of ``lineage.csv``, as the lineage plots draw it."""

    name: str
    role: str
    operator: str
    parents: list[str]
    origin: float
    death: float | None


def _lineage_times(data: RunData) -> tuple[dict[str, _Member], float]:
    members: dict[str, _Member] = {}
    for row in data.lineage:
        origin = _number(row.get("origin_time"))
        members[row["id"]] = {
            "name": row.get("name") or row["id"],
            "role": row.get("role") or "member",
            "operator": row.get("operator") or "",
            "parents": _parse_ancestors(row.get("ancestor_list", "")),
            "origin": origin if origin is not None else 0.0,
            "death": _number(row.get("destruction_time")),
        }
    times = [m["origin"] for m in members.values()] + [
        m["death"] for m in members.values() if m["death"] is not None
    ]
    # A step that is not a number (a hand-edited or damaged row) is left out, as every plot does.
    steps = [step + 1 for r in data.metrics if (step := _number(r.get("step"))) is not None]
    end = max([*times, *steps, 0.0])
    return members, end


@PLOTS.register("lineage")
def plot_lineage(data: RunData) -> Figure:
    """Lineage tree: lifespans along time, edges from every parent (both for crossovers)."""
    members, end = _lineage_times(data)
    if not members:
        raise SkipPlot("lineage.csv is missing or empty")
    order = sorted(members, key=lambda m: (members[m]["role"], members[m]["origin"], m))
    row_of = {member: y for y, member in enumerate(order)}
    operators = sorted({m["operator"] for m in members.values() if m["parents"]})
    cmap = matplotlib.colormaps["Dark2"]  # kept apart from the role colours
    op_colour = {op: cmap(i % 8) for i, op in enumerate(operators)}
    figure, ax = subplots(figsize=(9, max(3.0, 0.22 * len(order) + 1.5)))
    for member, info in members.items():
        y, colour = row_of[member], ROLE_COLOURS.get(info["role"], "tab:gray")
        stop = info["death"] if info["death"] is not None else end
        ax.plot([info["origin"], stop], [y, y], color=colour, linewidth=2, alpha=0.7)
        ax.plot(info["origin"], y, "o", color=colour, markersize=4)
        for parent in info["parents"]:
            if parent in row_of:
                ax.annotate("", xy=(info["origin"], y), xytext=(info["origin"], row_of[parent]),
                            arrowprops={"arrowstyle": "->", "color": op_colour[info["operator"]],
                                        "connectionstyle": "arc3,rad=0.25", "alpha": 0.8})
    handles = [Line2D([], [], color=c, linewidth=2, label=r) for r, c in ROLE_COLOURS.items()
               if any(m["role"] == r for m in members.values())]
    handles += [Line2D([], [], color=c, label=f"{op} child") for op, c in op_colour.items()]
    ax.legend(handles=handles, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_yticks(range(len(order)), [members[m]["name"] for m in order], fontsize="x-small")
    ax.set_xlabel("step")
    ax.set_title("lineage (lines: lifespans, arrows: parent -> child)")
    return figure


@PLOTS.register("operators")
def plot_operators(data: RunData) -> Figure:
    """How the children of each operator fared: count, lifespan, survival and final rating."""
    members, end = _lineage_times(data)
    children = {m: i for m, i in members.items() if i["parents"] and i["operator"]}
    if not children:
        raise SkipPlot("lineage.csv has no children made by an operator yet")
    last = _last_rows_by_member(data.ratings)
    stats: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for info in children.values():
        op = info["operator"]
        stop = info["death"] if info["death"] is not None else end
        stats[op]["lifespan"].append(stop - info["origin"])
        stats[op]["alive"].append(1.0 if info["death"] is None else 0.0)
        mu = _number(last.get(info["name"], {}).get("mu"))
        if mu is not None:
            stats[op]["mu"].append(mu)
    operators = sorted(stats)
    panels = [("children", lambda s: len(s["lifespan"])),
              ("mean lifespan (steps)", lambda s: float(np.mean(s["lifespan"]))),
              ("share alive at the end", lambda s: float(np.mean(s["alive"]))),
              ("mean final rating mu", lambda s: float(np.mean(s["mu"])) if s["mu"] else 0.0)]
    figure, axes = subplots(1, len(panels), figsize=(3.2 * len(panels), 3.5))
    for ax, (label, value) in zip(axes, panels, strict=True):
        ax.bar(operators, [value(stats[op]) for op in operators], color="tab:purple")
        ax.set_title(label, fontsize="small")
        ax.tick_params(axis="x", rotation=45, labelsize="x-small")
    figure.suptitle("operator outcomes")
    return figure


@PLOTS.register("archive")
def plot_archive(data: RunData) -> Figure:
    """MAP-Elites: per role, the last step's grid archive as a heatmap of elite quality, and
    QD-score and coverage over time (pyribs' ``grid_archive_heatmap`` layout)."""
    last = next((row for row in reversed(data.metrics) if any(k.startswith("archive/") for k in row)), None)
    if last is None:
        raise SkipPlot("metrics.jsonl has no archive/<role> cells (not a map_elites run)")
    roles = sorted(k.split("/", 1)[1] for k in last if k.startswith("archive/"))
    from redqueen.evo.selection import GridSettings

    params = (data.config.get("evolution") or {}).get("selection_params") or {}
    grid_settings = GridSettings.model_validate(
        {key: value for key, value in params.items() if key in GridSettings.model_fields}
    )
    if any(len(cell) != 3 for role in roles for cell in last[f"archive/{role}"]):
        raise SkipPlot("the archive heatmap needs two-dimensional behaviour descriptors")
    figure, axes = subplots(len(roles), 2, figsize=(11, 4 * len(roles)), squeeze=False)
    for (heat_ax, curve_ax), role in zip(axes, roles, strict=True):
        cells = np.asarray(last[f"archive/{role}"], dtype=float).reshape(-1, 3)
        bins = np.broadcast_to(np.asarray(grid_settings.bins, dtype=int), 2)
        grid = np.full((int(bins[1]), int(bins[0])), np.nan)  # rows: second descriptor
        for i, j, quality in cells:
            grid[int(j), int(i)] = quality
        low = np.broadcast_to(np.asarray(grid_settings.low, dtype=float), 2)
        high = np.broadcast_to(np.asarray(grid_settings.high, dtype=float), 2)
        image = heat_ax.imshow(grid, origin="lower", aspect="auto", cmap="magma",
                               extent=(low[0], high[0], low[1], high[1]))
        figure.colorbar(image, ax=heat_ax, label="elite quality")
        heat_ax.set_xlabel("descriptor 0")
        heat_ax.set_ylabel("descriptor 1")
        heat_ax.set_title(f"{role}: archive at step {last.get('step')} ({len(cells)} elites)")
        for key, colour in ((f"qd_score/{role}", "tab:purple"), (f"coverage/{role}", "tab:green")):
            xs, ys = _series(data.metrics, key)
            axis = curve_ax if key.startswith("qd") else curve_ax.twinx()
            axis.plot(xs, ys, marker=".", color=colour, label=key)
            axis.set_ylabel(key.split("/")[0], color=colour)
        curve_ax.set_xlabel("step")
        curve_ax.set_title(f"{role}: QD-score and coverage", fontsize="small")
    return figure


# The instrument plots (learning, task measures, coverage, solve-rate oscillation), the run
# summary and the CIAO matrix live in their own modules; importing them registers them here.
from redqueen.experiments import _instrument_plots, _summary_plots  # noqa: E402, F401
