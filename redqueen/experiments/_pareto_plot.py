"""The pieces of the Pareto plot: configured objective vectors, their front and hypervolume.

:func:`~redqueen.experiments.plots.plot_pareto` draws, per role with two or more configured
objectives, the last step's vectors with the non-dominated ones marked (:func:`draw_front`)
and the hypervolume of each step against one reference point (:func:`draw_hypervolume`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from matplotlib.axes import Axes

from redqueen.experiments._plot_base import ROLE_COLOURS, RunData, _number

__all__ = ["configured_matrix", "draw_front", "draw_hypervolume", "objective_rows"]

#: Objectives computed from a member's rating rather than read from its ``objectives`` dict.
_RATING_OBJECTIVES = {"rating": "lcb", "rating_lcb": "lcb", "rating_mu": "mu"}


def configured_matrix(rows: list[dict[str, Any]], names: list[str]) -> np.ndarray:
    """Rows' values of the configured objectives ``names`` (rows missing one are left out)."""
    values = []
    for row in rows:
        found = [
            _number(
                row.get(_RATING_OBJECTIVES[n])
                if n in _RATING_OBJECTIVES
                else (row.get("objectives") or {}).get(n)
            )
            for n in names
        ]
        if all(v is not None for v in found):
            values.append(found)
    return np.array(values, dtype=float).reshape(-1, len(names))


def _hypervolume(points: np.ndarray, reference: np.ndarray) -> float:
    """Hypervolume of maximised ``points`` dominated above ``reference`` (pymoo's HV)."""
    from pymoo.indicators.hv import HV

    return float(HV(ref_point=-reference)(-points))


def _nondominated(points: np.ndarray) -> np.ndarray:
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    return NonDominatedSorting().do(-points, only_non_dominated_front=True)


def objective_rows(
    data: RunData,
) -> tuple[dict[str, list[str]], dict[str, list[dict[str, Any]]]]:
    """The objectives configured per role (two or more), and each such role's rating rows."""
    configured = {
        role: [str(n) for n in names]
        for role, names in (data.config.get("objectives") or {}).items()
        if isinstance(names, list | tuple) and len(names) >= 2
    }
    by_role: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in data.ratings:
        if str(row.get("role")) in configured:
            by_role[str(row["role"])].append(row)
    return configured, by_role


def draw_front(ax: Axes, role: str, rows: list[dict[str, Any]], names: list[str]) -> None:
    """The last step's objective vectors, the non-dominated ones in the role's colour."""
    last_step = max(_number(r.get("step")) or 0.0 for r in rows)
    points = configured_matrix([r for r in rows if _number(r.get("step")) == last_step], names)
    front = _nondominated(points)
    ax.scatter(points[:, 0], points[:, 1], color="tab:gray", label="members")
    ax.scatter(
        points[front, 0],
        points[front, 1],
        color=ROLE_COLOURS.get(role, "k"),
        label=f"non-dominated in all {len(names)} objectives",
    )
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.set_title(f"{role}: Pareto front at step {last_step:g} (first two objectives)")
    ax.legend(fontsize="small")


def draw_hypervolume(
    ax: Axes, role: str, rows: list[dict[str, Any]], names: list[str], reference: np.ndarray
) -> None:
    """Hypervolume of each step's objective vectors against one reference point."""
    steps = sorted({s for r in rows if (s := _number(r.get("step"))) is not None})
    volumes = []
    for step in steps:
        at = configured_matrix([r for r in rows if _number(r.get("step")) == step], names)
        volumes.append(_hypervolume(at, reference) if len(at) else 0.0)
    ax.plot(steps, volumes, marker=".")
    ax.set_xlabel("step")
    ax.set_ylabel("hypervolume")
    ax.set_title(f"{role}: hypervolume of {len(names)} objectives", fontsize="small")
    ax.grid(alpha=0.3)
