"""Arms race: the pre-registered experiment of ``benchmarks/ARMS_RACE.md``.

Four conditions over the same seeds — ``population`` (``tiny``), ``selfplay`` (``tiny-selfplay``,
compute-matched), ``lr0`` (``tiny`` with ``learner.lr=0``) and ``no_replacement`` (``tiny`` with
``evolution.replace_every=0``) — each run as an ordinary run directory with ``redqueen run``,
then evaluated on the held-out ``code_output`` suite. Endpoints, hypotheses and the analysis
(95% percentile bootstrap CIs over seeds with ``scipy.stats.bootstrap``; two-sample bootstrap
for differences) are the ones fixed in ``ARMS_RACE.md``; nothing here may change them.

Usage::

    python benchmarks/arms_race.py --steps 24 --seeds 0 1 2 3 4 --parallel 2 --workdir runs/arms \
        --set learner.lr=3e-4
    python benchmarks/arms_race.py --analyse-only --workdir runs/arms --steps 24 \
        --seeds 0 1 2 3 4 --reuse-evaluations

Writes ``benchmarks/results/arms_race.json`` (top-level ``seeds``; per-seed values, per-endpoint
estimates and CIs, per-condition compute) and ``arms_race.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

RESULTS = Path(__file__).parent / "results"

#: condition -> (preset, overrides); ARMS_RACE.md "Conditions".
CONDITIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "population": ("tiny", ()),
    "selfplay": ("tiny-selfplay", ()),
    "lr0": ("tiny", ("learner.lr=0",)),
    "no_replacement": ("tiny", ("evolution.replace_every=0",)),
}

#: hypothesis -> (endpoint, condition, comparison condition or None, predicted sign).
HYPOTHESES: dict[str, list[tuple[str, str, str | None, int]]] = {
    "H1": [("L1", "population", "lr0", +1)],
    "H2": [("E1", "population", None, +1), ("E1", "population", "selfplay", +1)],
    "H3": [("E2", "population", None, -1), ("E2", "population", "selfplay", -1)],
    "H4": [
        ("E3_variance", "population", "selfplay", +1),
        ("E3_saturation", "population", "selfplay", -1),
    ],
    "H5": [("E4", "population", "selfplay", +1)],
    "H6": [
        ("E1", "population", "no_replacement", +1),
        ("E4", "population", "no_replacement", +1),
        ("L1", "population", "no_replacement", +1),
        ("E2", "population", "no_replacement", -1),
    ],
}

RESAMPLES = 10_000


# ARMS_RACE.md's smallest effects of interest for the "refuted at this power" rule.
SMALLEST_EFFECTS = {"E1": 0.5, "E2": -0.005}

#: Amendment of 2026-11-26: the continuous learning endpoint L1c (held-out gold log-likelihood
#: change, nats per token), its smallest effect of interest and the solver roles it averages.
L1C_SESOI = 0.01
SOLVER_ROLES = ("student", "solo")
#: Exact permutation tests enumerate every split up to this many; beyond, seeded random splits.
EXACT_SPLITS = 200_000


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _run(condition: str, seed: int, steps: int, out: Path, common: Sequence[str] = ()) -> float:
    """One condition and seed as a normal run directory; returns its wall-clock seconds.
    ``common`` overrides come first, so a condition's own (``learner.lr=0``) win."""
    preset, overrides = CONDITIONS[condition]
    argv = [
        sys.executable,
        "-c",
        "from redqueen.experiments.cli import main; main()",
        "run",
        preset,
        "--out",
        str(out),
        "--no-plots",
    ]
    for item in (
        *common,
        *overrides,
        f"seed={seed}",
        f"steps={steps}",
        "logging.tensorboard=false",
    ):
        argv += ["--set", item]
    if out.exists():
        shutil.rmtree(out)
    start = time.perf_counter()
    subprocess.run(argv, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return time.perf_counter() - start


def _evaluate_in_subprocess(out: Path, steps: int) -> None:
    """:func:`evaluate_members` for one finished run, in a process of its own (one thread)."""
    argv = [sys.executable, __file__, "--evaluate-members", str(out), "--steps", str(steps)]
    subprocess.run(argv, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _saved_members(out: Path, steps: int) -> dict[str, Any] | None:
    """The run's member evaluation when it postdates the run's last checkpoint, else None."""
    path = out / "arms_race_members.json"
    last = out / "checkpoints" / f"step_{steps}" / "meta.json"
    if not path.is_file() or not last.is_file() or path.stat().st_mtime < last.stat().st_mtime:
        return None
    report = json.loads(path.read_text())
    return report if report.get("steps") == steps else None


def _code_version() -> str:
    """The commit the package ran from, marked ``+changes`` when its tree had uncommitted edits."""
    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "redqueen") else "")


