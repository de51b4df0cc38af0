"""Snapshots of members in the run directory: ``snapshots/step_<n>/``.

Every ``evolution.snapshot_every`` steps the evolution loop freezes the living members into its
hall of fame; the runner writes each snapshot once, right after the step that took it, as
plain data: one PEFT adapter folder per member and a ``members.json`` index (id, role, step,
rating). ``redqueen ciao`` reads them back to play every generation against every other.

Layout::

    snapshots/step_00005/members.json
    snapshots/step_00005/teacher-0001/adapter_config.json, adapter_model.safetensors
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redqueen.experiments._safe_paths import (
    UnsafePathError,
    check_links,
    check_member_id,
    read_in,
    step_of,
)

#: Folder of the snapshots inside a run directory.
SNAPSHOTS = "snapshots"
_INDEX = "members.json"


@dataclass(frozen=True)
class SnapshotMember:
    """One member of a snapshot on disk.

    Attributes:
        id: The member's id.
        role: Its role.
        step: Steps completed when the snapshot was taken.
        path: Its PEFT adapter folder.
        rating: Its ``(mu, sigma)`` then, or ``None`` when unrated.
    """

    id: str
    role: str
    step: int
    path: Path
    rating: tuple[float, float] | None

    def genome(self) -> Any:
        """The adapter as a :class:`redqueen.genomes.LoRAGenome`.

        Raises:
            ValueError: Naming the folder, if the adapter cannot be read.
        """
        from redqueen.genomes import LoRAGenome

        try:
            return LoRAGenome.from_peft(self.path)
        except Exception as error:  # corrupt or foreign files: name the folder
            raise ValueError(
                f"{self.path}: cannot read the adapter ({type(error).__name__}: {error})"
            ) from None


def snapshot_dir(run_path: str | os.PathLike[str], step: int) -> Path:
    """Folder of the snapshot taken after ``step`` steps."""
    return Path(run_path) / SNAPSHOTS / f"step_{int(step):05d}"


def write_snapshots(
    run_path: str | os.PathLike[str], snapshots: Mapping[int, Iterable[Any]], base_model: str | None
) -> list[int]:
    """Write the snapshots not yet on disk (each atomically: a temporary folder, then a rename).

    Args:
        run_path: The run directory.
        snapshots: Step -> frozen members (``id``, ``role``, ``genome``, ``rating``), e.g. an
            environment's ``snapshots()``.
        base_model: Written into each ``adapter_config.json`` (as for ``population/``).

    Returns:
        The steps written now.

    Raises:
        UnsafePathError: If a member id is not a plain name or a step is negative (checked
            before anything is written), or ``snapshots/`` is a symbolic link.
    """
    pending = {}
    for step, members in sorted(snapshots.items()):
        if int(step) < 0:
            raise ValueError(f"snapshot step {step} is negative")
        members = list(members)
        for member in members:
            check_member_id(member.id, f"snapshot of step {int(step)}")
        pending[int(step)] = members
    check_links(run_path, SNAPSHOTS)
    written = []
    for step, members in pending.items():
        target = snapshot_dir(run_path, step)
        check_links(run_path, target.relative_to(run_path))
        if target.is_dir():
            continue  # a snapshot never changes once taken
        staging = target.parent / f".{target.name}.tmp"
        check_links(run_path, staging.relative_to(run_path))
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        index = []
        for member in members:
            member.genome.save_peft(
                staging / member.id,
                base_model=base_model or getattr(member.genome, "base_model", None),
            )
            rating = (
                None
                if member.rating is None
                else [float(member.rating[0]), float(member.rating[1])]
            )
            index.append(
                {"id": member.id, "role": member.role, "step": int(step), "rating": rating}
            )
        (staging / _INDEX).write_text(json.dumps(index, indent=1))
        os.replace(staging, target)
        written.append(int(step))
    return written


def read_snapshots(run_path: str | os.PathLike[str]) -> dict[int, list[SnapshotMember]]:
    """Every snapshot of a run directory, step -> members (adapters are read on demand).

    Raises:
        ValueError: Naming the file, if an index is unreadable, names a missing adapter or an
            id that is not a plain name, or a symbolic link is on the way.
    """
    check_links(run_path, SNAPSHOTS)
    root = Path(run_path) / SNAPSHOTS
    result: dict[int, list[SnapshotMember]] = {}
    if not root.is_dir():
        return result
    for folder in sorted(root.glob("step_*")):
        step = step_of(folder.name)
        if step is None or not folder.is_dir():
            continue
        index_path = folder / _INDEX
        try:
            rows = json.loads(read_in(root, index_path.relative_to(root)).decode("utf-8"))
            members = [
                SnapshotMember(
                    check_member_id(row["id"], str(index_path)),
                    str(row["role"]),
                    step,
                    folder / row["id"],
                    None
                    if row["rating"] is None
                    else (float(row["rating"][0]), float(row["rating"][1])),
                )
                for row in rows
            ]
        except UnsafePathError:
            raise
        except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
            raise ValueError(
                f"{index_path}: not a snapshot index ({type(error).__name__}: {error})"
            ) from None
        for member in members:
            if not member.path.is_dir():
                raise ValueError(f"{member.path}: adapter folder listed in {index_path} is missing")
        result[step] = members
    return result
