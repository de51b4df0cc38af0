"""The objective measures and pathology detectors a games run logs every step."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from redqueen.environments.games import detectors
from redqueen.environments.games._base import Game


def objective_measures(
    game: Game,
    students: torch.Tensor,
    difficulty: float,
    *,
    rates: Sequence[float],
    progress: np.ndarray,
    history: Sequence[float],
    ciao: Sequence[Sequence[float]] | None,
    tie_margin: float = 0.0,
) -> dict[str, float]:
    """One step's objective columns of ``metrics.jsonl``.

    Args:
        game: The game (its objective measures).
        students: The living students' points, ``(m, dim)``.
        difficulty: The objective difficulty of the living teachers' tasks.
        rates: Solve rates of this step's valid tasks (for ``disengagement``).
        progress: The students' mean point minus the founders', per dimension (``focusing``).
        history: Recent objective difficulties, oldest first (``collapse`` slope).
        ciao: The hall of fame's CIAO matrix (``cycling``), ``None`` with fewer than 3 snapshots.
        tie_margin: Score differences in the CIAO matrix at or below it are ties (its estimation
            error when the scores are estimated).
    """
    measures = {
        "objective_skill": game.skill(students),
        "objective_difficulty": difficulty,
        "disengagement": detectors.disengagement(rates),
        "cycling": detectors.cycling(ciao, margin=tie_margin) if ciao is not None else 0.0,
        "focusing": detectors.focusing(progress),
        "collapse": detectors.collapse(history),
    }
    measures.update({f"skill_dim_{i}": float(v) for i, v in enumerate(students.mean(0))})
    return measures
