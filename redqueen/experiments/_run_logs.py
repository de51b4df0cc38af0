"""The three append-only logs of a run directory, and the JSON they hold.

``metrics.jsonl``, ``tasks.jsonl`` and ``ratings.jsonl`` take one JSON object a line. A
checkpoint records their byte sizes (:meth:`RunLogs.log_offsets`), a resumed run cuts them back
to those sizes (:meth:`RunLogs.truncate_logs`), and a reader of a running run stops at them
(:meth:`RunLogs.read_log`), so no row appears twice and readers see one step.
:class:`~redqueen.experiments.rundir.RunDirectory` is a :class:`RunLogs`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any, BinaryIO

from redqueen.experiments._safe_paths import open_in, read_in
from redqueen.experiments.runlock import writer_active
from redqueen.settings._base import non_finite

__all__ = ["LOG_FILES", "RunDirectoryError", "RunLogs", "jsonable"]

#: The append-only logs of a run, by the :class:`~redqueen.environments.StepRecord` field they hold.
LOG_FILES: dict[str, str] = {
    "metrics": "metrics.jsonl",
    "tasks": "tasks.jsonl",
    "ratings": "ratings.jsonl",
}


class RunDirectoryError(ValueError):
    """A run directory is missing, incomplete or holds a file that cannot be read.

    The message is one line naming the file.
    """


def jsonable(value: Any) -> Any:
    """Plain JSON for numpy/torch scalars, tuples and non-finite floats (written as null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return jsonable(value.tolist())
    if hasattr(value, "item"):
        return jsonable(value.item())
    if hasattr(value, "value") and isinstance(value.value, (str, int, float)):  # enums
        return value.value
    return str(value)


class RunLogs:
    """Writers and readers of a run directory's logs.

    Args:
        path: The run directory.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._handles: dict[str, IO[str]] = {}

    @property
    def checkpoints_dir(self) -> Path:
        return self.path / "checkpoints"

    def log_path(self, kind: str) -> Path:
        """Path of the ``kind`` log (``metrics``, ``tasks`` or ``ratings``)."""
        return self.path / LOG_FILES[kind]

    def _read(self, name: str) -> bytes:
        return read_in(self.path, name)

    # ------------------------------------------------------------------- logs
    def open_logs(self) -> None:
        """Open the three logs for appending (creating them if needed)."""
        for kind, name in LOG_FILES.items():
            if kind not in self._handles:
                fd = open_in(self.path, name, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                self._handles[kind] = os.fdopen(fd, "a", encoding="utf-8")

    def append(self, kind: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append rows to the ``kind`` log, one JSON object a line, and flush."""
        handle = self._handles.get(kind)
        if handle is None:
            raise RuntimeError(f"{LOG_FILES[kind]} is not open; call open_logs() first")
        try:
            for row in rows:
                handle.write(json.dumps(jsonable(row), separators=(", ", ": ")) + "\n")
            handle.flush()
        except OSError as error:
            raise RunDirectoryError(
                f"{self.log_path(kind)}: cannot write ({error.strerror or error})"
            ) from None

    def sync_logs(self) -> None:
        """Flush the logs to disk (called before a checkpoint records their sizes)."""
        for kind, handle in self._handles.items():
            try:
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as error:
                raise RunDirectoryError(
                    f"{self.log_path(kind)}: cannot write ({error.strerror or error})"
                ) from None

    def log_offsets(self) -> dict[str, int]:
        """Current byte size of each log, by file name."""
        offsets = {}
        for name in LOG_FILES.values():
            try:
                fd = open_in(self.path, name, os.O_RDONLY)
            except FileNotFoundError:
                offsets[name] = 0
                continue
            try:
                offsets[name] = os.fstat(fd).st_size
            finally:
                os.close(fd)
        return offsets

    def truncate_logs(self, offsets: Mapping[str, int]) -> None:
        """Cut every log back to ``offsets`` (file name -> bytes); missing names mean 0.

        Rows written after the checkpoint the offsets came from are dropped, so a resumed run
        writes each step's rows exactly once.
        """
        self.close_logs()
        self.check_logs(offsets)  # every log is checked before any is cut
        for name in LOG_FILES.values():
            self._cut_log(name, int(offsets.get(name, 0)), check_only=False)

    def check_logs(self, offsets: Mapping[str, int]) -> None:
        """Check that every log's first ``offsets`` bytes are whole JSON rows; nothing is cut.

        Raises:
            RunDirectoryError: Naming the first log that is shorter or damaged.
        """
        for name in LOG_FILES.values():
            self._cut_log(name, int(offsets.get(name, 0)), check_only=True)

    def _cut_log(self, name: str, size: int, *, check_only: bool) -> None:
        """Check that the log's first ``size`` bytes are whole JSON rows, or cut it there."""
        path = self.path / name
        if check_only and not os.path.lexists(path):  # a check creates nothing, not even this log
            if size:
                raise RunDirectoryError(
                    f"{path} is missing, but the checkpoint records {size} bytes of it: "
                    "rows the checkpoint counts on are gone"
                )
            return
        try:
            with os.fdopen(open_in(self.path, name, os.O_RDWR | os.O_CREAT), "r+b") as handle:
                if handle.seek(0, os.SEEK_END) < size:
                    raise RunDirectoryError(
                        f"{path} is shorter ({handle.tell()} bytes) than the checkpoint records "
                        f"({size} bytes): rows the checkpoint counts on are gone"
                    )
                if check_only:
                    _check_rows(handle, size, path)
                    return
                handle.truncate(size)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as error:
            raise RunDirectoryError(
                f"{path}: cannot cut back to the checkpoint ({error.strerror or error})"
            ) from None

    def close_logs(self) -> None:
        """Close the log files (safe to call twice)."""
        handles = list(self._handles.values())
        self._handles.clear()
        for handle in handles:
            with contextlib.suppress(
                OSError
            ):  # a full disk fails the flush; the error was reported
                handle.close()

    def read_log(self, kind: str) -> list[dict[str, Any]]:
        """Rows of the ``kind`` log; an absent file reads as no rows.

        While a run is going (its :class:`RunLock` is held), only the rows up to the latest
        checkpoint are read, so the three logs, ``lineage.csv`` and ``population/`` describe the
        same step. A final line cut short by a crash is skipped; any other bad line is an error.

        Raises:
            RunDirectoryError: Naming the file and line that is not JSON, or a file not UTF-8.
        """
        path = self.log_path(kind)
        try:
            fd = open_in(self.path, path.name, os.O_RDONLY)
        except FileNotFoundError:
            return []
        except OSError as error:
            raise RunDirectoryError(f"{path}: cannot read ({error.strerror or error})") from None
        try:
            with os.fdopen(fd, "rb") as handle:
                data = handle.read(self._snapshot_size(path.name))
            lines = data.decode("utf-8").splitlines()
        except UnicodeDecodeError as error:
            raise RunDirectoryError(f"{path}: not UTF-8 text (byte {error.start})") from None
        except OSError as error:
            raise RunDirectoryError(f"{path}: cannot read ({error.strerror or error})") from None
        rows: list[dict[str, Any]] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                if number == len(lines):
                    break
                raise RunDirectoryError(f"{path}: line {number} is not JSON") from None
            if not isinstance(row, dict):
                raise RunDirectoryError(f"{path}: line {number} is not a JSON object")
            problem = _row_problem(row)
            if problem is not None:
                raise RunDirectoryError(f"{path}: line {number}: {problem}")
            rows.append(row)
        return rows

    def read_log_bytes(self, kind: str) -> bytes:
        """The whole ``kind`` log as bytes (empty when absent), never read through a link."""
        try:
            return self._read(LOG_FILES[kind])
        except FileNotFoundError:
            return b""

    def _snapshot_size(self, name: str) -> int:
        """Bytes of a log a reader may read: up to the latest checkpoint while a run is going."""
        if not writer_active(self.path):
            return -1
        from redqueen.experiments.checkpoint import CheckpointError, latest_checkpoint

        try:
            ckpt = latest_checkpoint(self.checkpoints_dir)
        except CheckpointError:
            return -1
        return ckpt.offsets.get(name, 0) if ckpt is not None else 0


def _row_problem(row: Mapping[str, object]) -> str | None:
    """What is wrong with a parsed log row that its writer never writes, or ``None``.

    The logs write non-finite numbers as ``null`` and every ``step`` as a number, so a
    ``NaN``, an ``Infinity`` (or a literal too large for a float) or a ``step`` that is not
    a number is damage, named here rather than met later as a failing sum or sort.
    """
    found = non_finite(row, "row")
    if found is not None:
        where, shown = found
        return f"{where.removeprefix('row.')} is not a finite number ({shown}); the logs write null"
    step = row.get("step")
    if "step" in row and (isinstance(step, bool) or not isinstance(step, int | float)):
        return f"step is not a number (got {json.dumps(step)[:40]})"
    return None


def _check_rows(handle: BinaryIO, size: int, path: Path) -> None:
    """The first ``size`` bytes of a log are UTF-8 text of whole rows, each one a log row.

    Every row is read, as :meth:`RunDirectory.read_log` reads it, so a run whose logs a plot
    would refuse is refused when it resumes, not after more steps are written behind the
    damage.

    Raises:
        RunDirectoryError: Naming the log (and the line), when the part a checkpoint counts on
            is damaged.
    """
    if size == 0:
        return
    handle.seek(0)
    left = size
    number = 0
    while left:
        line = handle.readline(left)
        if not line:
            break
        left -= len(line)
        number += 1
        if not line.endswith(b"\n"):
            raise RunDirectoryError(
                f"{path}: the checkpoint's {size} bytes do not end with a whole row: "
                "the log is damaged"
            )
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise RunDirectoryError(
                f"{path}: line {number}, which the checkpoint counts on, is not UTF-8 text: "
                "the log is damaged"
            ) from None
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except ValueError:
            raise RunDirectoryError(
                f"{path}: line {number}, which the checkpoint counts on, is not JSON: "
                "the log is damaged"
            ) from None
        problem = "not a JSON object" if not isinstance(row, dict) else _row_problem(row)
        if problem is not None:
            raise RunDirectoryError(f"{path}: line {number}: {problem}: the log is damaged")
