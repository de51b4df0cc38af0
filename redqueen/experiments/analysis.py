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
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from redqueen.experiments._conditions import Scalar, condition_labels, flatten_config
from redqueen.experiments._safe_paths import write_in
from redqueen.experiments.rundir import RunDirectory

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["condition_labels", "export_table", "flatten_config", "load_runs"]

#: Columns every table starts with, before the metrics and the configuration.
ID_COLUMNS = ("condition", "label", "run", "step")

def _scalar_metrics(row: Mapping[str, object]) -> dict[str, Scalar]:
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
            config = flatten_config(RunDirectory(run).read_config())
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
        ValueError: One line, for another suffix, Parquet without pyarrow installed, or an
            ``out`` inside one of the run directories read (their files are the runs' records).
    """
    target = Path(out)
    suffix = target.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ValueError(f"{target}: write a .csv or a .parquet file")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ValueError(f"{target}: Parquet needs pyarrow (pip install 'redqueen[parquet]'); a .csv needs nothing") from None
    table = load_runs(paths)
    inside = target.resolve().parents
    for run in dict.fromkeys(table["run"]):
        if Path(run).resolve() in inside:  # --out run/lineage.csv replaced the run's lineage
            raise ValueError(
                f"{target}: inside run directory {run}, whose files are its records; "
                "write the table elsewhere"
            )
    if suffix == ".csv":
        data = table.to_csv(index=False).encode()
    else:
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        data = buffer.getvalue()
    target.parent.mkdir(parents=True, exist_ok=True)
    return write_in(target.parent, target.name, data)
