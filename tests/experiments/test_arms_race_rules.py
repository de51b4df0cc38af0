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


def _stage_one(difference, seeds=10, spread=0.002):
    """The amendment's first stage: population and lr0 only, L1c with seed-to-seed spread."""
    rng = np.random.default_rng(1)
    return {
        condition: {
            seed: {
                "L1c": (difference if condition == "population" else 0.0)
                + spread * rng.normal(0, 1),
                "E1": 0.0,
                "E2": 0.0,
                "E5": 0.7,
            }
            for seed in range(seeds)
        }
        for condition in ("population", "lr0")
    }


def test_continuous_learning_gate_needs_the_smallest_effect(arms_race):
    learned = arms_race.analyse(_stage_one(0.02), method="t")
    assert learned["hypotheses"]["H1c"]["supported"]
    assert learned["summary"].startswith("learning seen (H1c supported)")
    check = learned["hypotheses"]["H1c"]["checks"][0]
    assert check["low"] < 0.02 < check["high"] and check["p_permutation"] < 0.001
    # Clearly above zero (p < 0.05) but below +0.01 nats per token: not learning by the plan.
    small = arms_race.analyse(_stage_one(0.005, spread=0.001), method="t")
    assert small["hypotheses"]["H1c"]["checks"][0]["p_permutation"] < 0.05
    assert not small["hypotheses"]["H1c"]["supported"]
    assert small["summary"].startswith("inner loop did not measurably learn (H1c")


def test_permutation_p_is_exact_for_small_groups(arms_race):
    # 3 vs 3 fully separated: 2 of the 20 splits are as extreme (the observed one and its mirror).
    p = arms_race.permutation_p(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    assert p == pytest.approx(2 / 20)
    assert arms_race.permutation_p(np.array([1.0, 2.0]), np.array([1.0, 2.0])) == 1.0
