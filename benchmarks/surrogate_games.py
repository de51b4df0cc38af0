"""Surrogate games: do the classic co-evolution results reproduce? (pre-registered grid)

Hypotheses, endpoints and analysis are in ``benchmarks/SURROGATE_GAMES.md`` (written before the
first run; amendment 1, round 2, written before round 2 ran). Round 1, in short: on the intransitive numbers game plain co-evolution cycles without
objective progress where a remedy (a hall of fame of past opponents, or a Pareto-style scheme:
lexicase selection over per-opponent outcomes) progresses (Watson & Pollack 2001; Rosin & Belew
1997; de Jong 2004); on the difficulty ladder a high teacher/student coupling collapses (tasks
get easier) while the adversarial PopuLoRA reward climbs.

Every cell is a preset (``game-<name>``) with ``--set`` overrides, run through the same
``build_environment`` as ``redqueen run``, over ``--seeds`` seeds. Per seed it records the
endpoints; per cell the mean and a 95% interval (round 1: bootstrap BCa; round 2: Student t);
per hypothesis every clause and whether it holds (round 2: Welch t tests between cells, Holm's
correction across tests). Round 2 runs the intransitive game where members' spread is of the
order of the play noise, relabels the ladder's coupling sweep as an implementation check and
adds the learnability ladder. Writes ``benchmarks/results/surrogate_games.json`` (round 1) or
``surrogate_games_round2.json`` (top-level ``seeds``: the seeds of each cell) and a figure.

Usage::

    python benchmarks/surrogate_games.py                       # round 2 (amendment 1), 30-40 seeds per cell
    python benchmarks/surrogate_games.py --round 1             # round 1's grid, 10 seeds
    python benchmarks/surrogate_games.py --selections tournament my_scheme --plugin my_scheme.py
    python benchmarks/surrogate_games.py --seeds 3 --steps 20 --out /tmp/games.json   # a quick look
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from redqueen.environments.games import detectors  # noqa: E402
from redqueen.experiments.build import build_environment  # noqa: E402
from redqueen.experiments.config import load_config  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
#: Settings every cell shares (see SURROGATE_GAMES.md).
COMMON = ("evolution.snapshot_every=5", "evolution.hall_of_fame=12", "checkpoint_every=0")
HOF_SHARE = 0.5


def grid(selections: tuple[str, str]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Cell name -> (preset, overrides). ``selections``: (plain scheme, Pareto-style remedy)."""
    plain, remedy = selections
    hof = (f"matchmaking.hall_of_fame_share={HOF_SHARE}",)
    return {
        "int-plain": ("game-intransitive", (f"evolution.selection={plain}",)),
        "int-hof": ("game-intransitive", (f"evolution.selection={plain}", *hof)),
        "int-lexicase": ("game-intransitive", (f"evolution.selection={remedy}",)),
        "int-lexicase-hof": ("game-intransitive", (f"evolution.selection={remedy}", *hof)),
        "ladder-c0": ("game-ladder", (f"evolution.selection={plain}", "environment.options.coupling=0.0")),
        "ladder-c05": ("game-ladder", (f"evolution.selection={plain}", "environment.options.coupling=0.5")),
        "ladder-c1": ("game-ladder", (f"evolution.selection={plain}", "environment.options.coupling=1.0")),
        "coo-plain": ("game-compare-on-one", (f"evolution.selection={plain}",)),
        "focus-plain": ("game-focusing", (f"evolution.selection={plain}",)),
    }


R1 = ("population.init_std=0.1", "environment.options.exploration=0.5")
R2 = ("population.init_std=0.3", "environment.options.exploration=0.1")


def grid2(selections: tuple[str, str]) -> dict[str, tuple[str, tuple[str, ...], int]]:
    """Round 2 (amendment 1): cell name -> (preset, overrides, seeds)."""
    plain, remedy = selections
    hof = (f"matchmaking.hall_of_fame_share={HOF_SHARE}",)
    sel = {"plain": f"evolution.selection={plain}", "remedy": f"evolution.selection={remedy}"}

    def ladder(game: str, coupling: float) -> tuple[str, ...]:
        return (*R1, sel["plain"], f"environment.options.game={game}",
                f"environment.options.coupling={coupling}")

    return {
        "int-plain-R1": ("game-intransitive", (*R1, sel["plain"]), 30),
        "int-plain": ("game-intransitive", (*R2, sel["plain"]), 40),
        "int-hof": ("game-intransitive", (*R2, sel["plain"], *hof), 40),
        "int-lexicase": ("game-intransitive", (*R2, sel["remedy"]), 40),
        "int-lexicase-hof": ("game-intransitive", (*R2, sel["remedy"], *hof), 40),
        "coo-plain": ("game-compare-on-one", (*R2, sel["plain"]), 30),
        "focus-plain": ("game-focusing", (*R2, sel["plain"]), 30),
        "ladder-c0": ("game-ladder", ladder("ladder", 0.0), 30),
        "ladder-c03": ("game-ladder", ladder("ladder", 0.3), 30),
        "ladder-c045": ("game-ladder", ladder("ladder", 0.45), 30),
        "ladder-c1": ("game-ladder", ladder("ladder", 1.0), 30),
        "learn-ladder-c0": ("game-ladder", ladder("ladder_learnability", 0.0), 30),
    }


