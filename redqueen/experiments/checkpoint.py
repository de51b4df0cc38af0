"""Atomic, data-only checkpoints: ``checkpoints/step_<n>/`` holding the environment state and log offsets.

A checkpoint is written to a hidden temporary directory, every file is fsynced, and only then is
the directory renamed to ``step_<n>``: a run killed at any instant leaves either the complete
checkpoint or none, never half of one. ``meta.json`` records the byte size of every JSON-lines log
at the moment of the checkpoint, so :meth:`RunDirectory.truncate_logs` can drop the rows of steps
that a resumed run will redo, and the SHA-256 of the two state files, so a damaged file is named
rather than half-read.

The state is data only and nothing in it is unpickled: tensors go to ``tensors.safetensors``,
everything else to ``state.json`` (see :mod:`.state_codec`). Checkpoints of format 1 (a pickled
``state.pt``) are read with ``torch.load(weights_only=True)``, whose unpickler builds tensors and
plain containers only and refuses every other global before it is called, so such a file cannot run
code either; one that needs more than that is refused.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redqueen.experiments._fsync import fsync_directory
from redqueen.experiments._safe_paths import step_of

#: Bumped when the checkpoint layout changes incompatibly (1: pickled ``state.pt``).
CHECKPOINT_FORMAT = 2

STATE_FILE = "state.json"
TENSORS_FILE = "tensors.safetensors"
META_FILE = "meta.json"
#: The pickled state of format-1 checkpoints, read only through torch's restricted unpickler.
LEGACY_STATE_FILE = "state.pt"
_READABLE_FORMATS = (1, CHECKPOINT_FORMAT)


class CheckpointError(ValueError):
    """A checkpoint cannot be read or written; the message names its directory or file."""


@dataclass(frozen=True)
class Checkpoint:
    """A finished checkpoint on disk.

    Attributes:
        path: The ``step_<n>`` directory.
        step: Number of environment steps completed when it was written.
        offsets: Byte size of each log file (by file name) at that moment.
        extra: Runner bookkeeping stored alongside (e.g. elapsed seconds).
        format: The checkpoint layout (:data:`CHECKPOINT_FORMAT`, or 1 for a pickled ``state.pt``).
        digests: SHA-256 of each state file, by file name.
    """

    path: Path
    step: int
    offsets: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    format: int = CHECKPOINT_FORMAT
    digests: dict[str, str] = field(default_factory=dict)

    def load_state(self) -> dict[str, Any]:
        """The environment state saved in this checkpoint.

        Raises:
            CheckpointError: If a state file is missing, damaged or not data-only.
        """
        if self.format == 1:
            return _load_legacy(self.path / LEGACY_STATE_FILE)
        from safetensors import SafetensorError
        from safetensors.torch import load as load_tensors

        from redqueen.experiments.state_codec import StateCodecError, decode_state

        state_path, tensors_path = self.path / STATE_FILE, self.path / TENSORS_FILE
        state_bytes, tensor_bytes = self._read(state_path), self._read(tensors_path)
        try:
            document = json.loads(state_bytes.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise CheckpointError(f"{state_path}: not valid JSON ({error})") from None
        except RecursionError:
            raise CheckpointError(f"{state_path}: nested too deeply to be a checkpoint") from None
        try:
            tensors = load_tensors(tensor_bytes)
        except (SafetensorError, ValueError, RuntimeError, OSError) as error:
            detail = " ".join(str(error).split()) or type(error).__name__
            raise CheckpointError(f"{tensors_path}: not a readable safetensors file ({detail})") from None
        try:
            state = decode_state(document, tensors)
        except StateCodecError as error:
            raise CheckpointError(f"{state_path}: {error}") from None
        except RecursionError:
            raise CheckpointError(f"{state_path}: nested too deeply to be a checkpoint") from None
        if not isinstance(state, dict):
            raise CheckpointError(f"{state_path}: expected a mapping at the top level")
        return state

    def _read(self, path: Path) -> bytes:
        try:
            data = _read_no_link(path)
        except FileNotFoundError:
            raise CheckpointError(f"{path} is missing") from None
        except OSError as error:
            raise CheckpointError(f"{path}: cannot read ({error.strerror or error})") from None
        expected = self.digests.get(path.name)
        if expected is not None and hashlib.sha256(data).hexdigest() != expected:
            raise CheckpointError(f"{path} is damaged: its SHA-256 differs from the one in {META_FILE}")
        return data


def _load_legacy(path: Path) -> dict[str, Any]:
    """A format-1 ``state.pt`` through torch's restricted (``weights_only``) unpickler."""
    import pickle
    import warnings

    import torch

    try:
        with warnings.catch_warnings():  # torch warns about the pickle protocol of old files
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"{path} is missing") from None
    except pickle.UnpicklingError:
        raise CheckpointError(
            f"{path}: a pickled checkpoint holding more than tensors and plain data; refused, "
            "since loading it could run code"
        ) from None
    except Exception as error:  # torch raises many types for a damaged file
        raise CheckpointError(f"{path} cannot be loaded ({type(error).__name__})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: expected a mapping, got {type(state).__name__}")
    return state


