"""The genome package's error type, in a module of its own so that every genome module can raise it."""

from __future__ import annotations

__all__ = ["GenomeMismatchError"]


class GenomeMismatchError(ValueError):
    """Raised when genomes that must line up (same modules, shapes, base model) do not."""
