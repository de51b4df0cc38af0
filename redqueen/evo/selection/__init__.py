"""Selection schemes: plain functions ``(individuals, k, *, rng, **params) -> list[int]``.

Each scheme returns indices into ``individuals`` (repeats allowed) and takes a
``numpy.random.Generator``, so a seed reproduces it. Registered in :data:`SELECTIONS`; call
them through :func:`select`. A new scheme is one decorated function::

    @SELECTIONS.register("my_scheme")
    def my_scheme(individuals, k, *, rng):
        ...

Schemes: ``tournament``, ``truncation``, ``rating_lcb`` (PopuLoRA's default), ``lexicase``,
``epsilon_lexicase``, ``nsga2``, ``nsga3``, ``spea2``, ``novelty``, ``novelty_lc``, ``map_elites``.
:class:`GridArchive` is MAP-Elites' archive kept across generations (QD-score, coverage;
:meth:`GridArchive.sample_elites` draws the parents); :class:`GridSettings`, its grid, is also
the ``map_elites`` scheme's parameters.
"""

from __future__ import annotations

from redqueen.evo.selection._base import SELECTIONS, select, weighted_values
from redqueen.evo.selection._classic import (
    epsilon_lexicase,
    lexicase,
    rating_lcb,
    tournament,
    truncation,
)
from redqueen.evo.selection._diversity import map_elites, novelty, novelty_lc
from redqueen.evo.selection._grid_archive import ArchiveStats, GridArchive, GridSettings
from redqueen.evo.selection._multiobjective import nsga2, nsga3, spea2

__all__ = [
    "SELECTIONS",
    "ArchiveStats",
    "GridArchive",
    "GridSettings",
    "epsilon_lexicase",
    "lexicase",
    "map_elites",
    "novelty",
    "novelty_lc",
    "nsga2",
    "nsga3",
    "rating_lcb",
    "select",
    "spea2",
    "tournament",
    "truncation",
    "weighted_values",
]
