"""Undoing a failed start of a run: remove what the start created, and nothing else.

:func:`~redqueen.experiments.runner.start_run` builds a run in a staging folder next to its
target, creating missing parent folders on the way. When the start fails (bad input, an
exception, Ctrl-C, SIGTERM), :func:`undo_start` removes the files the start wrote and the folders
it made, each only if nothing else is in it by then: a folder another run has started in
meanwhile is kept with all it holds.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from redqueen.experiments.rundir import LOG_FILES
from redqueen.experiments.runlock import RunLock

if TYPE_CHECKING:
    from redqueen.environments import Environment

#: What ``signal.signal`` returns and takes: a handler, ``SIG_DFL``/``SIG_IGN``, or ``None``.
SignalHandler = Callable[[int, FrameType | None], object] | int | None

_log = logging.getLogger(__name__)

#: What a start writes into its staging folder; a failed start removes these names and no other.
_STAGED_FILES = frozenset(
    {"config.yaml", "plugins.json", ".lock", ".config.yaml.tmp", ".plugins.json.tmp", *LOG_FILES.values()}
)


def make_parents(folder: Path, created: list[Path]) -> None:
    """Create ``folder`` and its missing parents, appending to ``created`` each one this call
    made, outermost first (as it goes, so a failure half-way still knows what it made).

    A folder that someone else creates in the meantime is not counted as ours.
    """
    missing = []
    while not folder.exists():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for path in reversed(missing):
        try:
            path.mkdir()
        except FileExistsError:
            continue
        created.append(path)


def undo_start(env: Environment | None, lock: RunLock | None, staging: Path | None, created: list[Path]) -> None:
    """Undo a failed start: close, unlock, then remove what this call created, and only that.

    Each step runs even if an earlier one fails. The staging folder loses the files a start
    writes (:data:`_STAGED_FILES`); it and the parent folders this call made are removed only
    when empty, so a folder another run has started in since is kept with all it holds.
    """
    steps: list[Callable[[], None]] = []
    if env is not None:
        steps.append(env.close)
    if lock is not None:
        steps.append(lock.release)
    if staging is not None:
        steps.append(lambda: _remove_staging(staging))
    steps.extend(path.rmdir for path in reversed(created))
    for step in steps:
        try:
            step()
        except Exception as error:  # clean-up goes on; the error that failed the start is raised
            _log.debug("clean-up after a failed start: %s: %s", type(error).__name__, error)


def _remove_staging(staging: Path) -> None:
    for entry in os.scandir(staging):
        if entry.name in _STAGED_FILES and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
    staging.rmdir()


def sigterm_raises() -> dict[int, SignalHandler] | None:
    """Make SIGTERM raise ``SystemExit(143)`` while a run starts, so its clean-up runs.

    Its default action ends the process at once and would leave the staging folder behind.
    """
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    return {signal.SIGTERM: signal.signal(signal.SIGTERM, handler)}


def restore_signals(previous: dict[int, SignalHandler] | None) -> None:
    """Put back the handlers :func:`sigterm_raises` replaced."""
    for signum, handler in (previous or {}).items():
        signal.signal(signum, handler)
