"""Pathology detectors: each fires on a constructed case of its pathology and not on a healthy one."""

from __future__ import annotations

import numpy as np
import pytest

from redqueen.environments.games.detectors import (
    THRESHOLDS,
    collapse,
    cycling,
    disengagement,
    fires,
    focusing,
)


def test_disengagement_fires_when_tasks_are_all_trivial_or_impossible():
    stuck = [0.0, 1.0, 1.0, 0.0, 1.0, 0.25, None]
    assert disengagement(stuck) == pytest.approx(5 / 6)
    assert fires("disengagement", disengagement(stuck))
    engaged = [0.25, 0.5, 0.75, 0.5, 1.0, None]
    assert disengagement(engaged) == pytest.approx(1 / 5)
    assert not fires("disengagement", disengagement(engaged))
    assert disengagement([None, None]) == 0.0


def _ciao(strength: np.ndarray) -> np.ndarray:
    """solver_score[i][j] for generations whose solvers and proposers share a strength."""
    return 1.0 / (1.0 + np.exp(-(strength[None, :] - strength[:, None])))


def test_cycling_fires_on_rock_paper_scissors_generations_and_not_on_steady_progress():
    steady = _ciao(np.arange(5, dtype=float))  # each generation beats every earlier one
    assert cycling(steady) == 0.0
    assert not fires("cycling", cycling(steady))
    # three generations in a cycle: 1 beats 0, 2 beats 1, 0 beats 2
    rps = np.full((3, 3), 0.5)
    for a, b in ((1, 0), (2, 1), (0, 2)):
        rps[b, a], rps[a, b] = 0.9, 0.1  # a's solvers score 0.9 against b's proposers
    assert cycling(rps) == 1.0
    assert fires("cycling", cycling(rps))
    assert cycling(rps, margin=0.9) == 0.0  # differences within the margin are ties
    with pytest.raises(ValueError, match="square"):
        cycling(np.zeros((2, 3)))


def test_focusing_fires_when_progress_is_on_one_dimension_only():
    assert focusing([2.0, 0.0, 0.0]) == pytest.approx(1.0)
    assert fires("focusing", focusing([2.0, 0.1]))
    assert focusing([1.0, 1.0, 1.0]) == pytest.approx(0.0)
    assert not fires("focusing", focusing([1.0, 0.8]))
    assert focusing([0.0, 0.0]) == 0.0 and focusing([3.0]) == 0.0


def test_collapse_fires_on_falling_difficulty_and_not_on_a_climb_or_noise():
    rng = np.random.default_rng(0)
    falling = 2.0 - 0.1 * np.arange(20) + 0.01 * rng.standard_normal(20)
    assert collapse(falling) == pytest.approx(-0.1, abs=0.01)
    assert fires("collapse", collapse(falling))
    climbing = 0.05 * np.arange(20)
    assert not fires("collapse", collapse(climbing))
    flat = 0.001 * rng.standard_normal(20)
    assert not fires("collapse", collapse(flat))
    assert collapse([1.0]) == 0.0
    assert set(THRESHOLDS) == {"disengagement", "cycling", "focusing", "collapse"}
