"""Durable renames: the one helper that run directories and checkpoints both need."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fsync_directory"]


def fsync_directory(path: Path) -> None:
    """Flush a directory entry to disk so that a rename inside it survives a crash."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # some platforms cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
