"""Surrogate environment: time 50 generations of 2 roles x 8 members (target < 30 s on 2 cores).

Measures, in one run:

- ``ours``: ``SurrogateEnv.step`` with ``replace_every=1`` (one generation per step: match,
  propose, answer, reward, one gradient step per member, rating, replacement with
  ``svd_merge`` / ``gaussian`` children, diversity metrics);
- ``anchor``: the same steps with torch's default thread count instead of the one-thread guard
  the environment applies (its tensors are tiny, so thread hand-offs dominate), on fewer steps.

Writes ``benchmarks/results/surrogate.json`` and prints the same JSON.

Usage::

    python benchmarks/surrogate.py                    # 50 generations
    python benchmarks/surrogate.py --generations 10 --anchor-steps 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from redqueen.environments.surrogate import SurrogateEnv
from redqueen.evo import ReplacementConfig

RESULTS = Path(__file__).resolve().parent / "results"
POPULATION = SurrogateEnv.default_population.updated(teachers=8, students=8, rank=4, alpha=8.0)
REPLACEMENT = ReplacementConfig(replace_every=1)
SEED = 0
#: What the results record of the settings above.
SETTINGS = {"teachers": POPULATION.teachers, "students": POPULATION.students, "rank": POPULATION.rank,
            "alpha": POPULATION.alpha, "replace_every": REPLACEMENT.replace_every, "seed": SEED}


def _env() -> SurrogateEnv:
    return SurrogateEnv(population=POPULATION, replacement=REPLACEMENT, seed=SEED)


def time_ours(generations: int) -> dict[str, float]:
    """Build the environment and run ``generations`` steps through the public API."""
    start = time.perf_counter()
    env = _env()
    built = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(generations):
        last = env.step()
    seconds = time.perf_counter() - start
    return {
        "build_seconds": built,
        "seconds": seconds,
        "seconds_per_generation": seconds / generations,
        "lineage_size": len(env.lineage),
        "phylogenetic_diversity": env.lineage.phylogenetic_diversity(),
        "final_metrics": {k: v for k, v in last.metrics.items() if k != "seconds"},
    }


def time_anchor(steps: int) -> dict[str, float]:
    """The same steps without the one-thread guard (torch's default intra-op threads)."""
    env = _env()
    start = time.perf_counter()
    for _ in range(steps):
        env._step()  # step() minus the thread guard
    seconds = time.perf_counter() - start
    return {
        "threads": torch.get_num_threads(),
        "steps": steps,
        "seconds": seconds,
        "seconds_per_generation": seconds / steps,
    }


def main() -> None:
    """Run both measurements and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=50)
    parser.add_argument("--anchor-steps", type=int, default=10)
    args = parser.parse_args()
    ours = time_ours(args.generations)
    anchor = time_anchor(args.anchor_steps)
    result = {
        "benchmark": "surrogate",
        "settings": {**SETTINGS, "generations": args.generations},
        "ours": ours,
        "anchor": anchor,
        "target_seconds": 30.0,
        "meets_target": ours["seconds"] < 30.0,
        "speedup_vs_anchor": anchor["seconds_per_generation"] / ours["seconds_per_generation"],
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "torch": torch.__version__,
            "load_average": os.getloadavg(),
        },
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2)
    (RESULTS / "surrogate.json").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
