"""Arms race: population co-evolution (``tiny``) vs single-agent self-play (``tiny-selfplay``).

Runs both presets over several seeds with the same per-adapter budget: every proposing adapter
(teacher or solo) makes the same number of proposals and every valid task gets the same number
of answers from its solver (student or the solo proposer itself); four teachers + four students
against four solo agents also spend the same total. The environments report what they actually
spent (proposals, answers, generated tokens), and the table shows it. The comparison covers
what the papers argue about: task complexity over time, the student solve rate and its
oscillation (standard deviation of step-to-step changes), valid-task share and coverage of
task space (distinct task signatures). Writes ``benchmarks/results/arms_race.json``, a markdown
table ``arms_race.md`` and a plot ``arms_race.png``.

Usage::

    python benchmarks/arms_race.py --steps 6 --seeds 0 1 2 [--set environment.tasks_per_teacher=2]

``--set`` overrides apply to both presets, so budgets stay matched.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from redqueen.experiments.build import build_environment  # noqa: E402
from redqueen.experiments.config import load_config  # noqa: E402

PRESETS = ("tiny", "tiny-selfplay")
RESULTS = Path(__file__).parent / "results"


def run_one(preset: str, seed: int, steps: int, overrides: list[str]) -> dict[str, Any]:
    """Run one preset for ``steps`` steps; returns its metric rows and a few run facts."""
    cfg = load_config(preset, [*overrides, f"seed={seed}", f"steps={steps}"])
    env = build_environment(cfg)
    rows, tasks = [], []
    start = time.perf_counter()
    try:
        for _ in range(steps):
            record = env.step()
            rows.append(record.metrics)
            tasks.extend(record.tasks)
    finally:
        env.close()
    roles = [ind.role for ind in env.population.living]
    return {
        "preset": preset,
        "seed": seed,
        "steps": steps,
        "proposers": sum(r in ("teacher", "solo") for r in roles),
        "solvers": sum(r in ("student", "solo") for r in roles),
        "seconds": time.perf_counter() - start,
        "metrics": rows,
        "task_rows": len(tasks),
    }


def _series(run: dict[str, Any], key: str) -> np.ndarray:
    return np.array([row.get(key, np.nan) for row in run["metrics"]], dtype=float)


def _solve_series(run: dict[str, Any]) -> np.ndarray:
    """Solve rate per step; NaN for steps without a single answer (no valid task to solve)."""
    solve = _series(run, "solve_rate")
    solve[_series(run, "answers") == 0] = np.nan
    return solve


def summarise(run: dict[str, Any]) -> dict[str, float]:
    """Per-run summary: means, trends, oscillation, coverage and compute spent."""
    solve = _solve_series(run)
    changes = np.diff(solve)
    changes = changes[np.isfinite(changes)]
    complexity = np.nanmean(
        np.vstack([_series(run, f"complexity/{t}") for t in ("code_o", "code_i", "code_f")]), axis=0
    )
    third = max(1, len(solve) // 3)
    steps = max(1, run["steps"])
    return {
        "solve_rate_mean": float(np.nanmean(solve)) if np.isfinite(solve).any() else float("nan"),
        "solve_rate_oscillation": float(np.std(changes)) if len(changes) else float("nan"),
        "complexity_mean": float(np.nanmean(complexity))
        if np.isfinite(complexity).any()
        else float("nan"),
        "complexity_trend": float(np.nanmean(complexity[-third:]) - np.nanmean(complexity[:third]))
        if np.isfinite(complexity[:third]).any() and np.isfinite(complexity[-third:]).any()
        else float("nan"),
        "valid_share_mean": float(np.nanmean(_series(run, "valid_share"))),
        "coverage_final": float(_series(run, "coverage")[-1]),
        "proposals_per_proposer_step": float(
            np.nansum(_series(run, "proposals")) / steps / run["proposers"]
        ),
        "answers_per_solver_step": float(
            np.nansum(_series(run, "answers")) / steps / run["solvers"]
        ),
        "tokens_per_step": float(np.nansum(_series(run, "generated_tokens")) / steps),
        "seconds_per_step": run["seconds"] / steps,
    }


def aggregate(summaries: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Mean and standard deviation over seeds of every summary field."""
    out = {}
    for key in summaries[0]:
        values = np.array([s[key] for s in summaries], dtype=float)
        out[key] = {"mean": float(np.nanmean(values)), "std": float(np.nanstd(values))}
    return out