def _finished(out: Path, steps: int) -> bool:
    """Whether a run directory reached ``steps``: its last checkpoint and every metrics row."""
    if not (out / "checkpoints" / f"step_{steps}" / "meta.json").is_file():
        return False
    rows = [r for r in _read_jsonl(out / "metrics.jsonl") if "step" in r]
    return len(rows) == steps


def _saved_evaluation(out: Path, steps: int, limit: int) -> Any:
    """The run's own held-out evaluation, when it covers ``limit`` problems and postdates the
    run's last checkpoint; else None."""
    from redqueen.experiments.evaluation import EvalReport

    path = out / "eval_code_output.json"
    last = out / "checkpoints" / f"step_{steps}" / "meta.json"
    if not path.is_file() or not last.is_file() or path.stat().st_mtime < last.stat().st_mtime:
        return None
    report = EvalReport.load(path)
    return report if len(report.problems) == limit else None


def _slope(values: Sequence[float]) -> float:
    """OLS slope of values over their index, skipping missing steps."""
    y = np.asarray(values, dtype=float)
    x = np.arange(len(y), dtype=float)
    keep = np.isfinite(y)
    if keep.sum() < 3:
        return float("nan")
    return float(np.polyfit(x[keep], y[keep], 1)[0])


def _per_step(tasks: list[dict[str, Any]], key: str, steps: int) -> list[float]:
    """Mean of a valid-task column per step (NaN for a step without a valid task)."""
    out = []
    for step in range(1, steps + 1):
        values = [
            t[key]
            for t in tasks
            if t.get("step") == step and t.get("valid") and t.get(key) is not None
        ]
        out.append(float(np.mean(values)) if values else float("nan"))
    return out


