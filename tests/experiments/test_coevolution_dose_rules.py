"""The co-evolution-at-dose analysis (benchmarks/COEVOLUTION_DOSE.md) on synthetic data and logs."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"{name}_rules", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dose():
    return _load("coevolution_dose")


@pytest.fixture(scope="module")
def evaluation():
    return _load("dose_evaluation")


def test_t_interval_matches_the_textbook(dose):
    ci = dose.t_interval([1.0, 2.0, 3.0, 4.0])
    half = 3.182446305284263 * np.std([1, 2, 3, 4], ddof=1) / 2  # t(0.975, 3)
    assert ci["mean"] == pytest.approx(2.5)
    assert (ci["low"], ci["high"]) == pytest.approx((2.5 - half, 2.5 + half))
    assert dose.t_interval([1.0])["low"] is None


def test_welch_and_tost_tell_a_difference_from_an_equivalence(dose):
    rng = np.random.default_rng(1)
    same_a, same_b = rng.normal(0, 0.002, 12), rng.normal(0, 0.002, 12)
    apart_a, apart_b = rng.normal(0.02, 0.002, 12), rng.normal(0, 0.002, 12)
    assert dose.tost(same_a, same_b, 0.008)["equivalent"]
    assert dose.welch(same_a, same_b)["p_welch"] > 0.05
    apart = dose.welch(apart_a, apart_b)
    assert apart["p_welch"] < 0.001 and apart["low"] > 0
    assert not dose.tost(apart_a, apart_b, 0.008)["equivalent"]
    # too noisy to say either: not different, not equivalent
    wide_a, wide_b = rng.normal(0, 0.03, 4), rng.normal(0, 0.03, 4)
    assert not dose.tost(wide_a, wide_b, 0.008)["equivalent"]


def test_sign_flip_p_is_exact(dose):
    assert dose.sign_flip_p([1.0] * 8) == pytest.approx(2 / 256)
    assert dose.sign_flip_p([1.0, -1.0]) == 1.0


def test_conditional_power_follows_the_trend(dose):
    good = dose.conditional_power([0.02] * 3 + [0.03] * 3, [0.0] * 3 + [0.01] * 3, 14)
    wrong_way = dose.conditional_power([0.0] * 3 + [0.01] * 3, [0.02] * 3 + [0.03] * 3, 14)
    a = [0.0, 0.004, -0.004, 0.002, -0.002, 0.0]
    b = [0.0, 0.004, -0.004, 0.0015, -0.0015, 0.0005]
    flat = dose.conditional_power(a, b, 14)
    assert good > 0.99 and wrong_way > 0.99  # two-sided
    assert flat < 0.10
    assert dose.futility(a, b)["stop"]
    # a flat trend whose interval still reaches the effect of interest does not stop
    assert not dose.futility([5 * v for v in a], [5 * v for v in b])["stop"]


def test_answers_per_solver_are_read_from_the_logs(dose, tmp_path):
    (tmp_path / "config.yaml").write_text("environment:\n  answers_per_task: 16\n")
    (tmp_path / "lineage.csv").write_text(
        "id,ancestor_list,origin_time,destruction_time,name,role\n"
        "0,[none],0,,t0,teacher\n1,[none],0,,s0,student\n2,[none],0,,s1,student\n"
        "3,[none],0,3,s2,student\n"
    )
    tasks = [
        {"step": 0, "teacher": "t0", "student": "s0", "valid": True},
        {"step": 0, "teacher": "t0", "student": "s0", "valid": True},
        {"step": 0, "teacher": "t0", "student": "s0", "valid": False},
        {"step": 1, "teacher": "t0", "student": "s1", "valid": True},
        {"step": 1, "teacher": "t0", "student": "s2", "valid": True},  # died: not a living solver
    ]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (tmp_path / "metrics.jsonl").write_text('{"step": 0, "answers": 32}\n{"step": 1, "answers": 32}\n')
    got = dose.answers_per_solver(tmp_path)
    assert got["per_solver"] == {"s0": 32, "s1": 16}
    assert got["mean"] == 24.0
    assert got["logged_answers"] == 64.0 and got["steps"] == 2


def test_temperature_star_is_found_downward_from_the_top(evaluation):
    grid, curve = (0.4, 0.6, 0.8, 1.0), (0.20, 0.18, 0.14, 0.10)
    assert evaluation.temperature_star(grid, curve, 0.09)[0] == 1.0
    assert evaluation.temperature_star(grid, curve, 0.12)[0] == pytest.approx(0.9)
    assert evaluation.temperature_star(grid, curve, 0.18)[0] == pytest.approx(0.6)
    t, how = evaluation.temperature_star(grid, curve, 0.5)
    assert t == 0.4 and "flagged" in how


def test_answer_entropy(evaluation):
    assert evaluation.answer_entropy(["1", "1", " 1", "1"]) == 0.0
    assert evaluation.answer_entropy(["1", "2", None, None]) == pytest.approx(-np.log(0.25) / 2 + np.log(2) / 2)


def test_temperature_matched_decision_needs_every_seed_and_the_effect():
    null = _load("temperature_null")

    def run(trained, base_star):
        cal = {"temperature_star": 0.7}
        return {"trained": {"E2": trained}, "base_temperature_star": {"E2": base_star},
                "base_entropy_temperature_star": {"E2": base_star}, "base_T1": {"E2": 0.1},
                "calibration": cal}

    ahead = {str(s): run(0.14 + 0.001 * s, 0.12) for s in range(8)}
    decision = null.summarise(ahead)["decisions"]["beats_temperature_matched_base"]
    assert decision["value"] and decision["p_sign_flip"] == pytest.approx(2 / 256)
    assert decision["calibration_set"].startswith("frozen") and decision["temperature_star"]["0"] == 0.7
    sharpened = {str(s): run(0.137 + 0.002 * (-1) ** s, 0.137) for s in range(8)}
    assert not null.summarise(sharpened)["decisions"]["beats_temperature_matched_base"]["value"]


def _row(e1, gate=0.0):
    keys = ("sampled_vs_temperature_matched_base", "sampled_change", "greedy_change")
    return {"E1": e1, "gate": gate, **dict.fromkeys(keys, 0.0), "temperature_star": 1.0,
            "answers_per_solver": 2000.0, "valid_share": 0.75, "seconds_per_step": 40.0}


def test_partial_and_interim_files_are_strict_json(dose):
    one = {"coevolution_no_replacement": {0: _row(0.01)}, "selfplay": {0: _row(0.0)}}
    partial = dose.analyse(one)
    json.dumps(partial, allow_nan=False)
    assert partial["arms"]["selfplay"]["seeds"] == [0]
    assert partial["decisions"]["coevolution_beats_selfplay"]["value"] is None
    rng = np.random.default_rng(3)
    six = {arm: {s: _row(rng.normal(0, 0.002), 0.02 + rng.normal(0, 0.001)) for s in range(6)}
           for arm in dose.PRIMARY}
    interim = dose.analyse(six)
    json.dumps(interim, allow_nan=False)
    decisions = interim["decisions"]
    assert decisions["futility_look"]["seeds_per_arm"] == 6
    # flat and tight at six seeds: the futility rule stops, and the decision is final there
    assert decisions["futility_look"]["stop"]
    assert not decisions["coevolution_beats_selfplay"]["provisional"]
    assert decisions["coevolution_no_replacement_learns_beyond_random_adapter"]["value"]
    assert decisions["outcome"] in ("equivalent within +-0.008", "inconclusive")


def test_a_persisted_copy_counts_as_finished_and_evaluated(dose, tmp_path, monkeypatch):
    # a finished, evaluated run: the copy keeps the analysis' files and its solvers' adapters
    run = tmp_path / "runs" / "selfplay-seed0"
    (run / "population" / "solo-0000").mkdir(parents=True)
    (run / "population" / "solo-0000" / "adapter_config.json").write_text("{}")
    (run / "population" / "old-0001").mkdir()
    for name in dose.KEPT_FILES:
        (run / name).write_text("start eb107a1 2026-11-27T18:12:39\n" if name == dose.CODE_FILE else "{}\n")
    (run / dose.EVAL_FILE).write_text(json.dumps({"members": [{"name": "solo-0000", "age": 57}]}))
    keep = tmp_path / "keep"
    assert not dose.kept(run, keep)
    copy = dose.persist(run, keep)
    assert dose.kept(run, keep) and (copy / "population" / "solo-0000" / "adapter_config.json").is_file()
    assert not (copy / "population" / "old-0001").exists()
    assert sorted(p.name for p in copy.iterdir()) == sorted((*dose.KEPT_FILES, "population"))
    # with the run directory gone, the runner skips the run and the analysis reads the copy
    read = []
    monkeypatch.setattr(dose, "run_row", lambda d: read.append(d) or _row(0.01))
    monkeypatch.setattr(dose, "pinned_tree", lambda tree, keep: tree)
    monkeypatch.setattr(dose, "run_or_resume", lambda *a: pytest.fail("a persisted run was rerun"))
    monkeypatch.setattr(dose, "evaluated", lambda *a: pytest.fail("a persisted run was re-evaluated"))
    import shutil

    shutil.rmtree(run)
    out = tmp_path / "out.json"
    for extra in ([], ["--analyse-only"]):
        argv = ["--workdir", str(tmp_path / "runs"), "--keep", str(keep), "--out", str(out), "--arms", "selfplay"]
        result = dose.main([*argv, "--seeds", "0", *extra])
        assert result["arms"]["selfplay"]["seeds"] == [0] and result["in_progress"] == []
    assert set(read) == {copy}


def test_runs_of_another_commit_stop_the_runner(dose, tmp_path):
    assert dose.is_pinned(dose.PINNED) and dose.is_pinned(dose.PINNED + "3")
    assert not dose.is_pinned(dose.PINNED + "+changes") and not dose.is_pinned("0c7ff3d")
    (tmp_path / "keep" / "selfplay-seed0").mkdir(parents=True)
    (tmp_path / "keep" / "selfplay-seed0" / dose.CODE_FILE).write_text("start 0c7ff3d 2026-11-28T09:00:00\n")
    with pytest.raises(SystemExit, match="not starting"):
        dose.pinned_tree(tmp_path / "tree", tmp_path / "keep")
    assert not (tmp_path / "tree").exists()


def test_the_committed_copies_reproduce_the_result(dose, tmp_path):
    copies = sorted(p.parent.name for p in dose.KEEP.glob(f"*/{dose.EVAL_FILE}"))
    if not copies:
        pytest.skip("no persisted runs")
    result = dose.write(tmp_path / "absent", tmp_path / "out.json", list(dose.ARMS), range(dose.PLANNED_SEEDS), dose.STEPS)
    committed = json.loads((dose.RESULTS / "coevolution_dose.json").read_text())
    for arm in dose.ARMS:
        # the committed file may be ahead of the copies (a run evaluated, not yet persisted)
        assert set(result["arms"].get(arm, {}).get("seeds", [])) <= set(committed["arms"].get(arm, {}).get("seeds", []))
        for seed, row in result["arms"].get(arm, {}).get("per_seed", {}).items():
            assert row["E1"] == committed["arms"][arm]["per_seed"][seed]["E1"]
            assert row["answers_per_solver"] == committed["arms"][arm]["per_seed"][seed]["answers_per_solver"]
