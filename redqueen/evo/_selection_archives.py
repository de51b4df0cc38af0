"""What a selection scheme keeps across generations, per role: past behaviours or a grid of elites.

A scheme that declares ``Needs(archive=True)`` gets one archive per role from the evolution loop,
kept across replacements and in its checkpoint. Which one follows what the scheme declares, not
its name: one that takes an ``archive`` parameter (``novelty``, ``novelty_lc``) gets a
:class:`~redqueen.fitness.NoveltyArchive` of past descriptors, handed in as that parameter; one
that does not (``map_elites``) gets a :class:`~redqueen.evo.selection.GridArchive` on the grid
settings in ``selection_params``, which draws the parents itself from all its elites
(:meth:`~redqueen.evo.selection.GridArchive.sample_elites`), dead ones included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

import numpy as np

from redqueen.evo._individual import Individual, descriptor_matrix
from redqueen.evo.selection import SELECTIONS, GridArchive, GridSettings, select
from redqueen.evo.selection._grid_archive import GridArchiveState
from redqueen.fitness import NoveltyArchive, NoveltyArchiveState

__all__ = ["ArchiveMetrics", "SelectionArchives", "archive_kind"]

#: ``qd_score/<role>`` and ``coverage/<role>`` (numbers) and ``archive/<role>`` (cells).
ArchiveMetrics = dict[str, float | list[list[float]]]


class SelectionArchivesState(TypedDict, total=False):
    """What :meth:`SelectionArchives.state_dict` returns (plain data; a checkpoint written before
    the grids were kept lacks ``grids``)."""

    archives: dict[str, NoveltyArchiveState]
    grids: dict[str, GridArchiveState]


def archive_kind(selection: str) -> Literal["behaviours", "elites"] | None:
    """Which archive a scheme that declares ``Needs(archive=True)`` gets: ``"behaviours"`` when
    it takes an ``archive`` parameter, else ``"elites"``; ``None`` for a scheme that keeps none."""
    if selection not in SELECTIONS or not SELECTIONS.needs(selection).archive:
        return None
    params = SELECTIONS.params(selection)
    return "behaviours" if params is not None and "archive" in params.model_fields else "elites"


class SelectionArchives:
    """The per-role archives of the configured selection scheme, and the parent draw that reads them.

    Args:
        selection: The scheme's name (in :data:`~redqueen.evo.selection.SELECTIONS`).
        params: Its parameters (``selection_params``); a grid's settings are read from them.
    """

    def __init__(self, selection: str, params: Mapping[str, object]) -> None:
        self.selection, self.params = selection, dict(params)
        #: Per-role archives of past behaviours for novelty selection (when none is configured).
        self.archives: dict[str, NoveltyArchive] = {}
        #: Per-role MAP-Elites archives (``map_elites`` selection).
        self.grids: dict[str, GridArchive] = {}

    def draw(
        self, role: str, parents: Sequence[Individual], n: int, rng: np.random.Generator
    ) -> tuple[Sequence[Individual], list[Individual]]:
        """The parent pool (best first) and ``n`` parents drawn from it by the scheme.

        Args:
            role: The role whose archive is read (and fed).
            parents: Candidate parents, best first, with their fitness set.
            n: Draws (repeats allowed).
            rng: Source of every draw.

        A grid of elites takes ``parents`` in and draws from all its elites; a novelty scheme
        gets the role's archive of past behaviours, which ``parents`` then enter.
        """
        kind = archive_kind(self.selection)
        if kind == "elites":
            grid = self.grid(role)
            grid.add(parents)
            return grid.elites, grid.sample_elites(n, rng=rng)
        scheme = dict(self.params)
        archive: NoveltyArchive | None = None
        if kind == "behaviours" and "archive" not in scheme:
            if role not in self.archives:
                self.archives[role] = self._new_behaviours()
            archive = scheme["archive"] = self.archives[role]
        picks = select(self.selection, parents, n, rng=rng, **scheme)
        if archive is not None:
            archive.add(descriptor_matrix(parents))
        return parents, [parents[i] for i in picks]

    def _new_behaviours(self) -> NoveltyArchive:
        """An archive whose neighbour count is the scheme's ``neighbours`` (declared default
        filled in), or the archive's own default for a scheme without one."""
        neighbours = SELECTIONS.effective_params(self.selection, self.params).get("neighbours")
        return NoveltyArchive(k=int(neighbours)) if isinstance(neighbours, int | float) else NoveltyArchive()

    def grid(self, role: str) -> GridArchive:
        """The role's MAP-Elites archive, made on first use on the grid settings given in the
        scheme's parameters (:class:`~redqueen.evo.selection.GridSettings`, whose defaults fill
        in those not given)."""
        if role not in self.grids:
            given = {k: v for k, v in self.params.items() if k in GridSettings.model_fields}
            self.grids[role] = GridArchive(settings=GridSettings.model_validate(given))
        return self.grids[role]

    def metrics(self) -> ArchiveMetrics:
        """``qd_score/<role>`` and ``coverage/<role>`` of every grid, and its cells as
        ``archive/<role>``: one ``[*cell index, quality]`` list per elite (for the heatmap)."""
        metrics: ArchiveMetrics = {}
        for role, grid in sorted(self.grids.items()):
            stats = grid.stats
            metrics[f"qd_score/{role}"], metrics[f"coverage/{role}"] = stats.qd_score, stats.coverage
            metrics[f"archive/{role}"] = [[*cell, quality] for cell, quality, _ in grid.data()]
        return metrics

    def state_dict(self) -> SelectionArchivesState:
        """Every archive as plain data."""
        return SelectionArchivesState(
            archives={role: archive.state_dict() for role, archive in self.archives.items()},
            grids={role: grid.state_dict() for role, grid in self.grids.items()},
        )

    def load_state_dict(self, state: SelectionArchivesState) -> None:
        """Restore what :meth:`state_dict` returned (a checkpoint without archives has none)."""
        self.archives, self.grids = {}, {}
        for role, archive_state in state.get("archives", {}).items():
            self.archives[role] = NoveltyArchive()
            self.archives[role].load_state_dict(archive_state)
        for role, grid_state in state.get("grids", {}).items():
            self.grids[role] = GridArchive()
            self.grids[role].load_state_dict(grid_state)
