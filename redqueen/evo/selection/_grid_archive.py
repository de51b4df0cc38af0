"""A MAP-Elites grid archive kept across generations, after pyribs' ``GridArchive``, and its
grid settings (:class:`GridSettings`), written once for the archive and the ``map_elites`` scheme."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, TypedDict

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from redqueen.evo.selection._base import attribute_matrix, weighted_values

if TYPE_CHECKING:
    from redqueen.evo._individual import Individual
    from redqueen.evo._population import MemberState

__all__ = ["ArchiveStats", "GridArchive", "GridArchiveState", "GridSettings"]


class GridSettings(BaseModel):
    """A MAP-Elites grid: the ``map_elites`` scheme's parameters (``evolution.selection_params``)
    and the settings of the :class:`GridArchive` the evolution loop keeps on them.

    Attributes:
        bins: Cells per descriptor dimension (one int for every dimension, or one per dimension).
        low: Lower bound of the grid per dimension (or one for every dimension).
        high: Upper bound per dimension (or one for every dimension); descriptors outside
            ``[low, high]`` fall into the edge cells.
        qd_score_offset: Subtracted from each elite's quality in the QD-score (pyribs), so that
            every elite counts positively.

    Raises:
        pydantic.ValidationError: (a ``ValueError``) if a dimension has fewer than one cell,
            ``low`` and ``high`` do not broadcast, or a ``high`` is not above its ``low``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    bins: Annotated[int, Field(ge=1)] | Sequence[Annotated[int, Field(ge=1)]] = 10
    low: float | Sequence[float] = 0.0
    high: float | Sequence[float] = 1.0
    qd_score_offset: float = 0.0

    @model_validator(mode="after")
    def _check_bounds(self) -> GridSettings:
        try:
            low, high = np.broadcast_arrays(np.asarray(self.low, dtype=float), np.asarray(self.high, dtype=float))
        except ValueError:
            raise ValueError(f"high: {self.high} does not match low: {self.low} in length") from None
        if np.any(high <= low):
            raise ValueError(f"high: must be above low in every dimension (low {self.low}, high {self.high})")
        return self

    def ranges(self) -> list[list[float]]:
        """``[low, high]`` per dimension given (one pair when both bounds are scalars)."""
        pairs: list[list[float]] = np.column_stack(np.broadcast_arrays(self.low, self.high)).tolist()
        return pairs

    @classmethod
    def from_ranges(
        cls, *, dims: int | Sequence[int], ranges: Sequence[Sequence[float]] | Sequence[float], qd_score_offset: float
    ) -> GridSettings:
        """The settings from pyribs' ``dims`` and ``ranges`` (``(low, high)`` per dimension, or one pair)."""
        pairs = np.asarray(ranges, dtype=float).reshape(-1, 2)
        low, high = pairs[:, 0].tolist(), pairs[:, 1].tolist()
        if len(pairs) == 1:
            return cls(bins=dims, low=low[0], high=high[0], qd_score_offset=qd_score_offset)
        return cls(bins=dims, low=low, high=high, qd_score_offset=qd_score_offset)


class GridArchiveState(TypedDict):
    """What :meth:`GridArchive.state_dict` returns: pyribs' ``dims`` and ``ranges``, the QD-score
    offset, and each elite as ``(cell, quality, member as plain data)``."""

    dims: int | Sequence[int]
    ranges: list[list[float]]
    qd_score_offset: float
    elites: list[tuple[list[int], float, MemberState]]


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
    names follow pyribs (``ribs.archives.GridArchive``): ``dims`` cells per descriptor dimension,
    ``stats.qd_score`` with a ``qd_score_offset`` that makes every quality count positively,
    ``stats.coverage``, :meth:`sample_elites` for the parents. Quality is the first weighted
    fitness value. A member replaces a cell's elite only when strictly better, and an elite stays
    in the archive after its member dies: the archive keeps a snapshot of the member as it was
    when it entered (the genome by reference, since genomes are write-once).

    Args:
        settings: Cells per dimension, bounds and QD-score offset (default: ``GridSettings()``).

    Raises:
        ValueError: On the first descriptors, if the grid's ``bins`` or bounds do not fit their
            dimension.
    """

    def __init__(self, *, settings: GridSettings | None = None) -> None:
        self._reset(settings or GridSettings())

    def _reset(self, settings: GridSettings) -> None:
        """Take ``settings`` and empty the archive (the constructor, and a checkpoint's load)."""
        self.settings = settings
        self._elites: dict[tuple[int, ...], tuple[float, Individual]] = {}
        self._shape: tuple[int, ...] | None = None
        self._low = self._high = np.zeros(0)

    @property
    def qd_score_offset(self) -> float:
        """Subtracted from each elite's quality in the QD-score."""
        return float(self.settings.qd_score_offset)

    def _setup(self, dim: int) -> None:
        grid = self.settings
        try:
            dims = np.broadcast_to(np.asarray(grid.bins, dtype=int), dim)
            low = np.broadcast_to(np.asarray(grid.low, dtype=float), dim)
            high = np.broadcast_to(np.asarray(grid.high, dtype=float), dim)
        except ValueError:
            raise ValueError(f"GridArchive: bins={grid.bins}, low={grid.low}, high={grid.high} do not fit "
                             f"{dim}-dimensional descriptors") from None
        self._shape = tuple(int(d) for d in dims)
        self._low, self._high = low.copy(), high.copy()

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

    def add(self, individuals: Sequence[Individual]) -> int:
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
    def elites(self) -> list[Individual]:
        """Every elite, best first (ties in cell order)."""
        order = sorted(self._elites.items(), key=lambda item: (-item[1][0], item[0]))
        return [ind for _, (_, ind) in order]

    def sample_elites(self, n: int, *, rng: np.random.Generator) -> list[Individual]:
        """``n`` elites drawn uniformly, with replacement, from the occupied cells (MAP-Elites'
        parent draw): draw ``j`` of ``rng.integers(0, num_elites, n)`` is the ``j``-th of
        :attr:`elites`, so a seed reproduces the parents.

        Raises:
            ValueError: If the archive is empty.
        """
        pool = self.elites
        if not pool:
            raise ValueError("GridArchive.sample_elites: the archive is empty; add members first")
        return [pool[int(j)] for j in rng.integers(0, len(pool), size=n)]

    def data(self) -> list[tuple[tuple[int, ...], float, str]]:
        """``(cell, quality, member id)`` of every occupied cell, in cell order."""
        return [(cell, q, ind.id) for cell, (q, ind) in sorted(self._elites.items())]

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

    def state_dict(self) -> GridArchiveState:
        """Grid settings (pyribs' ``dims`` and ``ranges``) and elites as plain data (genomes as
        state dicts), ``torch.save``-able."""
        from redqueen.evo._population import member_state

        grid = self.settings
        return GridArchiveState(
            dims=grid.bins, ranges=grid.ranges(), qd_score_offset=self.qd_score_offset,
            elites=[(list(cell), q, member_state(ind)) for cell, (q, ind) in self._elites.items()],
        )

    def load_state_dict(self, state: GridArchiveState) -> None:
        """Restore what :meth:`state_dict` returned (settings and elites)."""
        from redqueen.evo._population import member_from_state

        self._reset(GridSettings.from_ranges(
            dims=state["dims"], ranges=state["ranges"], qd_score_offset=state["qd_score_offset"]
        ))
        for cell, q, row in state["elites"]:
            if self._shape is None:
                self._setup(len(cell))
            self._elites[tuple(int(c) for c in cell)] = (float(q), member_from_state(row))
