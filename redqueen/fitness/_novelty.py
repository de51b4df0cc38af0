"""Behaviour descriptors, novelty (kNN sparseness) and diversity measures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

if TYPE_CHECKING:
    from redqueen.genomes import LoRAGenome


def behaviour_descriptor(
    rows: Sequence[Mapping[str, Any]],
    fields: Sequence[str],
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> np.ndarray:
    """Mean of ``fields`` over rows (e.g. one teacher's task rows), scaled to [0, 1] by ``bounds``.

    Rows whose field is ``None`` are skipped for that field; a field with no value gives 0.

    Args:
        rows: Dict rows such as ``tasks.jsonl`` rows.
        fields: Fields to average, one descriptor dimension each.
        bounds: Optional ``{field: (low, high)}`` for min-max scaling (clipped).
    """
    out = np.zeros(len(fields), dtype=float)
    for i, name in enumerate(fields):
        values = [float(r[name]) for r in rows if r.get(name) is not None]
        value = float(np.mean(values)) if values else 0.0
        if bounds and name in bounds:
            low, high = bounds[name]
            value = float(np.clip((value - low) / (high - low), 0.0, 1.0)) if high > low else 0.0
        out[i] = value
    return out


def novelty_scores(descriptors: np.ndarray, reference: np.ndarray | None = None, *, k: int = 15) -> np.ndarray:
    """Novelty of each descriptor: mean distance to its k nearest neighbours.

    Lehman & Stanley, "Abandoning objectives: Evolution through the search for novelty alone",
    Evol. Comput. 2011. Neighbours come from the other descriptors and the ``reference`` set
    (an archive); a descriptor is never its own neighbour.

    Args:
        descriptors: ``(n, d)`` descriptors to score.
        reference: ``(m, d)`` archive descriptors, or ``None``.
        k: Neighbours to average (clipped to those available).
    """
    x = np.atleast_2d(np.asarray(descriptors, dtype=float))
    n = x.shape[0]
    pool = x if reference is None or len(reference) == 0 else np.vstack([x, np.atleast_2d(reference)])
    dist = np.linalg.norm(x[:, None, :] - pool[None, :, :], axis=-1)  # (n, n + m)
    dist[np.arange(n), np.arange(n)] = np.inf
    kk = max(1, min(k, pool.shape[0] - 1))
    if pool.shape[0] < 2:
        return np.zeros(n)
    nearest = np.sort(dist, axis=1)[:, :kk]
    return nearest.mean(axis=1)


class NoveltyArchiveState(TypedDict):
    """What :meth:`NoveltyArchive.state_dict` returns: its settings and descriptors (plain data)."""

    k: int
    threshold: float | None
    max_size: int
    items: list[list[float]]


class NoveltyArchive:
    """An archive of past behaviours against which novelty is measured.

    A descriptor enters when its novelty exceeds ``threshold`` (Lehman & Stanley 2011); with
    ``threshold=None`` every offered descriptor enters. The oldest entries leave beyond
    ``max_size``.

    Args:
        k: Neighbours for novelty.
        threshold: Minimum novelty to enter the archive, or ``None``.
        max_size: Capacity (first in, first out).
    """

    def __init__(self, *, k: int = 15, threshold: float | None = None, max_size: int = 1000) -> None:
        if k < 1 or max_size < 1:
            raise ValueError(f"NoveltyArchive: k and max_size must be >= 1, got k={k}, max_size={max_size}")
        self.k, self.threshold, self.max_size = int(k), threshold, int(max_size)
        self._items: list[np.ndarray] = []

    @property
    def descriptors(self) -> np.ndarray:
        """Archived descriptors as an ``(m, d)`` array (``(0, 0)`` when empty)."""
        return np.vstack(self._items) if self._items else np.zeros((0, 0))

    def __len__(self) -> int:
        return len(self._items)

    def score(self, descriptors: np.ndarray) -> np.ndarray:
        """Novelty of each descriptor against the others and the archive."""
        ref = self.descriptors if self._items else None
        return novelty_scores(descriptors, ref, k=self.k)

    def add(self, descriptors: np.ndarray) -> int:
        """Offer descriptors; returns how many entered."""
        x = np.atleast_2d(np.asarray(descriptors, dtype=float))
        scores = self.score(x)
        added = 0
        for d, s in zip(x, scores, strict=True):
            if self.threshold is None or s >= self.threshold:
                self._items.append(d.copy())
                added += 1
        del self._items[: max(0, len(self._items) - self.max_size)]
        return added

    def state_dict(self) -> NoveltyArchiveState:
        """Settings and archived descriptors."""
        return NoveltyArchiveState(k=self.k, threshold=self.threshold, max_size=self.max_size,
                                   items=[d.tolist() for d in self._items])

    def load_state_dict(self, state: NoveltyArchiveState) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.k, self.threshold, self.max_size = state["k"], state["threshold"], state["max_size"]
        self._items = [np.asarray(d, dtype=float) for d in state["items"]]


def behavioural_diversity(descriptors: np.ndarray) -> float:
    """Mean pairwise Euclidean distance between behaviour descriptors (0 for fewer than two)."""
    x = np.atleast_2d(np.asarray(descriptors, dtype=float))
    n = x.shape[0]
    if n < 2:
        return 0.0
    dist = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=-1)
    return float(dist[np.triu_indices(n, 1)].mean())


def genotypic_diversity(genomes: Sequence[LoRAGenome]) -> float:
    """Mean pairwise distance between genomes' low-rank updates (0 for fewer than two).

    Uses :func:`redqueen.genomes.pairwise_distances`, which compares the true updates
    ``s * B A`` without forming them densely.
    """
    if len(genomes) < 2:
        return 0.0
    from redqueen.genomes import pairwise_distances

    dist = np.asarray(pairwise_distances(list(genomes)), dtype=float)
    n = dist.shape[0]
    return float(dist[np.triu_indices(n, 1)].mean())
