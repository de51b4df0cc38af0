"""How much can the cycling detector see at all? Its value on generations drawn at random.

The games environment's ``cycling`` is the share of cyclic triads among the hall of fame's
snapshots, in a CIAO matrix whose cell ``(i, j)`` is the mean expected score of *every* student
of snapshot ``j`` against *every* teacher of snapshot ``i`` (``GamesEnv.ciao``), with
differences below ``1 / sqrt(PAYOFF_DRAWS)`` as ties. This script feeds that construction with
generations that share nothing: each of ``G`` snapshots holds ``n`` students and ``n``
teachers drawn independently from a standard normal in ``dims`` dimensions, scored by the real
game (``Game.played_score``) and read by the real detector (``detectors.cycling``). No
co-evolution produces more independent generations than these, so the mean is what the
detector can reach in that design when the members are spread far beyond the noise (the
noise-free rule, or play noise ``--noise`` times the unit spread).

Usage::

    python benchmarks/cycling_ceiling.py [--draws 40] [--generations 12]

Writes ``benchmarks/results/cycling_ceiling.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from redqueen.environments.games import GAMES, detectors
from redqueen.environments.games.detectors import THRESHOLDS
from redqueen.environments.games.environment import PAYOFF_DRAWS
from redqueen.experiments.stats import t_ci

RESULTS = Path(__file__).resolve().parent / "results"
MEMBERS = (1, 2, 6)  # members per role and snapshot; 6 is the game presets' population
DIMS = (2, 3, 4, 6)  # 2 is the game presets' default
NOISES = (0.0, 0.1)  # play noise relative to the unit spread: the rule, and spread/noise 10


def ceiling(game: str, dims: int, members: int, noise: float, generations: int, seed: int) -> float:
    """Cycling of one set of ``generations`` independent random snapshots."""
    rule = GAMES[game](dims=dims)
    gen = torch.Generator().manual_seed(seed)
    students = torch.randn(generations, members, dims, generator=gen)
    teachers = torch.randn(generations, members, dims, generator=gen)
    matrix = [
        [
            float(
                rule.played_score(
                    students[j], teachers[i], noise=noise, draws=PAYOFF_DRAWS, seed=seed
                ).mean()
            )
            for j in range(generations)
        ]
        for i in range(generations)
    ]
    return detectors.cycling(matrix, margin=PAYOFF_DRAWS**-0.5 if noise else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=40, help="random snapshot sets per cell")
    parser.add_argument("--generations", type=int, default=12, help="snapshots per set")
    parser.add_argument("--out", type=Path, default=RESULTS / "cycling_ceiling.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    cells = {}
    for game in ("intransitive", "compare_on_one"):
        for noise in NOISES:
            for dims in DIMS:
                for members in MEMBERS:
                    values = [
                        ceiling(game, dims, members, noise, args.generations, seed)
                        for seed in range(args.draws)
                    ]
                    interval = t_ci(values)
                    key = f"{game}/noise{noise}/dims{dims}/members{members}"
                    cells[key] = {
                        "mean": interval.mean,
                        "low": interval.low,
                        "high": interval.high,
                        "share_above_threshold": sum(v > THRESHOLDS["cycling"] for v in values)
                        / len(values),
                    }
                    print(
                        f"{key:44s} {interval.mean:.3f} [{interval.low:.3f}, {interval.high:.3f}]"
                    )
    result = {
        "what": "cycling of independent random snapshots (the detector's reach in this design)",
        "generations": args.generations,
        "draws_per_cell": args.draws,
        "threshold": THRESHOLDS["cycling"],
        "payoff_draws": PAYOFF_DRAWS,
        "cells": cells,
        "seconds": time.perf_counter() - start,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
