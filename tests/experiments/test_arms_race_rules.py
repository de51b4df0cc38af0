"""The arms-race benchmark's decision rules (benchmarks/ARMS_RACE.md) on synthetic per-seed data."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "arms_race.py"


@pytest.fixture(scope="module")
def arms_race():
    spec = importlib.util.spec_from_file_location("arms_race_rules", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _per_seed(l1, e1, e2, seeds=5, valid=0.7):
    """Every condition the same except the given population values, with seed-to-seed spread."""
    rng = np.random.default_rng(0)
    out = {}
    for condition in ("population", "selfplay", "lr0", "no_replacement"):
        rows = {}
        for seed in range(seeds):
            jitter = rng.normal(0, 1)
            rows[seed] = {
                "L1": (l1 if condition == "population" else 0.0) + 0.001 * jitter,
                "E1": (e1 if condition == "population" else 0.0) + 0.05 * jitter,
                "E2": (e2 if condition == "population" else 0.0) + 0.0005 * jitter,
                "E3_variance": 0.01,
                "E3_saturation": 0.1,
                "E4": 5.0,
                "E5": valid,
            }
        out[condition] = rows
    return out


def test_no_learning_means_no_endpoint_is_interpreted(arms_race):
    per_seed = _per_seed(l1=0.0, e1=2.0, e2=-0.02)
    for seed, row in per_seed["population"].items():  # the lr-0 control's values exactly
        row["L1"] = per_seed["lr0"][seed]["L1"]
    result = arms_race.analyse(per_seed)
    assert not result["hypotheses"]["H1"]["supported"]
    assert result["summary"].startswith("inner loop did not measurably learn")


def test_rising_complexity_and_difficulty_with_learning_is_an_arms_race(arms_race):
    result = arms_race.analyse(_per_seed(l1=0.03, e1=2.0, e2=-0.02))
    assert result["hypotheses"]["H2"]["supported"] and result["hypotheses"]["H3"]["supported"]
    assert result["summary"].startswith("arms race seen")


def test_collapsing_validity_is_not_an_arms_race(arms_race):
    result = arms_race.analyse(_per_seed(l1=0.03, e1=2.0, e2=-0.02, valid=0.3))
    assert not result["summary"].startswith("arms race seen")


def test_flat_tight_endpoints_refute_at_this_power(arms_race):
    result = arms_race.analyse(_per_seed(l1=0.03, e1=0.0, e2=0.0))
    population = result["estimates"]["population"]
    assert population["E1"]["high"] - population["E1"]["low"] < 0.5
    assert result["summary"].startswith("arms race refuted at this power")


def test_flat_but_wide_endpoints_are_inconclusive(arms_race):
    per_seed = _per_seed(l1=0.03, e1=0.0, e2=0.0)
    for seed, row in per_seed["population"].items():
        row["E2"] = 0.02 * (-1) ** seed  # a CI far wider than the smallest effect (0.005)
    assert arms_race.analyse(per_seed)["summary"].startswith("inconclusive")