def run_one(job: tuple[str, str, tuple[str, ...], int, int]) -> dict[str, Any]:
    """Run one (cell, seed); returns its endpoints and per-step series."""
    cell, preset, overrides, seed, steps = job
    cfg = load_config(preset, [*COMMON, *overrides, f"steps={steps}", f"seed={seed}"])
    env = build_environment(cfg)
    series: dict[str, list[float]] = {k: [] for k in ("objective_skill", "objective_difficulty", "cycling",
                                                        "disengagement", "focusing", "solve_rate",
                                                        "spread_to_noise")}
    start = time.perf_counter()
    for _ in range(steps):
        metrics = env.step().metrics
        for key, values in series.items():
            values.append(float(metrics[key]))
    seconds = time.perf_counter() - start
    env.close()
    endpoints = {
        "skill_gain": series["objective_skill"][-1] - series["objective_skill"][0],
        "difficulty_slope": detectors.collapse(series["objective_difficulty"]),
        "cycling": series["cycling"][-1],
        "disengagement": float(np.mean(series["disengagement"][-10:])),
        "focusing": series["focusing"][-1],
        "spread_to_noise": series["spread_to_noise"][-1],
    }
    return {"cell": cell, "seed": seed, "seconds": seconds, "endpoints": endpoints, "series": series}


