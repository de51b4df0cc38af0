"""The learning check (benchmarks/LEARNING_CHECK.md): its statistics, and the positive control.

The small positive control is the learner's unit test at the science level: one seed, 12
fixed tasks that the base model solves sometimes, 4 steps at the ``tiny`` preset's learning
rate. Greedy pass@1 on those tasks must rise; with learning rate 0 the same check must fail
(the adapter stays at B = 0, so nothing can change), which shows it can.
"""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "learning_check.py"


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("learning_check_rules", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_sign_flip_test_is_exact_and_holm_steps_down(check):
    # Eight positive differences: the most extreme of 256 sign patterns, twice (two-sided).
    assert check.sign_flip_p([1.0] * 8) == pytest.approx(2 / 256)
    assert check.sign_flip_p([1.0, -1.0] * 4) == 1.0
    assert check.holm({"a": 0.01, "b": 0.04}) == {"a": True, "b": True}
    assert check.holm({"a": 0.03, "b": 0.04}) == {"a": False, "b": False}
    # A t interval, not a percentile bootstrap: wider than mean +- 1.96 sd / sqrt(n) at n = 5.
    ci = check.t_interval([0.0, 0.0, 1.0, 1.0, 1.0])
    assert ci["high"] - ci["low"] > 2 * 1.96 * np.std([0, 0, 1, 1, 1], ddof=1) / np.sqrt(5)


def _c2_row(trained, shuffled, random, base=-1.0):
    row = {"base": {"E1": base, "E2": 0.2, "E3": 0.4, "greedy": 0.25}, "kl_exact": {}}
    for arm, e1 in (("trained", trained), ("shuffled", shuffled), ("random", random)):
        row[arm] = {"E1": base + e1, "E2": 0.2, "E3": 0.4, "greedy": 0.25}
        row["kl_exact"][arm] = 0.01
    return row


def test_decisions_need_significance_and_the_smallest_effect_of_interest(check):
    rng = np.random.default_rng(0)
    big = {f"c2/{s}": _c2_row(0.05 + rng.normal(0, 0.005), 0.0, 0.0) for s in range(8)}
    decisions = check.summarise(big)["decisions"]
    assert decisions["beats_random_adapter"]["value"] and decisions["beats_shuffled_reward"]["value"]
    assert not decisions["beats_random_adapter"]["provisional"]
    # Significant but below +0.01 nats/token: not claimed.
    small = {f"c2/{s}": _c2_row(0.004 + rng.normal(0, 0.0005), 0.0, 0.0) for s in range(8)}
    decisions = check.summarise(small)["decisions"]
    assert decisions["beats_random_adapter"]["p_sign_flip"] < 0.01
    assert not decisions["beats_random_adapter"]["value"]
    # The random null as good as training: not claimed either.
    same = {f"c2/{s}": _c2_row(0.05, 0.0, 0.05 + rng.normal(0, 0.01)) for s in range(8)}
    assert not check.summarise(same)["decisions"]["beats_random_adapter"]["value"]
    # Fewer seeds than planned: marked provisional.
    assert check.summarise(dict(list(big.items())[:3]))["decisions"]["beats_random_adapter"][
        "provisional"
    ]


def test_decisions_on_sampled_pass_at_1_read_that_endpoint_only(check, tmp_path, capsys):
    rng = np.random.default_rng(1)
    runs = {}
    for s in range(8):
        row = _c2_row(-0.01, 0.0, 0.0)  # the gold log-likelihood falls under training
        row["trained"]["E2"] = 0.2 + 0.03 + rng.normal(0, 0.003)  # sampled pass@1 rises
        runs[f"c2/{s}"] = row
    on_e1 = check.summarise(runs)["decisions"]
    on_e2 = check.summarise(runs, "E2")
    assert not on_e1["beats_random_adapter"]["value"]
    decision = on_e2["decisions"]["beats_random_adapter"]
    assert decision["value"] and decision["E2_difference"]["mean"] == pytest.approx(0.03, abs=0.005)
    assert on_e2["decision_endpoint"] == "E2"
    # A file keeps the endpoint it was decided on: no swapping after the fact.
    out = tmp_path / "check.json"
    out.write_text(json.dumps({"runs": runs, "decision_endpoint": "E1"}))
    with pytest.raises(SystemExit) as exit_info:
        check.main(["--out", str(out), "--endpoint", "E2", "--summarise"])
    assert exit_info.value.code == 2
    assert "decides on E1" in capsys.readouterr().err


@pytest.mark.slow
def test_small_positive_control_rises_and_fails_at_learning_rate_zero(check):
    from redqueen.engine import LearnerConfig
    from redqueen.verifiers import Executor

    with Executor() as executor:
        probe = check.Probe(0, executor)
        tasks = check.screen_tasks(probe, 0, n_tasks=12, answers=8, screen_limit=300, batch=16)
        assert len(tasks) == 12
        learned = check.train_c1(probe, tasks, steps=4, answers=8, name="learns")
        # At least 2 of the 12 tasks more under greedy decoding, and a higher training reward.
        assert learned["C1a"] >= 2 / 12 and learned["C1b"] > 0, learned
        # The same check at learning rate 0 (same tasks, same samples): nothing can rise.
        probe.learner.config = LearnerConfig(**{**probe.cfg.learner.model_dump(), "lr": 0.0})
        frozen = check.train_c1(probe, tasks, steps=4, answers=8, name="frozen")
        assert frozen["C1a"] == 0.0 and frozen["greedy_after"] == frozen["greedy_before"]
