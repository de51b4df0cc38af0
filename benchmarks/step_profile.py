"""Where a ``tiny`` step's time goes: generation, verification, learning, bookkeeping, checkpoint.

Builds the ``tiny`` preset's environment (as ``redqueen run tiny`` does), plays one warm-up step
and then ``--steps`` steps, and reads each step's phase columns from its metrics
(``seconds_propose``: the teachers' generation; ``seconds_verify``: validating proposals in the
sandbox; ``seconds_solve``: the students' generation; ``seconds_grade``: judging answers and the
base probe; ``seconds_learn``: the learner's steps; ``seconds_other``: matchmaking, ratings,
replacement and snapshots). The checkpoint is timed separately (the environment's state
written with ``torch.save``). Reports the mean and min over steps.

Usage::

    python benchmarks/step_profile.py [--steps 5] [--threads 2] [--set KEY=VALUE ...]

Writes ``benchmarks/results/step_profile.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from redqueen.experiments.build import build_environment  # noqa: E402
from redqueen.experiments.config import load_config  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
PHASES = ("propose", "verify", "solve", "grade", "learn", "other")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], help="Config override KEY=VALUE.")
    parser.add_argument("--out", type=Path, default=RESULTS / "step_profile.json")
    args = parser.parse_args()
    cfg = load_config("tiny", [f"model.cpu_threads={args.threads}", "checkpoint_every=0", *args.set])
    env = build_environment(cfg)
    rows, saves = [], []
    try:
        env.step()  # warm-up: first generate call, sandbox start
        for _ in range(args.steps):
            rows.append(env.step().metrics)
            with tempfile.TemporaryDirectory() as tmp:
                start = time.perf_counter()
                torch.save(env.state_dict(), Path(tmp) / "state.pt")
                saves.append(time.perf_counter() - start)
    finally:
        env.close()
    table = {p: [float(r.get(f"seconds_{p}", 0.0)) for r in rows] for p in PHASES}
    table["checkpoint"] = saves
    table["step"] = [float(r["seconds"]) + s for r, s in zip(rows, saves, strict=True)]
    result = {
        "preset": "tiny",
        "overrides": [f"model.cpu_threads={args.threads}", *args.set],
        "steps": args.steps,
        "seconds": {k: {"mean": float(np.mean(v)), "min": float(np.min(v))} for k, v in table.items()},
        "share_of_step": {k: float(np.mean(v) / np.mean(table["step"])) for k, v in table.items() if k != "step"},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
        "load_average_after": list(os.getloadavg()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result["seconds"], indent=1))


if __name__ == "__main__":
    main()
