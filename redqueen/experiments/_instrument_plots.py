"""Plots of the instruments that can show an arms race or a collapse, registered in
:data:`redqueen.experiments.plots.PLOTS` when that module is imported.

- ``learning``: whether the inner loop moves the adapters (``kl_from_base``, ``weight_change``,
  ``informative_share``, ``clip_fraction``);
- ``task_measures``: complexity and base-model difficulty of the valid proposed tasks over
  time, per proposing role;
- ``coverage``: behaviour cells of task space filled so far and per step;
- ``solve_oscillation``: the students' solve rate, its running mean and the detrended residual
  whose variance tells an oscillating (cycling) game from a saturating one.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from matplotlib.figure import Figure

from redqueen.experiments._plot_base import (
    PLOTS,
    ROLE_COLOURS,
    RunData,
    SkipPlot,
    _number,
    _plot_metric_panels,
    _series,
    subplots,
)

#: Columns of ``tasks.jsonl`` drawn by ``task_measures``.
TASK_MEASURES = ("ast_nodes", "halstead_volume", "cyclomatic", "base_solve_rate")

#: Window (steps) of the running mean that ``solve_oscillation`` detrends with.
TREND_WINDOW = 3


@PLOTS.register("learning")
def plot_learning(data: RunData) -> Figure:
    """How far the members have moved from the base model, and how much signal they got."""
    panels = [["kl_from_base"], ["weight_change"], ["informative_share", "clip_fraction"]]
    return _plot_metric_panels(data, panels, "inner loop: distance from the base model")


@PLOTS.register("task_measures")
def plot_task_measures(data: RunData) -> Figure:
    """Mean program measures and base-model solve rate of valid tasks per step, per role."""
    roles = {str(row.get("id")): str(row.get("role")) for row in data.ratings}
    values: dict[str, dict[str, dict[float, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for row in data.tasks:
        step = _number(row.get("step"))
        if step is None or not row.get("valid"):
            continue
        role = roles.get(str(row.get("teacher")), "teacher")
        for key in TASK_MEASURES:
            value = _number(row.get(key))
            if value is not None:
                values[key][role][step].append(value)
    shown = [key for key in TASK_MEASURES if values.get(key)]
    if not shown:
        raise SkipPlot(f"tasks.jsonl has none of {', '.join(TASK_MEASURES)}")
    figure, axes = subplots(len(shown), 1, figsize=(7, 2.4 * len(shown)), squeeze=False)
    for ax, key in zip(axes[:, 0], shown, strict=True):
        for role in sorted(values[key]):
            steps = sorted(values[key][role])
            ax.plot(
                steps,
                [np.mean(values[key][role][s]) for s in steps],
                marker=".",
                color=ROLE_COLOURS.get(role),
                label=f"proposed by {role}",
            )
        ax.set_ylabel(key)
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    axes[0, 0].set_title("valid tasks: complexity and base-model solve rate")
    return figure


@PLOTS.register("coverage")
def plot_coverage(data: RunData) -> Figure:
    """Behaviour cells of task space filled so far (cumulative) and first filled per step."""
    return _plot_metric_panels(
        data, [["coverage_cells"], ["new_cells"]], "task-space coverage (behaviour cells)"
    )


@PLOTS.register("solve_oscillation")
def plot_solve_oscillation(data: RunData) -> Figure:
    """Solve rate with its running mean, and the detrended residual with its variance."""
    steps, rates = _series(data.metrics, "solve_rate")
    if len(steps) < 2:
        raise SkipPlot("metrics.jsonl has fewer than 2 steps with a solve_rate")
    rate = np.asarray(rates)
    kernel = np.ones(min(TREND_WINDOW, len(rate))) / min(TREND_WINDOW, len(rate))
    padded = np.pad(rate, (len(kernel) // 2, (len(kernel) - 1) // 2), mode="edge")
    trend = np.convolve(padded, kernel, mode="valid")
    residual = rate - trend
    figure, axes = subplots(2, 1, figsize=(7, 5), squeeze=False)
    top, bottom = axes[0, 0], axes[1, 0]
    top.plot(steps, rate, marker=".", label="solve_rate")
    top.plot(steps, trend, label=f"running mean ({len(kernel)} steps)")
    base_steps, base = _series(data.metrics, "base_solve_rate")
    if base_steps:
        top.plot(base_steps, base, linestyle="--", label="base model on the same tasks")
    top.set_ylabel("solve rate")
    top.set_title("solve-rate oscillation")
    top.legend(fontsize="small")
    bottom.bar(steps, residual, color="tab:gray")
    bottom.set_ylabel("detrended")
    bottom.set_xlabel("step")
    bottom.set_title(f"residual variance {float(np.var(residual)):.4g}", fontsize="small")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    return figure
