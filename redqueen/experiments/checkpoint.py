"""Atomic checkpoints: ``checkpoints/step_<n>/`` holding the environment state and log offsets.

A checkpoint is written to a hidden temporary directory, every file is fsynced, and only then is
the directory renamed to ``step_<n>``: a run killed at any instant leaves either the complete
checkpoint or none, never half of one. ``meta.json`` records the byte size of every JSON-lines log
at the moment of the checkpoint, so :meth:`RunDirectory.truncate_logs` can drop the rows of steps
that a resumed run will redo.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redqueen.experiments.rundir import fsync_directory

#: Bumped when the checkpoint layout changes incompatibly.
CHECKPOINT_FORMAT = 1

STATE_FILE = "state.pt"
META_FILE = "meta.json"
_STEP_DIR = re.compile(r"^step_(\d+)$")


class CheckpointError(ValueError):
    """A checkpoint cannot be read; the message names its directory or file."""


@dataclass(frozen=True)
class Checkpoint:
    """A finished checkpoint on disk.

    Attributes:
        path: The ``step_<n>`` directory.
        step: Number of environment steps completed when it was written.
        offsets: Byte size of each log file (by file name) at that moment.
        extra: Runner bookkeeping stored alongside (e.g. elapsed seconds).
    """

    path: Path
    step: int
    offsets: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def load_state(self) -> dict[str, Any]:
        """The environment state saved in this checkpoint.

        Raises:
            CheckpointError: If ``state.pt`` is missing or unreadable.
        """
        import torch

        path = self.path / STATE_FILE
        try:
            # The state holds RNG states and plain Python objects besides tensors; the file
            # is our own, written by save_checkpoint.
            return torch.load(path, map_location="cpu", weights_only=False)
        except FileNotFoundError:
            raise CheckpointError(f"{path} is missing") from None
        except Exception as error:  # torch raises many types for a corrupt file
            raise CheckpointError(f"{path} cannot be loaded ({type(error).__name__})") from None


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def step_directory(checkpoints_dir: Path, step: int) -> Path:
    """The directory name a checkpoint after ``step`` completed steps gets."""
    return Path(checkpoints_dir) / f"step_{step}"


def save_checkpoint(
    checkpoints_dir: str | os.PathLike[str],
    *,
    step: int,
    state: Mapping[str, Any],
    offsets: Mapping[str, int],
    extra: Mapping[str, Any] | None = None,
    keep: int | None = None,
) -> Checkpoint:
    """Write a checkpoint atomically and prune old ones.

    Args:
        checkpoints_dir: The run's ``checkpoints/`` directory (created if needed).
        step: Completed environment steps.
        state: ``Environment.state_dict()``; saved with ``torch.save``.
        offsets: Log sizes by file name (``RunDirectory.log_offsets()``).
        extra: JSON-serialisable runner bookkeeping.
        keep: Keep only the newest ``keep`` checkpoints (``None`` keeps all).

    Returns:
        The written checkpoint.
    """
    import torch

    root = Path(checkpoints_dir)
    root.mkdir(parents=True, exist_ok=True)
    target = step_directory(root, step)
    staging = root / f".step_{step}.tmp"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    buffer = io.BytesIO()
    torch.save(dict(state), buffer)
    _write_synced(staging / STATE_FILE, buffer.getvalue())
    meta = {
        "format": CHECKPOINT_FORMAT,
        "step": int(step),
        "offsets": {str(k): int(v) for k, v in offsets.items()},
        "extra": dict(extra or {}),
    }
    _write_synced(staging / META_FILE, json.dumps(meta, indent=1).encode())
    fsync_directory(staging)
    if target.exists():  # re-checkpointing a step (e.g. right after a resume)
        shutil.rmtree(target)
    os.replace(staging, target)
    fsync_directory(root)
    if keep is not None and keep > 0:
        for old in list_checkpoints(root)[:-keep]:
            shutil.rmtree(old.path, ignore_errors=True)
    return Checkpoint(target, int(step), dict(meta["offsets"]), dict(meta["extra"]))


def read_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Read a checkpoint's ``meta.json``.

    Raises:
        CheckpointError: If ``meta.json`` is missing, not JSON, or of another format.
    """
    path = Path(path)
    meta_path = path / META_FILE
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{meta_path} is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CheckpointError(f"{meta_path} is not valid JSON") from None
    if not isinstance(meta, dict) or meta.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{meta_path}: unsupported checkpoint format")
    try:
        return Checkpoint(
            path,
            int(meta["step"]),
            {str(k): int(v) for k, v in meta["offsets"].items()},
            dict(meta.get("extra", {})),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        raise CheckpointError(f"{meta_path}: missing or malformed step/offsets") from None


def list_checkpoints(checkpoints_dir: str | os.PathLike[str]) -> list[Checkpoint]:
    """Complete checkpoints in ``checkpoints_dir``, oldest first.

    Temporary directories of interrupted writes are ignored.

    Raises:
        CheckpointError: If a ``step_<n>`` directory is corrupt.
    """
    root = Path(checkpoints_dir)
    if not root.is_dir():
        return []
    found = []
    for child in root.iterdir():
        match = _STEP_DIR.match(child.name)
        if match and child.is_dir():
            found.append((int(match.group(1)), child))
    return [read_checkpoint(path) for _, path in sorted(found)]


def latest_checkpoint(checkpoints_dir: str | os.PathLike[str]) -> Checkpoint | None:
    """The checkpoint with the most completed steps, or ``None`` when there is none."""
    checkpoints = list_checkpoints(checkpoints_dir)
    return checkpoints[-1] if checkpoints else None


def remove_partial_checkpoints(checkpoints_dir: str | os.PathLike[str]) -> None:
    """Delete the temporary directories that writes cut short by a crash left behind."""
    root = Path(checkpoints_dir)
    if root.is_dir():
        for child in root.iterdir():
            if child.name.startswith(".step_") and child.name.endswith(".tmp"):
                shutil.rmtree(child, ignore_errors=True)
