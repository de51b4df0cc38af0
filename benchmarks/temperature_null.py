"""The learning check's sampled gain against a base model made as sharp as the trained adapter.

Amendment (e) of ``benchmarks/LEARNING_CHECK.md``: C2's trained arm (16 steps of fresh tasks,
8 answers each) on the given model, then the base model at a temperature T* chosen on a
calibration set (frozen ``code_output`` problems 97-256) so that its sampled pass@1 there
matches the trained adapter's; both are then compared on the evaluation set (the first 96
frozen problems). A gain that the sharper base also shows is sharpening, not skill.

Each seed is written at once to ``--out`` (a seed already there is skipped) with its T*, the
per-problem sampled correct counts and answer entropies, and the trained adapter is saved as a
PEFT folder beside the file. The base model's calibration curve over the temperature grid is
computed once and kept in the file.

Usage::

    python benchmarks/temperature_null.py --model benchmarks/results/gpu_tiny_coder \
        --seeds 16 17 18 19 20 21 22 23
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dose_evaluation import answer_entropy, frozen_tasks, sample, temperature_star  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
EVALUATION = slice(0, 96)
CALIBRATION = slice(96, 256)
CALIBRATION_NAME = "frozen code_output problems 97-256"
GRID = tuple(round(0.4 + 0.05 * i, 2) for i in range(13))
SAMPLES = 8
CALIBRATION_SAMPLE_SEED = 7_000
SESOI = 0.01
PLANNED_SEEDS = 8


def _per_problem(correct: np.ndarray, texts: list[list[str | None]]) -> dict[str, list[float]]:
    return {
        "sampled_correct": correct.sum(1).tolist(),
        "answer_entropy": [round(answer_entropy(t), 5) for t in texts],
    }


def base_calibration(probe: Any, calibration: list[Any]) -> dict[str, Any]:
    """The base model's sampled pass@1 and mean answer entropy on the calibration set, per T."""
    passes, entropies = [], []
    for t in GRID:
        correct, texts = sample(probe, None, calibration, SAMPLES, CALIBRATION_SAMPLE_SEED, t)
        passes.append(float(correct.mean()))
        entropies.append(float(np.mean([answer_entropy(x) for x in texts])))
    return {
        "set": CALIBRATION_NAME,
        "grid": list(GRID),
        "samples": SAMPLES,
        "sampling_seed": CALIBRATION_SAMPLE_SEED,
        "base_pass_at_1": passes,
        "base_answer_entropy": entropies,
    }


def run_seed(probe: Any, seed: int, tasks: list[Any], calib: dict[str, Any], adapters: Path) -> dict[str, Any]:
    """Train C2's arm for ``seed``, save it, choose T* and compare on the evaluation set."""
    from learning_check import STREAM_SEED, stream_tasks

    start = time.perf_counter()
    calibration, held = tasks[CALIBRATION], tasks[EVALUATION]
    stream = stream_tasks(16 * 16, STREAM_SEED + seed, probe.executor)
    probe.student("trained")
    log = [probe.step("trained", stream[16 * k : 16 * (k + 1)], 8, seed * 1000 + k) for k in range(16)]
    saved = probe.host.genome("trained").save_peft(adapters / f"seed{seed}", base_model=str(probe.host.model_path))
    cal_correct, cal_texts = sample(probe, "trained", calibration, SAMPLES, CALIBRATION_SAMPLE_SEED, 1.0)
    cal_pass = float(cal_correct.mean())
    cal_entropy = float(np.mean([answer_entropy(t) for t in cal_texts]))
    t_star, how = temperature_star(calib["grid"], calib["base_pass_at_1"], cal_pass)
    t_entropy, how_entropy = temperature_star(
        calib["grid"], [-h for h in calib["base_answer_entropy"]], -cal_entropy
    )
    eval_seed = seed + 99
    trained = sample(probe, "trained", held, SAMPLES, eval_seed, 1.0)
    base_t1 = sample(probe, None, held, SAMPLES, eval_seed, 1.0)
    base_star = sample(probe, None, held, SAMPLES, eval_seed, t_star)
    base_entropy = sample(probe, None, held, SAMPLES, eval_seed, t_entropy)
    greedy_trained = probe.greedy("trained", held)
    probe.host.remove_adapter("trained")
    return {
        "train": log,
        "adapter": str(saved.relative_to(RESULTS)) if saved.is_relative_to(RESULTS) else str(saved),
        "calibration": {
            "trained_pass_at_1": cal_pass,
            "trained_answer_entropy": cal_entropy,
            "temperature_star": t_star,
            "found": how,
            "entropy_temperature_star": t_entropy,
            "entropy_found": how_entropy,
        },
        "trained": {"E2": float(trained[0].mean()), "E3": float(trained[0].any(1).mean()), "greedy": float(np.mean(greedy_trained)), **_per_problem(*trained)},
        "base_T1": {"E2": float(base_t1[0].mean()), "E3": float(base_t1[0].any(1).mean()), **_per_problem(*base_t1)},
        "base_temperature_star": {"E2": float(base_star[0].mean()), "E3": float(base_star[0].any(1).mean()), **_per_problem(*base_star)},
        "base_entropy_temperature_star": {"E2": float(base_entropy[0].mean()), **_per_problem(*base_entropy)},
        "seconds": round(time.perf_counter() - start, 1),
    }


