"""The plots that say whether a run made progress: a one-page summary and the CIAO matrix.

``summary`` puts the run's objective headline (:mod:`._headline`: held-out lift over the base
model, the games' objective skill, or the lift over the base model on the step's tasks) first,
with its running mean, beside the students against the frozen base model, the best rating
(labelled as what it is: relative, and rising by itself) and the population's diversity.
``ciao`` draws the CIAO matrix (:mod:`.ciao`) with the other plots. Registered in
:data:`~redqueen.experiments._plot_base.PLOTS` when :mod:`.plots` is imported.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from redqueen.experiments._headline import headline_metric, metric_label
from redqueen.experiments._plot_base import PLOTS, RunData, SkipPlot, _series
from redqueen.experiments._safe_paths import read_in

if TYPE_CHECKING:
    from redqueen.experiments.ciao import CiaoResult

#: Running-mean window of the summary's headline panel, in steps.
SMOOTHING = 5
#: Environments whose matches are cheap enough to play for the CIAO plot at the end of a run.
CHEAP_MATCHES = ("surrogate", "games")
#: Students against the frozen base model: (students' column, base model's column, what on).
_AGAINST_BASE = (("heldout_solve_rate", "base_heldout_solve_rate", "held-out tasks"),
                 ("solve_rate", "base_solve_rate", "the step's tasks"))


def _running_mean(values: list[float], window: int = SMOOTHING) -> np.ndarray:
    data = np.asarray(values, dtype=float)
    size = min(window, len(data))
    return np.convolve(np.pad(data, (size - 1, 0), mode="edge"), np.ones(size) / size, mode="valid")


def _line(ax: Axes, data: RunData, key: str, **style: Any) -> bool:
    steps, values = _series(data.metrics, key)
    if steps:
        ax.plot(steps, values, **style)
    return bool(steps)


@PLOTS.register("summary")
def plot_summary(data: RunData) -> Figure:
    """One page: the objective headline, students against the base model, the (relative) best
    rating, and diversity."""
    columns = {k for row in data.metrics for k in row}
    if not columns - {"step", "seconds"}:
        raise SkipPlot("metrics.jsonl has no rows")
    headline = headline_metric(columns)
    figure = Figure(figsize=(11, 7))
    (top_left, top_right), (bottom_left, bottom_right) = figure.subplots(2, 2)
    if headline is not None:
        steps, values = _series(data.metrics, headline)
        top_left.plot(steps, values, ".", color="tab:gray", alpha=0.6, label="per step")
        top_left.plot(steps, _running_mean(values), color="tab:purple", label=f"running mean ({SMOOTHING} steps)")
        if headline.endswith("lift"):
            top_left.axhline(0.0, color="k", linewidth=0.8, linestyle=":", label="base model")
        top_left.set_title(f"headline: {metric_label(headline)}", fontsize="medium")
        top_left.legend(fontsize="small")
    else:
        top_left.text(0.5, 0.5, "no objective measure logged\n(held-out lift, objective skill,\n"
                      "lift over the base model)", ha="center", va="center", transform=top_left.transAxes)
        top_left.set_title("headline: none", fontsize="medium")
    for students, base, where in _AGAINST_BASE:
        if _line(top_right, data, students, marker=".", label=f"students on {where}"):
            _line(top_right, data, base, linestyle="--", label=f"base model on {where}")
            top_right.set_ylim(-0.02, 1.02)
            top_right.legend(fontsize="small")
            break
    top_right.set_title("solve rate: students against the frozen base model", fontsize="medium")
    if _line(bottom_left, data, "best_rating", marker=".", color="tab:red"):
        bottom_left.set_ylabel("conservative rating mu - 3 sigma", fontsize="small")
    bottom_left.set_title(metric_label("best_rating"), fontsize="medium")
    for key in ("genotypic_diversity", "behavioural_diversity"):
        _line(bottom_right, data, key, marker=".", label=key)
    if bottom_right.lines:
        bottom_right.legend(fontsize="small")
    bottom_right.set_title("diversity", fontsize="medium")
    for ax in (top_left, top_right, bottom_left, bottom_right):
        ax.grid(alpha=0.3)
        ax.set_xlabel("step")
    figure.suptitle(f"run summary: {data.path.name}")
    return figure


def _saved_ciao(data: RunData) -> CiaoResult | None:
    """``ciao.json`` as :class:`~redqueen.experiments.ciao.CiaoResult`, or ``None`` if absent."""
    from redqueen.experiments.ciao import CiaoResult

    if not (data.path / "ciao.json").is_file():
        return None
    try:
        saved = json.loads(read_in(data.path, "ciao.json").decode("utf-8"))
        result = CiaoResult(steps=[int(s) for s in saved["steps"]], proposer_role=str(saved["proposer_role"]),
                            solver_role=str(saved["solver_role"]),
                            solver_score=[[float(v) for v in row] for row in saved["solver_score"]],
                            pairs_per_cell=int(saved["pairs_per_cell"]), seed=int(saved["seed"]))
    except (ValueError, KeyError, TypeError) as error:
        raise SkipPlot(f"ciao.json is not a CIAO matrix ({type(error).__name__})") from None
    if np.asarray(result.solver_score).shape != (len(result.steps),) * 2:
        raise SkipPlot("ciao.json: the matrix does not match its steps")
    return result


@PLOTS.register("ciao")
def plot_ciao(data: RunData) -> Figure:
    """The CIAO matrix: played here for the surrogate environments (seed 0, as ``redqueen ciao``
    plays it), read from ``ciao.json`` for the others (their matches need the model)."""
    from redqueen.experiments.ciao import ciao_figure, ciao_matrix

    environment = (data.config.get("environment") or {}).get("name")
    has_snapshots = (data.path / "snapshots").is_dir() and any((data.path / "snapshots").iterdir())
    if environment in CHEAP_MATCHES and has_snapshots:
        try:
            return ciao_figure(ciao_matrix(data.path))
        except ValueError as error:  # the run is fine; only this plot cannot be drawn
            raise SkipPlot(f"CIAO matrix: {' '.join(str(error).split())}") from None
    saved = _saved_ciao(data)
    if saved is not None:
        return ciao_figure(saved)
    if not has_snapshots:
        raise SkipPlot("no snapshots (set evolution.snapshot_every > 0)")
    raise SkipPlot(f"its matches need the model: run `redqueen ciao {data.path}`, then plot again")
