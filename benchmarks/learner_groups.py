"""The learner on real ``tiny`` rollouts: rows in one padded batch against rows grouped by length.

Plays ``--steps`` steps of the ``tiny`` preset (after a warm-up step) and records every
``Learner.step`` call's rollouts. Then, on exactly those rollouts, it times the learner's work
per step (the update's forward and backward and the ``kl_from_base`` probe) two ways, in one
process and interleaved round by round:

* ``one group``: every micro-batch padded to its longest prompt and completion (the learner
  before length groups; ``_GROUP_OVERHEAD["cpu"] = None``);
* ``length groups``: the CPU default, rows of very different lengths in separate groups.

The learner runs at learning rate 0, so the adapters do not move and both ways see the same
inputs every round. Also counted: the token positions the model runs (padded cells).

Usage::

    python benchmarks/learner_groups.py [--steps 3] [--rounds 3] [--threads 2]

Writes ``benchmarks/results/learner_groups.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy import stats

import redqueen.engine._learner as learner_module
from redqueen.engine import Learner
from redqueen.experiments.build import build_environment
from redqueen.experiments.config import load_config

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = {"one group": None, "length groups": learner_module._GROUP_OVERHEAD["cpu"]}


def record(steps: int, threads: int) -> tuple[Any, list[tuple[str, list]]]:
    """A ``tiny`` environment after ``steps`` steps and the (adapter, rollouts) of its learner
    calls in those steps."""
    # No replacement while recording: every recorded adapter is still there to be timed.
    overrides = [
        f"model.cpu_threads={threads}",
        "checkpoint_every=0",
        "evolution.replace_every=1000",
    ]
    cfg = load_config("tiny", overrides)
    env = build_environment(cfg)
    calls: list[tuple[str, list]] = []
    recording = {"on": False}
    original = Learner.step

    def step(self, adapter_id, rollouts):
        if recording["on"]:
            calls.append((adapter_id, list(rollouts)))
        return original(self, adapter_id, rollouts)

    Learner.step = step  # type: ignore[method-assign]
    try:
        env.step()  # warm-up
        recording["on"] = True
        for _ in range(steps):
            env.step()
    finally:
        Learner.step = original  # type: ignore[method-assign]
    return env, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "learner_groups.json")
    args = parser.parse_args()
    env, calls = record(args.steps, args.threads)
    host = env.host
    learner = Learner(host, replace(env.learner.config, lr=0.0))
    cells: dict[str, int] = {}
    seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for overhead in VARIANTS.values():  # warm-up: optimizer state, allocator
        learner_module._GROUP_OVERHEAD["cpu"] = overhead
        for adapter_id, rollouts in calls[: len(calls) // args.steps]:
            learner.step(adapter_id, rollouts)
    for _ in range(args.rounds):
        for name, overhead in VARIANTS.items():
            learner_module._GROUP_OVERHEAD["cpu"] = overhead
            shapes: list[tuple[int, int]] = []
            hook = host.model.register_forward_hook(
                lambda m, a, kw, o, shapes=shapes: shapes.append(tuple(kw["input_ids"].shape)),
                with_kwargs=True,
            )
            start = time.perf_counter()
            try:
                for adapter_id, rollouts in calls:
                    learner.step(adapter_id, rollouts)
            finally:
                hook.remove()
            seconds[name].append((time.perf_counter() - start) / args.steps)
            cells[name] = sum(rows * width for rows, width in shapes) // args.steps
    env.close()
    ratios = [a / b for a, b in zip(seconds["one group"], seconds["length groups"], strict=True)]
    mean, sem = float(np.mean(ratios)), float(stats.sem(ratios)) if len(ratios) > 1 else 0.0
    half = float(stats.t.ppf(0.975, len(ratios) - 1)) * sem if len(ratios) > 1 else 0.0
    result = {
        "preset": "tiny",
        "steps": args.steps,
        "rounds": args.rounds,
        "threads": args.threads,
        "learner_calls_per_step": len(calls) / args.steps,
        "seconds_per_step": {k: [round(v, 3) for v in vs] for k, vs in seconds.items()},
        "model_cells_per_step": cells,
        "speedup": {"mean": mean, "per_round": ratios, "t95": [mean - half, mean + half]},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
        "load_average_after": list(os.getloadavg()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
