"""Where can the numbers games cycle or focus? A sweep of member spread against play noise.

Descriptive, declared in ``benchmarks/SURROGATE_GAMES.md`` (amendment 1). Two parts:

- **static**: the share of cyclic triads in the game *as played* (``Game.played_score``: both
  sides' points blurred by Gaussian play noise) among 24 random points of unit spread, as the
  ratio spread / noise goes from 0.05 to noise-free. The rule of the intransitive game has
  cycles; whether the played game keeps them depends on that ratio alone.
- **dynamic**: the intransitive and focusing games run with their presets over founder spread
  (``population.init_std``) x play noise (``environment.options.exploration``) x variation
  (the default ``svd_merge``/``gaussian`` mix, which contracts the population, or
  ``gaussian`` alone with sigma 0.2 on every module, which explores), 5 seeds per cell; per cell
  the end-of-run spread/noise, cycling (played CIAO matrix of the hall of fame), mean
  disengagement over the last 10 steps, focusing and skill gain, with Student t 95% intervals.

Writes ``benchmarks/results/surrogate_regimes.json`` and ``surrogate_regimes.png``.

Usage::

    python benchmarks/surrogate_regimes.py [--seeds 5] [--steps 60] [--workers 2]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from surrogate_games import COMMON, _iv, run_all  # noqa: E402

from redqueen.environments.games import GAMES, detectors  # noqa: E402
from redqueen.experiments.stats import t_ci  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
RATIOS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, None)  # None: noise-free rule
DRAWS = 512
STATIC_GAMES = ("intransitive", "focusing", "compare_on_one")
INIT_STDS = (0.1, 0.3, 1.0)
EXPLORATIONS = (0.5, 0.1)
VARIATION = {
    "default": (),
    "explore": ("evolution.operators.svd_merge=0", "evolution.operators.gaussian=1.0",
                "evolution.operator_params.gaussian.sigma=0.2",
                "evolution.operator_params.gaussian.fraction=1.0"),
}


def static(seeds: int) -> dict[str, Any]:
    """Cyclic-triad share of the played game among 24 unit-spread points, per game and ratio."""
    torch.set_num_threads(1)
    out: dict[str, Any] = {}
    for name in STATIC_GAMES:
        game = GAMES[name]()
        rows = {}
        for ratio in RATIOS:
            noise = 0.0 if ratio is None else 1.0 / ratio
            shares = []
            for seed in range(seeds):
                points = torch.randn(24, game.dim, generator=torch.Generator().manual_seed(seed))
                payoff = game.played_score(points, points, noise=noise, draws=DRAWS, seed=seed)
                shares.append(detectors.cycling(payoff.numpy(), margin=DRAWS**-0.5 if noise else 0.0))
            rows["rule" if ratio is None else str(ratio)] = _iv(t_ci(shares))
        out[name] = rows
    return out


def dynamic_cells() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Cell name -> (preset, overrides) of the dynamic sweep."""
    cells = {}
    for game, std, noise, var in itertools.product(("intransitive", "focusing"), INIT_STDS, EXPLORATIONS, VARIATION):
        name = f"{game}/std{std}/noise{noise}/{var}"
        cells[name] = (f"game-{game}", (f"population.init_std={std}", f"environment.options.exploration={noise}",
                                        *VARIATION[var]))
    return cells


def figure(path: Path, result: dict[str, Any]) -> None:
    """Left: the played game's cyclic share against spread/noise. Right: each dynamic cell's
    end-of-run spread/noise against its cycling, marker size by engagement."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    xs = [r for r in RATIOS if r is not None]
    for name, rows in result["static"].items():
        means = [rows[str(r)]["mean"] for r in xs]
        left.plot(xs, means, marker="o", label=f"{name} (rule: {rows['rule']['mean']:.2f})")
    left.set(xscale="log", xlabel="member spread / play noise", ylabel="share of cyclic triads",
             title="cycles in the game as played (24 random points, mean over point sets)")
    left.legend(fontsize=8)
    for game, marker in (("intransitive", "o"), ("focusing", "s")):
        cells = {c: v for c, v in result["dynamic"].items() if c.startswith(game)}
        x = [v["spread_to_noise"]["mean"] for v in cells.values()]
        y = [v["cycling"]["mean"] for v in cells.values()]
        engaged = [max(0.05, 1.0 - v["disengagement"]["mean"]) for v in cells.values()]
        right.scatter(x, y, s=[300 * e for e in engaged], marker=marker, alpha=0.6, label=game)
        for cell, xi, yi in zip(cells, x, y, strict=True):
            right.annotate(cell.split("/", 1)[1], (xi, yi), fontsize=6)
    right.set(xscale="log", xlabel="spread / noise at the last step", ylabel="cycling at the last step",
              title="runs: marker area = engaged share (1 - disengagement)")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="Seeds per dynamic cell (and point sets).")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "surrogate_regimes.json")
    args = parser.parse_args()
    start = time.perf_counter()
    result: dict[str, Any] = {"plan": "benchmarks/SURROGATE_GAMES.md (amendment 1, descriptive)",
                              "seeds": list(range(args.seeds)), "steps": args.steps,
                              "static": static(args.seeds)}
    cells = dynamic_cells()
    jobs = [(cell, preset, over, seed, args.steps) for cell, (preset, over) in cells.items()
            for seed in range(args.seeds)]
    runs = run_all(jobs, args.workers)
    result["dynamic"] = {
        cell: {k: _iv(t_ci([r["endpoints"][k] for r in runs if r["cell"] == cell]))
               for k in runs[0]["endpoints"]}
        for cell in cells
    }
    result["grid"] = {c: {"preset": p, "overrides": [*COMMON, *o]} for c, (p, o) in cells.items()}
    result["wall_seconds"] = time.perf_counter() - start
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    figure(args.out.with_suffix(".png"), result)
    print(json.dumps({"static": {g: {k: round(v["mean"], 3) for k, v in rows.items()}
                                 for g, rows in result["static"].items()},
                      "wall_seconds": result["wall_seconds"]}, indent=1))


if __name__ == "__main__":
    main()