def _read_no_link(path: Path) -> bytes:
    """The bytes of ``path``, refusing (not following) a symbolic link in its place."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise CheckpointError(f"{path} is a symbolic link; refused, not followed") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _write_synced(path: Path, data: bytes) -> None:
    try:
        with open(path, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as error:
        raise CheckpointError(f"{path}: cannot write ({error.strerror or error})") from None


def step_directory(checkpoints_dir: Path, step: int) -> Path:
    """The directory name a checkpoint after ``step`` completed steps gets."""
    return Path(checkpoints_dir) / f"step_{step}"


def save_checkpoint(
    checkpoints_dir: str | os.PathLike[str],
    *,
    step: int,
    state: Mapping[str, object],
    offsets: Mapping[str, int],
    extra: Mapping[str, object] | None = None,
    keep: int | None = None,
) -> Checkpoint:
    """Write a checkpoint atomically and prune old ones.

    Args:
        checkpoints_dir: The run's ``checkpoints/`` directory (created if needed).
        step: Completed environment steps.
        state: ``Environment.state_dict()``: plain data and tensors (see :mod:`.state_codec`).
        offsets: Log sizes by file name (``RunDirectory.log_offsets()``).
        extra: JSON-serialisable runner bookkeeping.
        keep: Keep only the newest ``keep`` checkpoints (``None`` keeps all).

    Returns:
        The written checkpoint.

    Raises:
        StateCodecError: If the state holds a value that is not plain data (naming where).
        CheckpointError: If a file cannot be written (naming it, e.g. on a full disk).
    """
    from safetensors.torch import save as save_tensors

    from redqueen.experiments.state_codec import encode_state

    document, tensors = encode_state(dict(state))
    files = {
        STATE_FILE: json.dumps(document, allow_nan=False, separators=(",", ":")).encode(),
        TENSORS_FILE: save_tensors(tensors),
    }
    root = Path(checkpoints_dir)
    target = step_directory(root, step)
    staging = root / f".step_{step}.tmp"
    try:
        root.mkdir(parents=True, exist_ok=True)
        _remove(staging)
        staging.mkdir()
    except OSError as error:
        raise CheckpointError(f"{staging}: cannot create ({error.strerror or error})") from None
    for name, data in files.items():
        _write_synced(staging / name, data)
    sizes = {str(k): int(v) for k, v in offsets.items()}
    bookkeeping = dict(extra or {})
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    meta = {
        "format": CHECKPOINT_FORMAT,
        "step": int(step),
        "offsets": sizes,
        "extra": bookkeeping,
        "sha256": digests,
    }
    _write_synced(staging / META_FILE, json.dumps(meta, indent=1).encode())
    fsync_directory(staging)
    if target.exists():  # re-checkpointing a step (e.g. right after a resume): move it aside first
        _retire(target)
    os.replace(staging, target)
    fsync_directory(root)
    if keep is not None and keep > 0:
        steps = sorted(_step_directories(root))
        for _, old in steps[:-keep]:
            _retire(old)
    remove_partial_checkpoints(root)
    return Checkpoint(target, int(step), dict(sizes), dict(bookkeeping), CHECKPOINT_FORMAT, dict(digests))


def _retire(path: Path) -> None:
    """Rename a checkpoint out of the ``step_<n>`` namespace in one move, then delete it."""
    aside = path.with_name(f".{path.name}.old")
    _remove(aside)
    os.replace(path, aside)
    _remove(aside)


def _remove(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path, ignore_errors=True)


def read_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Read a checkpoint's ``meta.json``.

    Raises:
        CheckpointError: If ``meta.json`` is missing, not JSON, or of another format.
    """
    path = Path(path)
    meta_path = path / META_FILE
    try:
        meta = json.loads(_read_no_link(meta_path).decode("utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{meta_path} is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CheckpointError(f"{meta_path} is not valid JSON") from None
    except OSError as error:
        raise CheckpointError(f"{meta_path}: cannot read ({error.strerror or error})") from None
    if not isinstance(meta, dict) or meta.get("format") not in _READABLE_FORMATS:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise CheckpointError(
            f"{meta_path}: unsupported checkpoint format {found!r} (this version reads "
            f"{', '.join(map(str, _READABLE_FORMATS))})"
        )
    try:
        ckpt = Checkpoint(
            path,
            _count(meta["step"]),
            {str(k): _count(v) for k, v in meta["offsets"].items()},
            dict(meta.get("extra", {})),
            int(meta["format"]),
            {str(k): str(v) for k, v in meta.get("sha256", {}).items()},
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        raise CheckpointError(f"{meta_path}: missing or malformed step/offsets") from None
    if ckpt.format == CHECKPOINT_FORMAT and set(ckpt.digests) != {STATE_FILE, TENSORS_FILE}:
        raise CheckpointError(f"{meta_path}: missing the SHA-256 of {STATE_FILE} and {TENSORS_FILE}")
    return ckpt


def _count(value: object) -> int:
    """A step or byte offset of ``meta.json``: an integer >= 0, never a string, fraction or bool."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"not a count: {value!r}")
    return value


def _step_directories(root: Path) -> list[tuple[int, Path]]:
    if not root.is_dir():
        if os.path.lexists(root):  # a file there would have the run start over, its logs cut
            raise CheckpointError(f"{root} is not a directory")
        return []
    found = []
    for child in root.iterdir():
        step = step_of(child.name)  # ASCII digits only: "step_3\n" and other scripts' digits are not steps
        if step is not None and child.is_dir():
            found.append((step, child))
    return found


def list_checkpoints(checkpoints_dir: str | os.PathLike[str]) -> list[Checkpoint]:
    """Complete checkpoints in ``checkpoints_dir``, oldest first.

    Temporary directories of interrupted writes are ignored.

    Raises:
        CheckpointError: If a ``step_<n>`` directory is corrupt.
    """
    return [read_checkpoint(path) for _, path in sorted(_step_directories(Path(checkpoints_dir)))]


def latest_checkpoint(checkpoints_dir: str | os.PathLike[str]) -> Checkpoint | None:
    """The checkpoint with the most completed steps, or ``None`` when there is none.

    Raises:
        CheckpointError: If that checkpoint's ``meta.json`` is damaged.
    """
    found = _step_directories(Path(checkpoints_dir))
    return read_checkpoint(max(found)[1]) if found else None


def remove_partial_checkpoints(checkpoints_dir: str | os.PathLike[str]) -> None:
    """Delete what writes and deletions cut short by a crash left behind (hidden ``.step_*``)."""
    root = Path(checkpoints_dir)
    if root.is_dir():
        for child in root.iterdir():
            if child.name.startswith(".step_") and child.name.endswith((".tmp", ".old")):
                shutil.rmtree(child, ignore_errors=True)
