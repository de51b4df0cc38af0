"""Who is benchmarked: a run's living members, the bare base model and baselines."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redqueen.experiments._safe_paths import check_tree
from redqueen.experiments.rundir import RunDirectory, RunDirectoryError

#: The shipped base model's name in configurations.


@dataclass(frozen=True)
class Contestant:
    """One model to benchmark: a PEFT adapter folder (or ``None`` for the bare base model)."""

    member: str
    role: str
    source: str
    adapter: Path | None


def _roles(run: RunDirectory) -> dict[str, str]:
    """Member id -> role from ``lineage.csv`` (empty when the file is absent).

    In the ALife phylogeny standard ``id`` may be a number; the member id is then in ``name``.
    """
    if not run.lineage_path.is_file():
        return {}
    with open(run.lineage_path, newline="") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None or "id" not in reader.fieldnames:
            raise RunDirectoryError(f"{run.lineage_path}: no 'id' column")
        return {row.get("name") or row["id"]: row.get("role") or "member" for row in reader}


def _adapter_folders(run: RunDirectory) -> list[Path]:
    folders = [run.population_dir / member for member in run.population_ids()]
    return [folder for folder in folders if (folder / "adapter_config.json").is_file()]


def population_contestants(run_dir: str | Path) -> list[Contestant]:
    """The living members of a run directory, with their roles from ``lineage.csv``.

    Raises:
        RunDirectoryError: If the directory, its ``config.yaml`` or its ``population/`` adapters
            are missing (the path is named).
    """
    run = RunDirectory(run_dir)
    run.require()
    folders = _adapter_folders(run)
    if not folders:
        raise RunDirectoryError(f"{run.population_dir}: no member adapters (adapter_config.json)")
    roles = _roles(run)
    return [Contestant(f.name, roles.get(f.name, "member"), "population", f) for f in folders]


def baseline_contestants(path: str | Path) -> list[Contestant]:
    """Baselines from an exported adapter folder or from a run directory (each living member).

    A self-play run directory gives one contestant per member, labelled ``<run>/<id>``. Either
    folder is walked first, as run directories are: a symbolic link or special file anywhere
    inside is refused.

    Raises:
        RunDirectoryError: If ``path`` is neither an adapter folder nor a run directory.
        UnsafePathError: Naming a link or special file inside it.
    """
    path = Path(path)
    check_tree(path)
    if (path / "adapter_config.json").is_file():
        return [Contestant(path.name, "baseline", "baseline", path)]
    if not path.is_dir():
        raise RunDirectoryError(f"baseline {path} does not exist")
    run = RunDirectory(path)
    folders = _adapter_folders(run)
    if not folders:
        raise RunDirectoryError(
            f"baseline {path}: neither an adapter folder (adapter_config.json) nor a run directory with population/"
        )
    return [Contestant(f"{path.name}/{f.name}", "baseline", "baseline", f) for f in folders]


def resolve_model(name: str) -> str:
    """A loadable model path or id: a shipped model's name (``tiny-coder``, ...) means its folder."""
    from redqueen.assets import resolve_model as resolve

    return str(resolve(name))


def run_model(run_dir: str | Path) -> tuple[str, dict[str, Any]]:
    """The base model name and the ``model`` section of a run's ``config.yaml``.

    Raises:
        RunDirectoryError: If the config is missing, has no ``model.name`` or is a surrogate run.
    """
    run = RunDirectory(run_dir)
    config = run.read_config()
    if (config.get("environment") or {}).get("name") == "surrogate":
        raise RunDirectoryError(
            f"{run.config_path}: a surrogate run has no language model to evaluate (environment.name: surrogate)"
        )
    section = config.get("model")
    if isinstance(section, str):
        section = {"name": section}
    if not isinstance(section, dict) or not isinstance(section.get("name"), str):
        raise RunDirectoryError(f"{run.config_path}: model.name is missing")
    return section["name"], section
