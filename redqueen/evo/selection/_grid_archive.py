"""A MAP-Elites grid archive kept across generations, after pyribs' ``GridArchive``."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from redqueen.evo.selection._base import attribute_matrix, weighted_values


@dataclass(frozen=True)
class ArchiveStats:
    """pyribs' archive statistics.

    Attributes:
        num_elites: Occupied cells.
        coverage: Occupied cells / all cells.
        qd_score: Sum over occupied cells of (elite quality - ``qd_score_offset``).
        obj_max: Best elite quality (``nan`` when empty).
        obj_mean: Mean elite quality (``nan`` when empty).
    """

    num_elites: int
    coverage: float
    qd_score: float
    obj_max: float
    obj_mean: float


class GridArchive:
    """One elite per cell of a regular grid over the behaviour descriptor, kept across generations.

    Mouret & Clune, "Illuminating search spaces by mapping elites", arXiv:1504.04909, 2015; the
    names follow pyribs (``ribs.archives.GridArchive``): ``dims`` cells per descriptor dimension
    over ``ranges``, ``stats.qd_score`` with a ``qd_score_offset`` that makes every quality
    count positively, ``stats.coverage``. Quality is the first weighted fitness value. A member
    replaces a cell's elite only when strictly better, and an elite stays in the archive after
    its member dies: the archive keeps a snapshot of the member as it was when it entered (the
    genome by reference, since genomes are write-once).

    Args:
        dims: Cells per descriptor dimension (one int for every dimension).
        ranges: ``(low, high)`` per dimension, or one pair for every dimension; descriptors
            outside fall into the edge cells.
        qd_score_offset: Subtracted from each elite's quality in the QD-score.

    Raises:
        ValueError: If a dimension has fewer than one cell or an empty range.
    """

    def __init__(
        self,
        *,
        dims: int | Sequence[int] = 10,
        ranges: Sequence[float] | Sequence[Sequence[float]] = (0.0, 1.0),
        qd_score_offset: float = 0.0,
    ) -> None:
        self._configure(dims=dims, ranges=ranges, qd_score_offset=qd_score_offset)

    def _configure(
        self,
        *,
        dims: int | Sequence[int],
        ranges: Sequence[float] | Sequence[Sequence[float]],
        qd_score_offset: float,
    ) -> None:
        """Set the settings and empty the archive (the constructor, and a checkpoint's load)."""
        self._dims_spec, self._ranges_spec = dims, ranges
        self.qd_score_offset = float(qd_score_offset)
        self._elites: dict[tuple[int, ...], tuple[float, Any]] = {}
        self._shape: tuple[int, ...] | None = None
        self._low = self._high = np.zeros(0)

    def _setup(self, dim: int) -> None:
        dims = np.broadcast_to(np.asarray(self._dims_spec, dtype=int), dim)
        ranges = np.asarray(self._ranges_spec, dtype=float).reshape(-1, 2)
        ranges = np.broadcast_to(ranges, (dim, 2))
        if np.any(dims < 1) or np.any(ranges[:, 1] <= ranges[:, 0]):
            raise ValueError(f"GridArchive: need dims >= 1 and low < high, got dims={self._dims_spec}, "
                             f"ranges={self._ranges_spec}")
        self._shape = tuple(int(d) for d in dims)
        self._low, self._high = ranges[:, 0].copy(), ranges[:, 1].copy()

    @property
    def dims(self) -> tuple[int, ...]:
        """Cells per dimension (known once the first member was added)."""
        return self._shape or ()

    @property
    def cells(self) -> int:
        """Number of cells in the grid (0 before the first add)."""
        return int(np.prod(self._shape)) if self._shape else 0

    def index_of(self, descriptors: np.ndarray) -> list[tuple[int, ...]]:
        """The grid cell of each descriptor row."""
        desc = np.atleast_2d(np.asarray(descriptors, dtype=float))
        if self._shape is None:
            self._setup(desc.shape[1])
        scaled = (desc - self._low) / (self._high - self._low)
        dims = np.asarray(self._shape)
        return [tuple(int(c) for c in row) for row in np.clip(np.floor(scaled * dims).astype(int), 0, dims - 1)]

    def add(self, individuals: Sequence[Any]) -> int:
        """Offer members to the archive; returns how many cells got a new elite.

        Raises:
            ValueError: If a member lacks a descriptor or a valid fitness.
        """
        if not individuals:
            return 0
        quality = weighted_values(individuals)[:, 0]
        changed = 0
        for ind, q, cell in zip(individuals, quality, self.index_of(attribute_matrix(individuals, "descriptor")),
                                strict=True):
            held = self._elites.get(cell)
            if held is None or q > held[0]:
                self._elites[cell] = (float(q), copy.copy(ind))  # a snapshot: the member goes on changing
                changed += 1
        return changed

    @property
    def elites(self) -> list[Any]:
        """Every elite, best first (ties in cell order)."""
        order = sorted(self._elites.items(), key=lambda item: (-item[1][0], item[0]))
        return [ind for _, (_, ind) in order]

    def data(self) -> list[tuple[tuple[int, ...], float, str]]:
        """``(cell, quality, member id)`` of every occupied cell, in cell order."""
        return [(cell, q, getattr(ind, "id", "")) for cell, (q, ind) in sorted(self._elites.items())]

    @property
    def stats(self) -> ArchiveStats:
        """Occupied cells, coverage, QD-score and the elites' best and mean quality."""
        qualities = np.array([q for q, _ in self._elites.values()], dtype=float)
        if qualities.size == 0:
            return ArchiveStats(0, 0.0, 0.0, float("nan"), float("nan"))
        return ArchiveStats(
            num_elites=int(qualities.size),
            coverage=qualities.size / self.cells,
            qd_score=float(np.sum(qualities - self.qd_score_offset)),
            obj_max=float(qualities.max()),
            obj_mean=float(qualities.mean()),
        )

    def state_dict(self) -> dict[str, Any]:
        """Grid settings and elites as plain data (genomes as state dicts), ``torch.save``-able."""
        from redqueen.evo._population import member_state

        return {
            "dims": self._dims_spec, "ranges": self._ranges_spec, "qd_score_offset": self.qd_score_offset,
            "elites": [(list(cell), q, member_state(ind)) for cell, (q, ind) in self._elites.items()],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        from redqueen.evo._population import member_from_state

        self._configure(dims=state["dims"], ranges=state["ranges"], qd_score_offset=state["qd_score_offset"])
        for cell, q, row in state["elites"]:
            if self._shape is None:
                self._setup(len(cell))
            self._elites[tuple(int(c) for c in cell)] = (float(q), member_from_state(row))
