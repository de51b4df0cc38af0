"""Configurations as flat columns, and conditions labelled by the keys that set them apart.

Shared by :mod:`.analysis` (the tidy table), :mod:`.compare` (labels) and :mod:`.monitor`
(TensorBoard's hyperparameters); it imports nothing heavy.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from redqueen.experiments.rundir import RunDirectory

__all__ = ["Scalar", "condition_labels", "flatten_config"]

Scalar = str | int | float | bool | None


def flatten_config(config: Mapping[str, object], prefix: str = "") -> dict[str, Scalar]:
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