def markdown(result: dict[str, Any]) -> str:
    """The comparison as a markdown table (mean +- std over seeds)."""
    fields = [
        ("complexity_mean", "task complexity"),
        ("complexity_trend", "complexity trend (last - first third)"),
        ("solve_rate_mean", "student solve rate"),
        ("solve_rate_oscillation", "solve-rate oscillation (std of changes)"),
        ("valid_share_mean", "valid-task share"),
        ("coverage_final", "coverage (distinct tasks)"),
        ("proposals_per_proposer_step", "proposals / proposing adapter / step"),
        ("answers_per_solver_step", "answers / solving adapter / step"),
        ("tokens_per_step", "generated tokens / step (all adapters)"),
        ("seconds_per_step", "seconds / step"),
    ]
    presets = list(result["aggregate"])
    lines = ["| metric | " + " | ".join(presets) + " |", "| --- |" + " --- |" * len(presets)]
    for key, label in fields:
        cells = [
            f"{result['aggregate'][p][key]['mean']:.3f} ± {result['aggregate'][p][key]['std']:.3f}"
            for p in presets
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    setup = result["setup"]
    lines.append("")
    lines.append(
        f"{setup['steps']} steps, seeds {setup['seeds']}, overrides {setup['overrides'] or 'none'}; "
        f"{setup['machine']}."
    )
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> None:
    """Solve rate, complexity and coverage over steps, mean over seeds, one line per preset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [
        ("solve_rate", "student solve rate"),
        ("complexity", "task complexity"),
        ("coverage", "coverage"),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for preset, runs in result["runs"].items():
        for ax, (key, label) in zip(axes, keys, strict=True):
            if key == "complexity":
                series = [
                    np.nanmean(
                        np.vstack(
                            [_series(r, f"complexity/{t}") for t in ("code_o", "code_i", "code_f")]
                        ),
                        axis=0,
                    )
                    for r in runs
                ]
            elif key == "solve_rate":
                series = [_solve_series(r) for r in runs]
            else:
                series = [_series(r, key) for r in runs]
            data = np.vstack(series)
            mean = np.nanmean(data, axis=0)
            std = np.nanstd(data, axis=0)
            x = np.arange(len(mean))
            ax.plot(x, mean, label=preset)
            ax.fill_between(x, mean - std, mean + std, alpha=0.2)
            ax.set_title(label)
            ax.set_xlabel("step")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the comparison and write JSON, markdown and a plot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], help="key=value for both presets"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    # Runs without a valid task of some type have empty series; their means are NaN on purpose.
    warnings.filterwarnings("ignore", message="Mean of empty slice")
    warnings.filterwarnings("ignore", message="Degrees of freedom")

    runs: dict[str, list[dict[str, Any]]] = {p: [] for p in PRESETS}
    for seed in args.seeds:
        for preset in PRESETS:
            run = run_one(preset, seed, args.steps, args.overrides)
            runs[preset].append(run)
            print(f"{preset} seed {seed}: {run['seconds']:.1f} s", file=sys.stderr, flush=True)
    result = {
        "setup": {
            "steps": args.steps,
            "seeds": args.seeds,
            "overrides": args.overrides,
            "machine": f"{platform.machine()} CPU, {os.cpu_count()} cores, Python {platform.python_version()}",
        },
        "per_run": {p: [summarise(r) for r in rs] for p, rs in runs.items()},
        "aggregate": {p: aggregate([summarise(r) for r in rs]) for p, rs in runs.items()},
        "runs": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "arms_race.json").write_text(json.dumps(result, indent=1, default=float))
    table = markdown(result)
    (args.out / "arms_race.md").write_text(table)
    plot(result, args.out / "arms_race.png")
    print(json.dumps({"setup": result["setup"], "aggregate": result["aggregate"]}, indent=1))
    print(table)
    return result


if __name__ == "__main__":
    main()
