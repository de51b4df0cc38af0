"""Diversity-driven selection: novelty search, novelty with local competition, MAP-Elites."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import numpy as np
from pydantic import Field
from pymoo.operators.survival.rank_and_crowding import RankAndCrowding

from redqueen._registry import Needs
from redqueen.evo.selection._base import (
    SELECTIONS,
    Candidate,
    attribute_matrix,
    best_first,
    cycle,
    weighted_values,
)
from redqueen.evo.selection._grid_archive import GridArchive, GridSettings
from redqueen.evo.selection._multiobjective import survival_order
from redqueen.fitness import NoveltyArchive, novelty_scores


def _reference(archive: NoveltyArchive | np.ndarray | None) -> np.ndarray | None:
    if archive is None:
        return None
    if isinstance(archive, NoveltyArchive):
        return archive.descriptors if len(archive) else None
    return np.atleast_2d(np.asarray(archive, dtype=float))


@SELECTIONS.register("novelty", needs=Needs(archive=True, member_fields=("descriptor",)))
def novelty(
    individuals: Sequence[Candidate],
    k: int,
    *,
    rng: np.random.Generator,
    archive: NoveltyArchive | np.ndarray | None = None,
    neighbours: Annotated[int, Field(ge=1)] = 15,
) -> list[int]:
    """Novelty search: the ``k`` members whose descriptors are farthest from their k nearest neighbours.

    Lehman & Stanley, "Abandoning objectives: Evolution through the search for novelty alone",
    Evol. Comput. 2011. Neighbours include the ``archive`` of past behaviours.
    """
    scores = novelty_scores(attribute_matrix(individuals, "descriptor"), _reference(archive), k=neighbours)
    return cycle(best_first(scores), k)


@SELECTIONS.register("novelty_lc", needs=Needs(archive=True, member_fields=("descriptor",)))
def novelty_lc(
    individuals: Sequence[Candidate],
    k: int,
    *,
    rng: np.random.Generator,
    archive: NoveltyArchive | np.ndarray | None = None,
    neighbours: Annotated[int, Field(ge=1)] = 15,
) -> list[int]:
    """Novelty search with local competition: NSGA-II over (novelty, local competition score).

    Lehman & Stanley, "Evolving a diversity of virtual creatures through novelty search and
    local competition", GECCO 2011. The local competition score is the fraction of a member's
    nearest behavioural neighbours (in the population) whose first fitness value it beats.
    """
    desc = attribute_matrix(individuals, "descriptor")
    quality = weighted_values(individuals)[:, 0]
    nov = novelty_scores(desc, _reference(archive), k=neighbours)
    dist = np.linalg.norm(desc[:, None, :] - desc[None, :, :], axis=-1)
    np.fill_diagonal(dist, np.inf)
    kk = max(1, min(neighbours, len(individuals) - 1))
    lc = np.zeros(len(individuals))
    if len(individuals) > 1:
        nearest = np.argsort(dist, axis=1, kind="stable")[:, :kk]
        lc = (quality[:, None] > quality[nearest]).mean(axis=1)
    return cycle(survival_order(RankAndCrowding(), np.column_stack([nov, lc]), k, rng), k)


@SELECTIONS.register("map_elites", params=GridSettings, needs=Needs(archive=True, member_fields=("descriptor",)))
def map_elites(individuals: Sequence[Candidate], k: int, *, rng: np.random.Generator, **grid: object) -> list[int]:
    """MAP-Elites: grid the descriptor space, keep each cell's elite, draw parents uniformly from elites.

    Mouret & Clune, "Illuminating search spaces by mapping elites", arXiv:1504.04909, 2015.
    The parameters are the grid's (:class:`~redqueen.evo.selection.GridSettings`: ``bins``,
    ``low``, ``high``, ``qd_score_offset``). Called alone, the grid holds only ``individuals``
    and the elites are drawn in member order. The evolution loop instead keeps a persistent
    :class:`~redqueen.evo.selection.GridArchive` per role on these settings and draws parents
    from it with :meth:`~redqueen.evo.selection.GridArchive.sample_elites`, so the survivors
    are not gridded again on every call (``qd_score_offset`` is the archive's, for its QD-score).
    """
    cells = GridArchive(settings=GridSettings.model_validate(grid)).index_of(
        attribute_matrix(individuals, "descriptor")
    )
    elites: dict[tuple[int, ...], int] = {}
    for i in best_first(weighted_values(individuals)):  # best first: the first seen in a cell is its elite
        elites.setdefault(cells[i], int(i))
    pool = sorted(elites.values())
    return [pool[int(j)] for j in rng.integers(0, len(pool), size=k)]
