"""At which learner settings do `tiny`'s adapters move? A small sweep on the CPU.

Each setting is the `tiny` preset with a few overrides (learning rate, PPO epochs and
minibatches per step, answers sampled per task), run for ``--steps`` co-evolution steps from
the same seed, one setting at a time in this process. Recorded per step: ``kl_from_base``
(mean per-token KL of the members' policies from the base model on their own rollouts),
``weight_change`` (``||dW|| / ||W||``), ``valid_share`` (a collapse of the teachers shows here),
``solve_rate``, ``informative_share``, ``clip_fraction`` and seconds. The anchor is the
learning-rate-0 control in the same run: the same computation with weights that never move.
Writes ``benchmarks/results/learner_sweep.json``.

Usage::

    python benchmarks/learner_sweep.py [--steps 3] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from redqueen.experiments.build import build_environment
from redqueen.experiments.config import load_config

RESULTS = Path(__file__).resolve().parent / "results"

#: Name -> ``--set`` overrides of the `tiny` preset (the preset's values where not given).
SETTINGS: dict[str, list[str]] = {
    "lr3e-3": ["learner.lr=3e-3", "learner.epochs=1", "learner.minibatches=1"],
    "lr1e-3_ep2_mb2": ["learner.lr=1e-3", "learner.epochs=2", "learner.minibatches=2"],
    "lr3e-3_ep2_mb2": ["learner.lr=3e-3", "learner.epochs=2", "learner.minibatches=2"],
    "lr1e-3_ep2_mb2_n8": [
        "learner.lr=1e-3",
        "learner.epochs=2",
        "learner.minibatches=2",
        "environment.answers_per_task=8",
    ],
    "lr1e-2": ["learner.lr=1e-2", "learner.epochs=1", "learner.minibatches=1"],
    "lr1e-3": ["learner.lr=1e-3", "learner.epochs=1", "learner.minibatches=1"],
    "lr1e-4": ["learner.lr=1e-4", "learner.epochs=1", "learner.minibatches=1"],
    "lr0_control": ["learner.lr=0", "learner.epochs=1", "learner.minibatches=1"],
}

KEYS = (
    "kl_from_base",
    "weight_change",
    "valid_share",
    "solve_rate",
    "informative_share",
    "clip_fraction",
    "tokens_trained",
    "seconds",
)


def run_setting(overrides: list[str], steps: int) -> list[dict[str, float]]:
    """``steps`` co-evolution steps of `tiny` with ``overrides``; the chosen metrics per step."""
    cfg = load_config("tiny", [*overrides, f"steps={steps}"])
    if cfg.model.cpu_threads:
        torch.set_num_threads(cfg.model.cpu_threads)
    env = build_environment(cfg)
    try:
        return [
            {key: float(record.metrics.get(key, 0.0)) for key in KEYS}
            for record in (env.step() for _ in range(steps))
        ]
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None, help="setting names to run")
    parser.add_argument("--out", type=Path, default=RESULTS / "learner_sweep.json")
    args = parser.parse_args()
    names = args.only or list(SETTINGS)
    results = {}
    if args.out.exists():  # keep settings measured earlier when rerunning a few
        results = json.loads(args.out.read_text()).get("settings", {})
    start = time.perf_counter()
    for name in names:
        began = time.perf_counter()
        curve = run_setting(SETTINGS[name], args.steps)
        results[name] = {
            "overrides": SETTINGS[name],
            "steps": args.steps,
            "per_step": curve,
            "final_kl_from_base": curve[-1]["kl_from_base"],
            "final_weight_change": curve[-1]["weight_change"],
            "mean_valid_share": sum(r["valid_share"] for r in curve) / len(curve),
            "mean_seconds_per_step": sum(r["seconds"] for r in curve) / len(curve),
            "wall_seconds": time.perf_counter() - began,
        }
        row = results[name]
        print(
            f"{name:18s} kl {row['final_kl_from_base']:.5f}  dW/W {row['final_weight_change']:.5f}"
            f"  valid {row['mean_valid_share']:.2f}  s/step {row['mean_seconds_per_step']:.1f}",
            flush=True,
        )
        write(args.out, results, time.perf_counter() - start)  # a stopped sweep keeps its rows


def write(path: Path, results: dict[str, dict], seconds: float) -> None:
    """The results file: machine, the sweep's cost so far, and every setting measured."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "benchmark": "learner_sweep",
                "preset": "tiny",
                "machine": {
                    "platform": platform.platform(),
                    "torch": torch.__version__,
                    "threads": torch.get_num_threads(),
                },
                "sweep_wall_seconds": seconds,
                "settings": results,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