def ci(values: list[float]) -> dict[str, float]:
    """Mean and bootstrap 95% CI (BCa; a constant sample has a zero-width interval)."""
    from scipy.stats import bootstrap

    x = np.asarray(values, dtype=float)
    if np.ptp(x) == 0:
        return {"mean": float(x.mean()), "low": float(x[0]), "high": float(x[0])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bootstrap((x,), np.mean, confidence_level=0.95, n_resamples=2000, method="BCa", random_state=0)
    return {"mean": float(x.mean()), "low": float(res.confidence_interval.low), "high": float(res.confidence_interval.high)}


def diff_ci(a: list[float], b: list[float]) -> dict[str, float]:
    """Mean of ``a`` minus mean of ``b`` with a percentile bootstrap 95% CI (independent samples)."""
    from scipy.stats import bootstrap

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        d = float(x.mean() - y.mean())
        return {"mean": d, "low": d, "high": d}
    res = bootstrap((x, y), lambda u, v, axis: u.mean(axis) - v.mean(axis), confidence_level=0.95,
                    n_resamples=2000, method="percentile", vectorized=True, random_state=0)
    return {"mean": float(x.mean() - y.mean()), "low": float(res.confidence_interval.low),
            "high": float(res.confidence_interval.high)}


def verdicts(per_seed: dict[str, dict[str, list[float]]], cells: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Each pre-registered hypothesis: the CI statements and whether all of them hold."""
    def above(c: dict[str, float]) -> bool:
        return c["low"] > 0

    def below(c: dict[str, float]) -> bool:
        return c["high"] < 0

    out: dict[str, Any] = {}
    plain = cells["int-plain"]
    gains = {r: diff_ci(per_seed[r]["skill_gain"], per_seed["int-plain"]["skill_gain"])
             for r in ("int-hof", "int-lexicase", "int-lexicase-hof")}
    cyc = {r: diff_ci(per_seed[r]["cycling"], per_seed["int-plain"]["cycling"])
           for r in ("int-hof", "int-lexicase", "int-lexicase-hof")}
    no_progress = not above(plain["skill_gain"]) or any(above(g) for g in gains.values())
    out["H1"] = {"claim": "int-plain: no objective progress (gain CI includes 0, or below a remedy) and cycling > 0",
                 "skill_gain": plain["skill_gain"], "cycling": plain["cycling"],
                 "no_progress": no_progress, "cycles": above(plain["cycling"]),
                 "reproduced": bool(no_progress and above(plain["cycling"]))}
    out["H2"] = {"claim": "remedies progress more than int-plain (difference CI > 0) and cycle less",
                 "skill_gain_minus_plain": gains, "cycling_minus_plain": cyc,
                 "reproduced_by": {r: bool(above(gains[r]) and cyc[r]["mean"] < 0) for r in gains}}
    out["H2"]["reproduced"] = any(out["H2"]["reproduced_by"].values())
    c1, c0, c05 = cells["ladder-c1"], cells["ladder-c0"], cells["ladder-c05"]
    out["H3"] = {"claim": "ladder-c1 collapses: difficulty slope CI < 0 and disengagement > 0.5",
                 "difficulty_slope": c1["difficulty_slope"], "disengagement": c1["disengagement"],
                 "reproduced": bool(below(c1["difficulty_slope"]) and c1["disengagement"]["mean"] > 0.5)}
    out["H4"] = {"claim": "ladder-c0 climbs: difficulty slope and skill gain CIs > 0; c0.5 in between",
                 "difficulty_slope": c0["difficulty_slope"], "skill_gain": c0["skill_gain"],
                 "c05_difficulty_slope": c05["difficulty_slope"],
                 "c05_between": bool(c1["difficulty_slope"]["mean"] <= c05["difficulty_slope"]["mean"]
                                     <= c0["difficulty_slope"]["mean"]),
                 "reproduced": bool(above(c0["difficulty_slope"]) and above(c0["skill_gain"]))}
    focus = diff_ci(per_seed["focus-plain"]["focusing"], per_seed["coo-plain"]["focusing"])
    out["H5"] = {"claim": "focus-plain focuses more than coo-plain (descriptive)", "focusing_difference": focus,
                 "reproduced": above(focus)}
    return out


def run_all(jobs: list[tuple[str, str, tuple[str, ...], int, int]], workers: int) -> list[dict[str, Any]]:
    """Run every (cell, seed) job in ``workers`` processes, printing progress every 20 runs."""
    start, runs = time.perf_counter(), []
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        for done, run in enumerate(pool.imap(run_one, jobs, chunksize=1), 1):
            runs.append(run)
            if done % 20 == 0 or done == len(jobs):
                print(f"{done}/{len(jobs)} runs, {time.perf_counter() - start:.0f} s", flush=True)
    return runs


def _iv(interval: Any) -> dict[str, float]:
    return {"mean": interval.mean, "low": interval.low, "high": interval.high, "n": interval.n}


def t_cells(per_seed: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per cell and endpoint: mean with a Student t 95% interval over seeds (round 2)."""
    from redqueen.experiments.stats import t_ci

    return {c: {k: _iv(t_ci(v)) for k, v in eps.items()} for c, eps in per_seed.items()}


def verdicts2(per_seed: dict[str, dict[str, list[float]]], cells: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Round 2's hypotheses (amendment 1): every clause with its estimate, interval and
    whether it held; Holm over the marked tests; ``reproduced`` when all clauses hold."""
    from scipy.stats import ttest_1samp

    from redqueen.experiments.stats import holm, welch_ci

    def one_sample_p(values: list[float]) -> float:
        x = np.asarray(values, dtype=float)
        if np.ptp(x) == 0:
            return 1.0 if x[0] == 0 else 0.0
        return float(ttest_1samp(x, 0.0).pvalue)

    def above(c: dict[str, float]) -> bool:
        return c["low"] > 0

    def below(c: dict[str, float]) -> bool:
        return c["high"] < 0

    remedies = ("int-hof", "int-lexicase", "int-lexicase-hof")
    gains, cyc, pvals = {}, {}, {}
    for r in remedies:
        gi, gp = welch_ci(per_seed[r]["skill_gain"], per_seed["int-plain"]["skill_gain"])
        ci_, _ = welch_ci(per_seed[r]["cycling"], per_seed["int-plain"]["cycling"])
        gains[r], cyc[r], pvals[f"H2 {r} skill gain"] = _iv(gi), _iv(ci_), gp
    pvals["H1 int-plain cycling"] = one_sample_p(per_seed["int-plain"]["cycling"])
    pvals["H4 slope"] = one_sample_p(per_seed["learn-ladder-c0"]["difficulty_slope"])
    pvals["H4 skill gain"] = one_sample_p(per_seed["learn-ladder-c0"]["skill_gain"])
    fi, fp = welch_ci(per_seed["focus-plain"]["focusing"], per_seed["coo-plain"]["focusing"])
    pvals["H5 focusing"] = fp
    rejected = holm(pvals)
    out: dict[str, Any] = {"holm": {k: {"p": pvals[k], "rejected": rejected[k]} for k in pvals}}

    plain, old = cells["int-plain"], cells["int-plain-R1"]
    clauses = {
        "int-plain cycling interval above 0": above(plain["cycling"]),
        "int-plain cycling rejected under Holm": rejected["H1 int-plain cycling"],
        "int-plain-R1 cycling interval includes 0 or mean < 0.01":
            not above(old["cycling"]) or old["cycling"]["mean"] < 0.01,
    }
    out["R2-H1"] = {"claim": "cycling arises in R2 (int-plain) and not in R1 (int-plain-R1)",
                    "cycling": plain["cycling"], "cycling_R1": old["cycling"],
                    "spread_to_noise": plain["spread_to_noise"],
                    "spread_to_noise_R1": old["spread_to_noise"],
                    "clauses": clauses, "reproduced": all(clauses.values())}
    by = {r: {"skill_gain_minus_plain": gains[r], "cycling_minus_plain": cyc[r],
              "skill_gain_rejected_under_holm": rejected[f"H2 {r} skill gain"],
              "cycling_lower": cyc[r]["mean"] < 0} for r in remedies}
    out["R2-H2"] = {"claim": "remedies progress more than int-plain (Welch, Holm) and cycle less",
                    "by_remedy": by,
                    "reproduced_by": {r: bool(v["skill_gain_rejected_under_holm"]) for r, v in by.items()}}
    out["R2-H2"]["reproduced"] = any(out["R2-H2"]["reproduced_by"].values())
    expected = {"ladder-c0": 1, "ladder-c03": 1, "ladder-c045": -1, "ladder-c1": -1}
    clauses = {f"{c} slope {'above' if sign > 0 else 'below'} 0":
               (above if sign > 0 else below)(cells[c]["difficulty_slope"]) for c, sign in expected.items()}
    out["R2-H3"] = {"claim": "implementation check, not a finding: the ladder's difficulty slope changes sign "
                             "at coupling 0.4, as the teacher reward's algebra fixes",
                    "difficulty_slope": {c: cells[c]["difficulty_slope"] for c in expected},
                    "clauses": clauses, "reproduced": all(clauses.values())}
    learn = cells["learn-ladder-c0"]
    clauses = {"slope interval above 0": above(learn["difficulty_slope"]),
               "skill gain interval above 0": above(learn["skill_gain"]),
               "slope rejected under Holm": rejected["H4 slope"],
               "skill gain rejected under Holm": rejected["H4 skill gain"],
               "mean disengagement below 0.5": learn["disengagement"]["mean"] < 0.5}
    out["R2-H4"] = {"claim": "the learnability ladder climbs (slope and skill gain > 0) with teachers tracking "
                             "students (disengagement < 0.5), a direction the reward does not fix",
                    "difficulty_slope": learn["difficulty_slope"], "skill_gain": learn["skill_gain"],
                    "disengagement": learn["disengagement"], "clauses": clauses,
                    "reproduced": all(clauses.values())}
    engaged = {c: cells[c]["disengagement"]["mean"] < 0.5 for c in ("focus-plain", "coo-plain")}
    clauses = {"focusing difference interval above 0": above(_iv(fi)),
               "rejected under Holm": rejected["H5 focusing"]}
    out["R2-H5"] = {"claim": "focus-plain focuses more than coo-plain; informative only if both are engaged",
                    "focusing_difference": _iv(fi),
                    "disengagement": {c: cells[c]["disengagement"] for c in engaged},
                    "testable": all(engaged.values()), "clauses": clauses,
                    "reproduced": all(engaged.values()) and all(clauses.values())}
    return out


def figure(path: Path, runs: list[dict[str, Any]], cells: dict[str, dict[str, dict[str, float]]],
           int_cells: tuple[str, ...] = ("int-plain", "int-hof", "int-lexicase", "int-lexicase-hof"),
           ladder_cells: tuple[str, ...] = ("ladder-c0", "ladder-c05", "ladder-c1")) -> None:
    """Four panels: intransitive skill over steps, ladder difficulty over steps, cycling and
    skill gain per cell with their CIs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 8))

    def band(ax: Any, cell: str, key: str) -> None:
        rows = np.array([r["series"][key] for r in runs if r["cell"] == cell])
        mean, sem = rows.mean(0), rows.std(0, ddof=1) / np.sqrt(len(rows)) if len(rows) > 1 else 0 * rows.mean(0)
        ax.plot(mean, label=cell)
        ax.fill_between(np.arange(len(mean)), mean - 1.96 * sem, mean + 1.96 * sem, alpha=0.2)

    for cell in int_cells:
        band(axes[0, 0], cell, "objective_skill")
    axes[0, 0].set(title="intransitive: objective skill of students", xlabel="step", ylabel="mean coordinate")
    for cell in ladder_cells:
        band(axes[0, 1], cell, "objective_difficulty")
    axes[0, 1].set(title="ladder: objective task difficulty", xlabel="step", ylabel="mean teacher difficulty")
    names = list(cells)
    for ax, key, title in ((axes[1, 0], "cycling", "cycling (cyclic triads in the CIAO matrix, last step)"),
                           (axes[1, 1], "skill_gain", "objective skill gain (last - first step)")):
        means = [cells[c][key]["mean"] for c in names]
        err = [[m - cells[c][key]["low"] for c, m in zip(names, means, strict=True)],
               [cells[c][key]["high"] - m for c, m in zip(names, means, strict=True)]]
        ax.bar(range(len(names)), means, yerr=err, capsize=3)
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
        ax.set(title=title + ", mean and 95% CI")
    for ax in axes[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round", type=int, choices=(1, 2), default=2,
                        help="1: round 1's grid (10 seeds, bootstrap CIs); 2: amendment 1's grid.")
    parser.add_argument("--seeds", type=int, default=None,
                        help="Seeds per cell (0..N-1); default: the plan's (round 1: 10; round 2: per cell).")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2, help="Processes (one CPU each).")
    parser.add_argument("--selections", nargs=2, default=("tournament", "lexicase"), metavar=("PLAIN", "REMEDY"),
                        help="The plain scheme and the remedy scheme of the grid.")
    parser.add_argument("--plugin", action="append", default=[], help="Module or file registering a scheme.")
    parser.add_argument("--out", type=Path, default=None,
                        help="Default: results/surrogate_games.json (round 1), surrogate_games_round2.json (round 2).")
    args = parser.parse_args()
    from redqueen.experiments.cli import import_plugin

    for spec in args.plugin:
        import_plugin(spec)
    selections = tuple(args.selections)
    if args.round == 1:
        spec = {c: (p, o, args.seeds or 10) for c, (p, o) in grid(selections).items()}
    else:
        spec = {c: (p, o, args.seeds or n) for c, (p, o, n) in grid2(selections).items()}
    out = args.out or RESULTS / ("surrogate_games.json" if args.round == 1 else "surrogate_games_round2.json")
    jobs = [(cell, preset, over, seed, args.steps) for cell, (preset, over, n) in spec.items()
            for seed in range(n)]
    start = time.perf_counter()
    runs = run_all(jobs, args.workers)
    wall = time.perf_counter() - start
    per_seed = {c: {k: [r["endpoints"][k] for r in runs if r["cell"] == c] for k in runs[0]["endpoints"]}
                for c in spec}
    if args.round == 1:
        cells = {c: {k: ci(v) for k, v in eps.items()} for c, eps in per_seed.items()}
        hypotheses = verdicts(per_seed, cells)
    else:
        cells = t_cells(per_seed)
        hypotheses = verdicts2(per_seed, cells)
    result = {
        "plan": "benchmarks/SURROGATE_GAMES.md" + (" (amendment 1)" if args.round == 2 else ""),
        "round": args.round,
        "seeds": {c: list(range(n)) for c, (_, _, n) in spec.items()},
        "steps": args.steps,
        "grid": {c: {"preset": p, "overrides": [*COMMON, *o]} for c, (p, o, _) in spec.items()},
        "cells": cells,
        "per_seed": per_seed,
        "hypotheses": hypotheses,
        "timing": {"wall_seconds": wall, "workers": args.workers,
                   "seconds_per_run_mean": float(np.mean([r["seconds"] for r in runs])),
                   "cpu_count": os.cpu_count(), "load_average_after": list(os.getloadavg()),
                   "platform": platform.platform()},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    if args.round == 1:
        figure(out.with_suffix(".png"), runs, cells)
    else:
        figure(out.with_suffix(".png"), runs, cells,
               int_cells=("int-plain-R1", "int-plain", "int-hof", "int-lexicase", "int-lexicase-hof"),
               ladder_cells=("ladder-c0", "ladder-c03", "ladder-c045", "ladder-c1", "learn-ladder-c0"))
    print(json.dumps({"hypotheses": {h: v["reproduced"] for h, v in hypotheses.items() if h != "holm"},
                      "timing": result["timing"]}, indent=1))


if __name__ == "__main__":
    main()