def endpoints(run_dir: Path, steps: int, eval_report: Any) -> dict[str, float]:
    """Every endpoint of ARMS_RACE.md for one run directory."""
    metrics = _read_jsonl(run_dir / "metrics.jsonl")
    tasks = _read_jsonl(run_dir / "tasks.jsonl")
    solve = np.array(
        [row.get("solve_rate", np.nan) if row.get("answers", 1) else np.nan for row in metrics],
        dtype=float,
    )
    x = np.arange(len(solve), dtype=float)
    keep = np.isfinite(solve)
    if keep.sum() >= 3:
        fit = np.polyval(np.polyfit(x[keep], solve[keep], 1), x[keep])
        variance = float(np.var(solve[keep] - fit))
    else:
        variance = float("nan")
    saturation = (
        float(np.mean((solve[keep] <= 0.1) | (solve[keep] >= 0.9))) if keep.any() else float("nan")
    )
    last_third = metrics[-max(1, len(metrics) // 3) :]
    solvers = (
        [s.pass_at_1 for s in eval_report.population if s.role in SOLVER_ROLES]
        if eval_report is not None
        else []
    )
    return {
        "L1": float(np.mean(solvers)) - eval_report.base.pass_at_1 if solvers else float("nan"),
        "L2": float(metrics[-1].get("kl_from_base", np.nan)),
        "E1": _slope(_per_step(tasks, "ast_nodes", steps)),
        "E2": _slope(_per_step(tasks, "base_solve_rate", steps)),
        "E3_variance": variance,
        "E3_saturation": saturation,
        "E4": float(metrics[-1].get("coverage_cells", np.nan)) / max(1, len(metrics)),
        "E5": float(np.nanmean([row.get("valid_share", np.nan) for row in last_third])),
        "missing_steps": int((~keep).sum()),
        "tokens_generated_per_step": float(
            np.nanmean([row.get("tokens_generated", np.nan) for row in metrics])
        ),
        "tokens_trained_per_step": float(
            np.nanmean([row.get("tokens_trained", np.nan) for row in metrics])
        ),
    }


def _ci(values: Sequence[float], seed: int) -> dict[str, float]:
    """Mean over seeds with a 95% percentile bootstrap CI."""
    data = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
    if len(data) < 2 or np.ptp(data) == 0:
        mean = float(data.mean()) if len(data) else float("nan")
        return {"estimate": mean, "low": mean, "high": mean, "n": len(data)}
    res = stats.bootstrap(
        (data,),
        np.mean,
        n_resamples=RESAMPLES,
        method="percentile",
        confidence_level=0.95,
        random_state=np.random.default_rng(seed),
    )
    return {
        "estimate": float(data.mean()),
        "low": float(res.confidence_interval.low),
        "high": float(res.confidence_interval.high),
        "n": len(data),
    }


def _difference_ci(a: Sequence[float], b: Sequence[float], seed: int) -> dict[str, float]:
    """Difference of means (a - b), seeds resampled independently within each condition."""
    x = np.asarray([v for v in a if np.isfinite(v)], dtype=float)
    y = np.asarray([v for v in b if np.isfinite(v)], dtype=float)
    if len(x) < 2 or len(y) < 2:
        return {
            "estimate": float("nan"),
            "low": float("nan"),
            "high": float("nan"),
            "p_mannwhitney": float("nan"),
        }
    rng = np.random.default_rng(seed)
    draws = rng.choice(x, (RESAMPLES, len(x))).mean(axis=1) - rng.choice(
        y, (RESAMPLES, len(y))
    ).mean(axis=1)
    low, high = np.percentile(draws, [2.5, 97.5])
    p = stats.mannwhitneyu(x, y, alternative="two-sided").pvalue
    return {
        "estimate": float(x.mean() - y.mean()),
        "low": float(low),
        "high": float(high),
        "p_mannwhitney": float(p),
    }


def evaluate_members(run_dir: Path, steps: int) -> dict[str, Any]:
    """L1c and its companions for every living solver of a run, each with its age.

    With the learning check's instruments (``learning_check.Probe``: the ``tiny`` learner's
    log-probabilities, the first 96 frozen ``code_output`` problems, the 64 reference tasks):
    per solver (students, solo agents), the change from the base model of the held-out gold
    answer's mean per-token log-likelihood (``e1_change``), of greedy pass@1 and of sampled
    pass@1 (8 answers at temperature 1), and its exact KL from the base model; its age is
    ``steps`` minus the step it was born at (``lineage.csv``'s ``origin_time``). Writes
    ``arms_race_members.json`` into the run directory and returns its contents.
    """
    import csv

    from learning_check import Probe, held_out_tasks, references

    from redqueen.engine import exact_kl_from_base
    from redqueen.genomes import LoRAGenome
    from redqueen.verifiers import Executor

    with (run_dir / "lineage.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    living = [
        r
        for r in rows
        if not r.get("destruction_time")
        and r.get("role") in SOLVER_ROLES
        and (run_dir / "population" / r["name"] / "adapter_config.json").is_file()
    ]
    torch_threads = int(os.environ.get("ARMS_RACE_EVAL_THREADS", "1"))
    import torch

    torch.set_num_threads(torch_threads)
    with Executor() as executor:
        probe = Probe(0, executor)
        held = held_out_tasks()
        gold = probe.gold(held)
        refs = references(probe)
        base_ll = float(np.mean(probe.gold_loglik(None, gold)))
        base_greedy = float(np.mean(probe.greedy(None, held)))
        base_sampled = float(probe.correct(None, held, 8, seed=99).mean())
        members = []
        for row in living:
            name = row["name"]
            probe.host.set_adapter(name, LoRAGenome.from_peft(run_dir / "population" / name))
            members.append(
                {
                    "name": name,
                    "role": row["role"],
                    "age": steps - int(float(row.get("origin_time") or 0)),
                    "operator": row.get("operator") or None,
                    "e1_change": float(np.mean(probe.gold_loglik(name, gold))) - base_ll,
                    "greedy_change": float(np.mean(probe.greedy(name, held))) - base_greedy,
                    "sampled_change": float(probe.correct(name, held, 8, seed=99).mean())
                    - base_sampled,
                    "exact_kl": float(exact_kl_from_base(probe.host, name, refs)),
                }
            )
            probe.host.remove_adapter(name)
    report = {
        "steps": steps,
        "base": {"gold_loglik": base_ll, "greedy": base_greedy, "sampled": base_sampled},
        "members": members,
    }
    (run_dir / "arms_race_members.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def member_endpoints(report: dict[str, Any]) -> dict[str, float]:
    """Run-level means over the solvers that have trained (age >= 1) of one member report."""
    trained = [m for m in report["members"] if m["age"] >= 1]

    def mean(key: str) -> float:
        return float(np.mean([m[key] for m in trained])) if trained else float("nan")

    return {
        "L1c": mean("e1_change"),
        "L1_greedy": mean("greedy_change"),
        "L1_sampled": mean("sampled_change"),
        "kl_exact": mean("exact_kl"),
        "newborns": float(len(report["members"]) - len(trained)),
    }


def _t_ci(values: Sequence[float], seed: int = 0) -> dict[str, float]:
    """Mean over seeds with a 95% t interval."""
    data = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
    n = len(data)
    mean = float(data.mean()) if n else float("nan")
    if n < 2:
        return {"estimate": mean, "low": mean, "high": mean, "n": n}
    half = float(stats.t.ppf(0.975, n - 1) * data.std(ddof=1) / np.sqrt(n))
    return {"estimate": mean, "low": mean - half, "high": mean + half, "n": n}


def permutation_p(x: np.ndarray, y: np.ndarray, seed: int = 0) -> float:
    """Two-sided permutation p of the difference of means: every split of the pooled seeds
    into groups of the two sizes when there are at most :data:`EXACT_SPLITS`, else that many
    seeded random splits."""
    import itertools
    import math

    pooled = np.concatenate([x, y])
    observed = abs(x.mean() - y.mean())
    total, n = len(pooled), len(x)
    if math.comb(total, n) <= EXACT_SPLITS:
        picks = np.array(list(itertools.combinations(range(total), n)))
    else:
        rng = np.random.default_rng(seed)
        picks = np.argsort(rng.random((EXACT_SPLITS, total)), axis=1)[:, :n]
    chosen = np.zeros((len(picks), total), dtype=bool)
    np.put_along_axis(chosen, picks, True, axis=1)
    first = (chosen * pooled).sum(1) / n
    second = (~chosen * pooled).sum(1) / (total - n)
    return float(np.mean(np.abs(first - second) >= observed - 1e-15))


def _welch_ci(a: Sequence[float], b: Sequence[float], seed: int) -> dict[str, float]:
    """Difference of means (a - b) with a 95% Welch t interval and a permutation p."""
    x = np.asarray([v for v in a if np.isfinite(v)], dtype=float)
    y = np.asarray([v for v in b if np.isfinite(v)], dtype=float)
    if len(x) < 2 or len(y) < 2:
        nan = float("nan")
        return {"estimate": nan, "low": nan, "high": nan, "p_permutation": nan}
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = float(np.sqrt(vx + vy))
    df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1)) if se > 0 else 1.0
    half = float(stats.t.ppf(0.975, df) * se)
    diff = float(x.mean() - y.mean())
    # The difference a two-sample t test (alpha 0.05) detects with 80% power at these sds.
    power80 = float((stats.t.ppf(0.975, df) + stats.t.ppf(0.8, df)) * se)
    return {
        "estimate": diff,
        "low": diff - half,
        "high": diff + half,
        "df": float(df),
        "p_permutation": permutation_p(x, y, seed),
        "detectable_at_80pct_power": power80,
    }


def analyse(
    per_seed: dict[str, dict[int, dict[str, float]]], seed: int = 0, method: str = "bootstrap"
) -> dict[str, Any]:
    """Per-condition CIs, per-hypothesis verdicts, following ARMS_RACE.md's decision rules.

    ``method="bootstrap"``: the original plan's percentile bootstrap. ``method="t"``: the
    amendment of 2026-11-26: t intervals per condition, Welch t intervals and permutation
    p-values for differences, and H1c (L1c, population minus lr0) as the learning gate:
    supported when the permutation p is below 0.05 and the difference is at least
    :data:`L1C_SESOI`.
    """
    names = sorted({k for runs in per_seed.values() for row in runs.values() for k in row})
    one, two = (_t_ci, _welch_ci) if method == "t" else (_ci, _difference_ci)
    hypotheses = dict(HYPOTHESES)
    if method == "t":
        hypotheses["H1c"] = [("L1c", "population", "lr0", +1)]

    def column(cond: str, key: str) -> list[float]:
        return [row.get(key, float("nan")) for row in per_seed[cond].values()]

    estimates = {cond: {key: one(column(cond, key), seed) for key in names} for cond in per_seed}
    verdicts: dict[str, Any] = {}
    for name, checks in hypotheses.items():
        parts, missing = [], 0
        for endpoint, cond, other, sign in checks:
            if cond not in per_seed or (other and other not in per_seed) or endpoint not in names:
                missing += 1  # a condition not run (yet): the hypothesis stays undecided
                continue
            ci = (
                two(column(cond, endpoint), column(other, endpoint), seed)
                if other
                else estimates[cond][endpoint]
            )
            supported = (ci["low"] > 0) if sign > 0 else (ci["high"] < 0)
            if name == "H1c":
                supported = ci["p_permutation"] < 0.05 and ci["estimate"] >= L1C_SESOI
            parts.append(
                {
                    "endpoint": endpoint,
                    "condition": cond,
                    "versus": other,
                    "predicted_sign": sign,
                    **ci,
                    "supported": bool(supported),
                }
            )
        verdicts[name] = {
            "checks": parts,
            "supported": bool(parts) and not missing and all(p["supported"] for p in parts),
            "complete": not missing,
        }
    gate = "H1c" if method == "t" else "H1"
    learned = verdicts.get(gate, {}).get("supported", False)
    population = estimates.get("population", {})
    valid = population.get("E5", {}).get("estimate", float("nan"))
    if learned and "selfplay" not in per_seed:
        summary = (
            f"learning seen ({gate} supported); the arms-race hypotheses need the conditions "
            "not yet run (selfplay, no_replacement)"
        )
    elif not learned:
        summary = f"inner loop did not measurably learn ({gate} not supported): arms-race endpoints not interpreted"
    elif (
        verdicts["H2"]["supported"]
        and verdicts["H3"]["supported"]
        and "selfplay" in per_seed
        and valid >= 0.5
    ):
        summary = "arms race seen (H2 and H3 supported, valid share >= 0.5)"
    elif all(
        population.get(endpoint, {}).get("low", np.nan) <= 0 <= population[endpoint]["high"]
        and population[endpoint]["high"] - population[endpoint]["low"] < abs(effect)
        for endpoint, effect in SMALLEST_EFFECTS.items()
    ):
        summary = "arms race refuted at this power (E1 and E2 CIs include zero and are narrower than the smallest effects)"
    else:
        summary = "inconclusive at this power (see the CIs)"
    return {"estimates": estimates, "hypotheses": verdicts, "summary": summary, "method": method}


def plot(per_run_series: dict[str, list[dict[str, list[float]]]], path: Path) -> None:
    """Mean over seeds per condition: complexity, base solve rate, student solve rate, coverage."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [
        ("ast_nodes", "valid-task AST nodes"),
        ("base_solve_rate", "base-model solve rate of tasks"),
        ("solve_rate", "student solve rate"),
        ("coverage_cells", "coverage cells"),
    ]
    fig, axes = plt.subplots(1, len(keys), figsize=(16, 3.6))
    for cond, runs in per_run_series.items():
        for ax, (key, label) in zip(axes, keys, strict=True):
            data = np.vstack([r[key] for r in runs])
            mean = np.nanmean(data, axis=0)
            spread = np.nanstd(data, axis=0)
            x = np.arange(1, len(mean) + 1)
            ax.plot(x, mean, label=cond)
            ax.fill_between(x, mean - spread, mean + spread, alpha=0.15)
            ax.set_title(label)
            ax.set_xlabel("step")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


#: Endpoints drawn by :func:`plot_endpoints`, with their axis labels.
ENDPOINT_PANELS = (
    ("L1", "L1 held-out pass@1 change"),
    ("E1", "E1 AST nodes / step"),
    ("E2", "E2 base solve rate / step"),
    ("E3_variance", "E3 detrended solve variance"),
    ("E3_saturation", "E3 saturated share"),
    ("E4", "E4 coverage cells / step"),
)


def _seed_panel(ax: Any, result: dict[str, Any], key: str, conditions: list[str]) -> None:
    """One endpoint per condition: a grey dot per seed, the mean with its 95% interval."""
    for x, cond in enumerate(conditions):
        values = [row[key] for row in result["per_seed"][cond].values() if key in row]
        jitter = np.linspace(-0.12, 0.12, len(values)) if len(values) > 1 else [0.0]
        ax.plot(x + np.asarray(jitter), values, "o", color="0.6", markersize=3)
        est = result["estimates"].get(cond, {}).get(key)
        if est is not None:
            ax.errorbar(
                [x + 0.3],
                [est["estimate"]],
                fmt="s",
                color=f"C{x}",
                markersize=5,
                yerr=[[est["estimate"] - est["low"]], [est["high"] - est["estimate"]]],
                capsize=3,
            )


def plot_endpoints(result: dict[str, Any], path: Path) -> None:
    """Each endpoint per condition: one dot per seed, the mean with its 95% bootstrap CI."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    conditions = list(result["per_seed"])
    fig, axes = plt.subplots(1, len(ENDPOINT_PANELS), figsize=(3.0 * len(ENDPOINT_PANELS), 3.4))
    for ax, (key, label) in zip(axes, ENDPOINT_PANELS, strict=True):
        _seed_panel(ax, result, key, conditions)
        ax.axhline(0.0, color="0.8", linewidth=0.8, zorder=0)
        ax.set_xticks(range(len(conditions)), conditions, rotation=30, ha="right", fontsize=8)
        ax.set_title(label, fontsize=9)
    seeds = ", ".join(str(s) for s in result.get("seeds", []))
    fig.suptitle(
        f"arms race endpoints (seeds {seeds}; grey: per seed, square: mean, 95% CI)", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_members(result: dict[str, Any], path: Path) -> None:
    """Every evaluated solver's held-out gold log-likelihood change against its age, and each
    condition's L1c per seed with its mean and 95% interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    conditions = list(result["members"])
    for i, cond in enumerate(conditions):
        pairs = [
            (m["age"], m["e1_change"])
            for report in result["members"][cond].values()
            for m in report["members"]
        ]
        if pairs:
            ages, changes = zip(*pairs, strict=True)
            jitter = (i - (len(conditions) - 1) / 2) * 0.15
            left.plot(np.asarray(ages) + jitter, changes, "o", ms=3, color=f"C{i}", label=cond)
    _seed_panel(right, result, "L1c", conditions)
    for ax in (left, right):
        ax.axhline(0.0, color="0.8", linewidth=0.8, zorder=0)
    left.set_xlabel("age at the last step (steps since birth)")
    left.set_ylabel("held-out gold log-likelihood change (nats/token)")
    left.legend(fontsize=8)
    left.set_title("every living solver", fontsize=9)
    right.set_xticks(range(len(conditions)), conditions)
    right.set_title("L1c per seed (grey), mean and 95% t interval", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _series(run_dir: Path, steps: int) -> dict[str, list[float]]:
    metrics = _read_jsonl(run_dir / "metrics.jsonl")
    tasks = _read_jsonl(run_dir / "tasks.jsonl")
    return {
        "ast_nodes": _per_step(tasks, "ast_nodes", steps),
        "base_solve_rate": _per_step(tasks, "base_solve_rate", steps),
        "solve_rate": [float(row.get("solve_rate", np.nan)) for row in metrics],
        "coverage_cells": [float(row.get("coverage_cells", np.nan)) for row in metrics],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run (or re-analyse) the experiment and write its JSON and figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--conditions", nargs="+", default=list(CONDITIONS), choices=list(CONDITIONS)
    )
    parser.add_argument("--parallel", type=int, default=1, help="runs at a time")
    parser.add_argument("--workdir", type=Path, default=Path("runs/arms-race"))
    parser.add_argument(
        "--analyse-only", action="store_true", help="reuse the run directories in --workdir"
    )
    parser.add_argument("--limit", type=int, default=96, help="held-out code_output problems")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="arms_race", help="stem of the result files")
    parser.add_argument(
        "--set", dest="common", action="append", default=[], help="override for every condition"
    )
    parser.add_argument(
        "--reuse",
        nargs="*",
        default=[],
        choices=list(CONDITIONS),
        help="conditions whose run directories in --workdir are kept, not rerun",
    )
    parser.add_argument(
        "--reuse-evaluations",
        action="store_true",
        help="score a run from its own eval_code_output.json when that file covers --limit "
        "problems and is newer than the run's last checkpoint (greedy evaluation is "
        "deterministic, so this only saves time)",
    )
    parser.add_argument(
        "--keep-finished",
        action="store_true",
        help="keep run directories in --workdir that already reached --steps (a checkpoint at "
        "the last step and one metrics row per step); rerun the others",
    )
    parser.add_argument(
        "--replot",
        action="store_true",
        help="only redraw <name>_endpoints.png from the existing <name>.json in --out (no runs)",
    )
    parser.add_argument(
        "--members",
        action="store_true",
        help="amendment of 2026-11-26: evaluate every living solver with its age (L1c and "
        "companions, arms_race_members.json in each run) right after its run, instead of the "
        "suite's greedy evaluation",
    )
    parser.add_argument(
        "--stats",
        choices=("bootstrap", "t"),
        default="bootstrap",
        help="bootstrap: the original plan; t: the amendment of 2026-11-26 (t intervals, "
        "Welch t and permutation tests, H1c as the learning gate)",
    )
    parser.add_argument("--evaluate-members", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.evaluate_members is not None:
        return evaluate_members(args.evaluate_members, args.steps)
    if args.replot:
        saved = json.loads((args.out / f"{args.name}.json").read_text())
        plot_endpoints(saved, args.out / f"{args.name}_endpoints.png")
        return saved

    jobs = [(c, s, args.workdir / f"{c}-seed{s}") for c in args.conditions for s in args.seeds]
    seconds: dict[str, float] = {}
    to_run = [
        job
        for job in jobs
        if job[0] not in args.reuse and not (args.keep_finished and _finished(job[2], args.steps))
    ]

    def job(j: tuple[str, int, Path]) -> float:
        took = _run(j[0], j[1], args.steps, j[2], args.common)
        (j[2] / "arms_race_code.txt").write_text(_code_version() + "\n")
        if args.members:
            _evaluate_in_subprocess(j[2], args.steps)
        return took

    if not args.analyse_only:
        with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
            for (cond, seed, out), took in zip(to_run, pool.map(job, to_run), strict=True):
                seconds[out.name] = took
                print(f"{cond} seed {seed}: {took:.0f} s", file=sys.stderr, flush=True)

    from redqueen.experiments.evaluation import evaluate_run

    per_seed: dict[str, dict[int, dict[str, float]]] = {c: {} for c in args.conditions}
    series: dict[str, list[dict[str, list[float]]]] = {c: [] for c in args.conditions}
    members: dict[str, dict[str, Any]] = {c: {} for c in args.conditions}
    for cond, seed, out in jobs:
        if args.members:
            report = None
            saved = _saved_members(out, args.steps) or evaluate_members(out, args.steps)
            members[cond][str(seed)] = saved
        else:
            report = (
                _saved_evaluation(out, args.steps, args.limit) if args.reuse_evaluations else None
            )
            if report is None:
                report = evaluate_run(out, "code_output", limit=args.limit)
        row = endpoints(out, args.steps, report)
        if args.members:
            row.update(member_endpoints(members[cond][str(seed)]))
            code = out / "arms_race_code.txt"
            members[cond][str(seed)]["code"] = code.read_text().strip() if code.is_file() else None
        logged = [r["seconds"] for r in _read_jsonl(out / "metrics.jsonl") if "seconds" in r]
        if logged:  # the run's own step timer; wall clock when the run was timed here
            row["seconds_per_step"] = float(np.mean(logged))
        if out.name in seconds:
            row["wall_seconds_per_step"] = seconds[out.name] / args.steps
        per_seed[cond][seed] = row
        series[cond].append(_series(out, args.steps))
    result = {
        "seeds": args.seeds,
        "plan": "benchmarks/ARMS_RACE.md",
        "setup": {
            "steps": args.steps,
            "conditions": {c: CONDITIONS[c] for c in args.conditions},
            "common_overrides": args.common,
            "reused": args.reuse,
            "held_out_problems": args.limit,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        },
        "per_seed": {c: {str(s): v for s, v in rows.items()} for c, rows in per_seed.items()},
        **analyse(per_seed, method=args.stats),
    }
    if args.members:
        result["members"] = members
        result["setup"]["endpoint_instruments"] = "benchmarks/learning_check.py (Probe)"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=1, default=float) + "\n")
    plot(series, args.out / f"{args.name}.png")
    plot_endpoints(result, args.out / f"{args.name}_endpoints.png")
    if args.members:
        plot_members(result, args.out / f"{args.name}_members.png")
    print(
        json.dumps(
            {
                "summary": result["summary"],
                "hypotheses": {k: v["supported"] for k, v in result["hypotheses"].items()},
            },
            indent=1,
        )
    )
    return result


if __name__ == "__main__":
    main()
