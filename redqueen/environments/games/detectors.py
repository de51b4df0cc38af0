"""Detectors of the classic co-evolution pathologies: pure functions of logged quantities.

Each detector turns something a run logs into one number, and :data:`THRESHOLDS` says where
that number means the pathology is present (:func:`fires`). They read objective quantities,
which a surrogate game knows exactly, beside the subjective ones (ratings, rewards) that
cannot tell progress from a cycle (Watson & Pollack, "Coevolutionary dynamics in a minimal
substrate", GECCO 2001; Ficici & Pollack, "Challenges in coevolutionary learning", ALife 2000).

- :func:`disengagement`: the share of matches whose solve rate is 0 or 1, where neither side
  gets a learning signal (Cartlidge & Bullock, "Combating coevolutionary disengagement by
  reducing parasite virulence", Evol. Comput. 2004).
- :func:`cycling`: the share of cyclic triads among the generations of a CIAO matrix
  (Cliff & Miller 1995): generation ``a`` beats ``b`` when a's solvers score more against b's
  proposers than b's solvers against a's; a transitive history has no cyclic triad.
- :func:`focusing`: how much of the objective progress sits on one dimension (0: spread
  evenly, 1: all on one).
- :func:`collapse`: the least-squares slope of the objective task difficulty over time;
  a falling difficulty is the drift of self-play towards trivial tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np

#: Where each detector fires: ``value > threshold`` (``collapse``: ``value < threshold``).
THRESHOLDS: dict[str, float] = {
    "disengagement": 0.5,
    "cycling": 0.1,
    "focusing": 0.5,
    "collapse": -0.01,
}


def disengagement(solve_rates: Sequence[float | None]) -> float:
    """Share of matches (valid tasks) whose solve rate is exactly 0 or 1; ``None`` entries
    (invalid tasks) are skipped; 0 when there is none."""
    rates = np.asarray([r for r in solve_rates if r is not None], dtype=float)
    if rates.size == 0:
        return 0.0
    return float(np.mean((rates == 0.0) | (rates == 1.0)))


def cycling(solver_score: Sequence[Sequence[float]], *, margin: float = 0.0) -> float:
    """Share of cyclic triads among the generations of a CIAO matrix.

    Args:
        solver_score: ``solver_score[i][j]``: mean score of the solvers of generation ``j``
            against the proposers of generation ``i`` (the matrix :mod:`redqueen.experiments.ciao`
            writes). Generation ``a`` beats ``b`` when
            ``solver_score[b][a] - solver_score[a][b] > margin``.
        margin: Differences at or below it are ties (a tie breaks every cycle through it).

    Returns:
        Cyclic triads over all triads, in [0, 1] (0 with fewer than three generations).

    Raises:
        ValueError: If the matrix is not square.
    """
    m = np.asarray(solver_score, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"cycling: expected a square matrix, got shape {m.shape}")
    n = m.shape[0]
    if n < 3:
        return 0.0
    beats = (m.T - m) > margin  # beats[a, b]: a's solvers vs b's proposers beat b's vs a's
    cyclic = sum(
        1
        for a, b, c in combinations(range(n), 3)
        if (beats[a, b] and beats[b, c] and beats[c, a])
        or (beats[b, a] and beats[c, b] and beats[a, c])
    )
    return cyclic / (n * (n - 1) * (n - 2) / 6)


def focusing(progress: Sequence[float] | np.ndarray) -> float:
    """How much of the progress sits on one dimension: ``(s - 1/n) / (1 - 1/n)`` where ``s`` is
    the largest share of the absolute progress; 0 when progress is spread evenly (or absent,
    or there is one dimension), 1 when it is all on one dimension."""
    p = np.abs(np.asarray(progress, dtype=float))
    n, total = p.size, float(p.sum())
    if n < 2 or total <= 0.0:
        return 0.0
    return float((p.max() / total - 1.0 / n) / (1.0 - 1.0 / n))


def collapse(difficulty: Sequence[float]) -> float:
    """Least-squares slope of the objective task difficulty per step (0 with fewer than two
    points); negative when tasks are getting easier."""
    y = np.asarray(difficulty, dtype=float)
    if y.size < 2:
        return 0.0
    x = np.arange(y.size, dtype=float)
    return float(np.polyfit(x, y, 1)[0])


def fires(name: str, value: float) -> bool:
    """Whether detector ``name``'s ``value`` crosses its threshold in :data:`THRESHOLDS`.

    Raises:
        KeyError: On an unknown detector.
    """
    threshold = THRESHOLDS[name]
    return value < threshold if name == "collapse" else value > threshold