def summarise(runs: dict[str, Any]) -> dict[str, Any]:
    """The amendment's decision and the reported comparisons."""
    from learning_check import detectable, sign_flip_p, t_interval

    if not runs:
        return {"decisions": {}}
    diff = [r["trained"]["E2"] - r["base_temperature_star"]["E2"] for r in runs.values()]
    diff_entropy = [r["trained"]["E2"] - r["base_entropy_temperature_star"]["E2"] for r in runs.values()]
    diff_t1 = [r["trained"]["E2"] - r["base_T1"]["E2"] for r in runs.values()]
    p = sign_flip_p(diff)
    ci = t_interval(diff)
    return {
        "seeds": sorted(int(s) for s in runs),
        "decisions": {
            "beats_temperature_matched_base": {
                "value": bool(p < 0.05 and ci["mean"] >= SESOI),
                "E2_difference": ci,
                "p_sign_flip": p,
                "smallest_effect_of_interest": SESOI,
                "detectable_at_80pct_power": detectable(diff),
                "temperature_star": {s: r["calibration"]["temperature_star"] for s, r in runs.items()},
                "calibration_set": CALIBRATION_NAME,
                "seeds": len(runs),
                "provisional": len(runs) < PLANNED_SEEDS,
            }
        },
        "reported": {
            "E2_minus_base_at_T1": t_interval(diff_t1),
            "E2_minus_entropy_matched_base": {**t_interval(diff_entropy), "p_sign_flip": sign_flip_p(diff_entropy)},
        },
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="base model folder (gpu-tiny-coder)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(16, 24)))
    parser.add_argument("--out", type=Path, default=RESULTS / "learning_check_gpu-tiny-coder_temperature.json")
    args = parser.parse_args(argv)
    os.environ["REDQUEEN_LEARNING_CHECK_MODEL"] = args.model
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from learning_check import Probe, _code_version

    from redqueen.verifiers import Executor

    torch.set_num_threads(1)
    result: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    result.setdefault("plan", "benchmarks/LEARNING_CHECK.md, amendment (e)")
    result.setdefault("model", args.model)
    result.setdefault("runs", {})
    adapters = args.out.with_suffix("") / "adapters"

    def write() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        result.update(summarise(result["runs"]))
        tmp = args.out.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(result, indent=1) + "\n")
        tmp.replace(args.out)

    tasks = frozen_tasks()
    with Executor() as executor:
        for seed in args.seeds:
            if str(seed) in result["runs"]:
                continue
            probe = Probe(seed, executor)
            if "calibration" not in result:
                result["calibration"] = base_calibration(probe, tasks[CALIBRATION])
                write()
            print(f"temperature_null: seed {seed} ...", file=sys.stderr, flush=True)
            row = run_seed(probe, seed, tasks, result["calibration"], adapters)
            row["code"] = _code_version()
            result["runs"][str(seed)] = row
            write()
    write()
    print(json.dumps(result["decisions"], indent=1))
    return result


if __name__ == "__main__":
    main()
