"""Runs as one tidy table, for pandas: :func:`load_runs`, :func:`export_table`, :func:`condition_labels`.

A study is a set of run directories (sweep directories, folders of runs, single runs: what
``redqueen compare`` takes). :func:`load_runs` reads them into one pandas DataFrame with a row
per run and step, a column per metric of ``metrics.jsonl``, and a column per configuration key,
flattened with dots (``evolution.selection``, ``evolution.operators.svd_merge``), so a study is
one ``groupby`` away::

    from redqueen.experiments import load_runs

    table = load_runs(["runs/sweep-surrogate"])
    last = table[table.step == table.step.max()]
    last.groupby("evolution.selection")["heldout_lift"].describe()

pandas is imported when :func:`load_runs` is called, not before.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redqueen.experiments._safe_paths import write_in
from redqueen.experiments.rundir import RunDirectory

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["condition_labels", "export_table", "flatten_config", "load_runs"]

#: Columns every table starts with, before the metrics and the configuration.
ID_COLUMNS = ("condition", "label", "run", "step")

Scalar = str | int | float | bool | None


def flatten_config(config: Mapping[str, Any], prefix: str = "") -> dict[str, Scalar]:
    """Nested mappings as ``{"a.b.c": value}``; lists and empty mappings as JSON text, so
    every value is a scalar a DataFrame can group by."""
    flat: dict[str, Scalar] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten_config(value, f"{name}."))
        elif isinstance(value, (Mapping, list, tuple)):
            flat[name] = json.dumps(value, sort_keys=True, default=str)
        elif value is None or isinstance(value, (str, int, float, bool)):
            flat[name] = value
        else:
            flat[name] = str(value)
    return flat


def _run_config(run: Path) -> dict[str, Scalar]:
    return flatten_config(RunDirectory(run).read_config())


def _shown_value(value: Scalar) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:g}"
    return str(value)


def _short_keys(keys: Sequence[str]) -> dict[str, str]:
    """Each dotted key by its shortest tail that no other key shares (``evolution.selection`` ->
    ``selection``)."""
    short = {}
    for key in keys:
        parts = key.split(".")
        for depth in range(1, len(parts) + 1):
            tail = ".".join(parts[-depth:])
            if not any(other != key and (other == tail or other.endswith("." + tail)) for other in keys):
                break
        short[key] = tail
    return short


def condition_labels(conditions: Mapping[str, Sequence[Path]]) -> dict[str, str]:
    """A short label per condition from the configuration keys that set it apart.

    The keys compared are those every run of a condition agrees on (the seed differs inside a
    condition, so it never shows); the label lists those that differ between conditions, each by
    its shortest unambiguous tail, a key a condition lacks as ``-``: ``selection=nsga2`` or
    ``gaussian=1, svd_merge=-`` instead of ``evolution.operators=_gaussian__1.0_``. A condition
    keeps its name when no key sets the conditions apart, or when labels would collide.
    """
    shared: dict[str, dict[str, Scalar]] = {}
    for name, runs in conditions.items():
        configs = [_run_config(run) for run in runs]
        keys = set.intersection(*(set(c) for c in configs)) if configs else set()
        shared[name] = {k: configs[0][k] for k in keys if all(c[k] == configs[0][k] for c in configs)}
    if len(shared) < 2:
        return {name: name for name in conditions}
    every = sorted(set().union(*(set(values) for values in shared.values())))
    differing = [k for k in every if len({json.dumps(values.get(k), default=str) for values in shared.values()}) > 1]
    if not differing:
        return {name: name for name in conditions}
    short = _short_keys(differing)
    labels = {name: ", ".join(f"{short[k]}={_shown_value(values.get(k))}" for k in differing)
              for name, values in shared.items()}
    if len(set(labels.values())) < len(labels):
        return {name: name for name in conditions}
    return labels


def _scalar_metrics(row: Mapping[str, Any]) -> dict[str, Scalar]:
    return {k: v for k, v in row.items() if v is None or isinstance(v, (str, int, float, bool))}


def load_runs(paths: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """Every run in ``paths`` as one tidy table: a row per run and logged step.

    Columns: ``condition`` (the sweep's grid point, or the folder of runs), ``label`` (a short
    one, :func:`condition_labels`), ``run`` (the run directory), ``step``, then each scalar
    metric of ``metrics.jsonl``, then each configuration key flattened with dots
    (:func:`flatten_config`); a key whose name a metric already has gets a ``config.`` prefix.

    Args:
        paths: Sweep directories, folders of runs or run directories (as ``redqueen compare``).

    Raises:
        ValueError: If a path holds no runs (it is named).
        RunDirectoryError: If a run's files are not readable data.
        UnsafePathError: If a run holds a symbolic link.
    """
    import pandas as pd

    from redqueen.experiments.compare import find_conditions

    conditions = find_conditions(paths)
    labels = condition_labels(conditions)
    rows: list[dict[str, Scalar]] = []
    metric_names: dict[str, None] = {}
    config_names: dict[str, None] = {}
    for name, runs in conditions.items():
        for run in runs:
            config = _run_config(run)
            config_names.update(dict.fromkeys(config))
            for row in RunDirectory(run).read_log("metrics"):
                metrics = _scalar_metrics(row)
                metric_names.update(dict.fromkeys(k for k in metrics if k not in ID_COLUMNS))
                rows.append({"condition": name, "label": labels[name], "run": str(run), **metrics,
                             **{f"config:{k}": v for k, v in config.items()}})
    renamed = {f"config:{k}": (f"config.{k}" if k in metric_names or k in ID_COLUMNS else k) for k in config_names}
    columns = [*ID_COLUMNS, *metric_names, *renamed.values()]
    table = pd.DataFrame(rows).rename(columns=renamed).reindex(columns=columns)
    step = table["step"]
    if len(step) and step.notna().all() and (step == step.round()).all():
        table["step"] = step.astype(int)
    return table


def export_table(paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> Path:
    """Write :func:`load_runs`'s table to ``out``: CSV for ``.csv``, Parquet for ``.parquet``.

    Raises:
        ValueError: One line, for another suffix, or Parquet without pyarrow installed.
    """
    target = Path(out)
    suffix = target.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ValueError(f"{target}: write a .csv or a .parquet file")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ValueError(f"{target}: Parquet needs pyarrow (pip install pyarrow); a .csv needs nothing") from None
    table = load_runs(paths)
    if suffix == ".csv":
        data = table.to_csv(index=False).encode()
    else:
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        data = buffer.getvalue()
    target.parent.mkdir(parents=True, exist_ok=True)
    return write_in(target.parent, target.name, data)
