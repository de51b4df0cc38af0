"""Co-evolution against self-play at a dose that can move the endpoint (``COEVOLUTION_DOSE.md``).

Each (arm, seed) is an ordinary run directory under ``--workdir``, run with ``redqueen run``,
one at a time and interleaved by seed (seed 0 of every primary arm, then seed 1, ...). A
finished and evaluated run is skipped; a finished one is evaluated; one cut off mid-way is
continued from its last checkpoint with ``redqueen resume``. Every start and resume appends the
code version to the run's ``coevolution_dose_code.txt``. After each run the result file is
rewritten from every evaluated run, so a partial file (fewer seeds) exists at any time;
``--analyse-only`` rewrites it without running anything.

The runs train and are evaluated on one commit, :data:`PINNED`: the runner (started from any
checkout) creates a ``git worktree`` of it beside the repository (``--tree``, default
``../dose-tree``) if missing, and runs ``redqueen`` and the evaluation from there; it refuses to
start when that tree, or a persisted run's stamp, names another commit. Each finished and
evaluated run's small outputs (evaluation, config, stamp, logs the analysis reads, the solvers'
adapters) are copied into ``benchmarks/results/coevolution_dose/<run>/`` (``--keep``); a run
with such a copy counts as finished and evaluated, and the analysis reads the copy, so a fresh
clone without ``runs/`` resumes where the committed copies end.

Usage::

    nice -n 19 python benchmarks/coevolution_dose.py --workdir runs/coevolution-dose
    python benchmarks/coevolution_dose.py --workdir runs/coevolution-dose --analyse-only

Writes ``benchmarks/results/coevolution_dose.json``: top-level ``arms`` (each with ``seeds``,
``answers_per_solver`` read from the logs, per-seed and per-problem values) and ``decisions``
(estimates, t intervals, the equivalence test when the difference is null).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

from arms_race import _finished, _read_jsonl, permutation_p  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
#: arm -> (preset, the arm's own overrides); COEVOLUTION_DOSE.md, "Arms".
ARMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "coevolution_no_replacement": ("tiny", ("evolution.replace_every=0",)),
    "selfplay": ("tiny-selfplay", ()),
    "coevolution_replacement": ("tiny", ()),
}
PRIMARY = ("coevolution_no_replacement", "selfplay")
COMMON = (
    "environment.answers_per_task=16",
    "model.cpu_threads=1",
    "logging.tensorboard=false",
)
STEPS = 57
PLANNED_SEEDS = 14
FUTILITY_SEEDS = 6
EFFECT = 0.008  # nats/token, the arms' difference of interest (two-sided, TOST margin)
GATE_SESOI = 0.01  # the learning check's smallest effect, per-arm decisions
ALPHA = 0.05
CODE_FILE = "coevolution_dose_code.txt"
EVAL_FILE = "coevolution_dose_eval.json"  # dose_evaluation.EVAL_FILE
BASE_FILE = "base_reference.json"  # dose_evaluation.BASE_FILE
#: the commit every run trains and is evaluated on (COEVOLUTION_DOSE.md, "Order").
PINNED = "eb107a1"
ROOT = Path(__file__).resolve().parents[1]
KEEP = RESULTS / "coevolution_dose"
#: what the analysis reads from a run directory (with the solvers' adapters, ``population/``).
KEPT_FILES = (EVAL_FILE, "config.yaml", CODE_FILE, "tasks.jsonl", "metrics.jsonl", "lineage.csv")


# -- the logs ----------------------------------------------------------------------------------


def answers_per_solver(run_dir: Path) -> dict[str, Any]:
    """Answers each solver living at the last step sampled over the run, from the logs.

    A solver samples ``answers_per_task`` answers (the run's ``config.yaml``) for each valid
    task it was matched to (``tasks.jsonl``: ``student``, ``valid``); the run's figure is the
    mean over its living solvers. ``logged_answers`` is the sum of ``metrics.jsonl``'s
    ``answers``, a cross-check that counts every solver, living or not.
    """
    import yaml

    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    per_task = int(config["environment"]["answers_per_task"])
    with (run_dir / "lineage.csv").open(newline="") as handle:
        living = [
            r["name"]
            for r in csv.DictReader(handle)
            if not r.get("destruction_time") and r.get("role") in ("student", "solo")
        ]
    counts = dict.fromkeys(living, 0)
    for row in _read_jsonl(run_dir / "tasks.jsonl"):
        if row.get("valid") and row.get("student") in counts:
            counts[row["student"]] += per_task
    metrics = [r for r in _read_jsonl(run_dir / "metrics.jsonl") if "step" in r]
    return {
        "mean": float(np.mean(list(counts.values()))) if counts else float("nan"),
        "per_solver": counts,
        "answers_per_task": per_task,
        "logged_answers": float(sum(r.get("answers", 0) for r in metrics)),
        "steps": len(metrics),
    }


# -- statistics --------------------------------------------------------------------------------


def t_interval(values: Sequence[float], level: float = 0.95) -> dict[str, Any]:
    """Mean with a t interval (``None`` ends for fewer than two values)."""
    x = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
    n = len(x)
    mean = float(x.mean()) if n else None
    if n < 2:
        return {"mean": mean, "low": None, "high": None, "n": n}
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / np.sqrt(n))
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n}


def sign_flip_p(values: Sequence[float]) -> float:
    """Exact two-sided sign-flip p of the mean (all 2^n sign patterns)."""
    import itertools

    x = np.asarray(values, dtype=float)
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(x))))
    return float(np.mean(np.abs((signs * x).mean(1)) >= abs(x.mean()) - 1e-15))


def welch(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Difference of means (a - b): Welch t test, 95% and 90% intervals, permutation p and the
    difference detectable at 80% power from these SDs."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < 2 or len(y) < 2:
        return {"estimate": float(x.mean() - y.mean()) if len(x) and len(y) else None, "n": [len(x), len(y)]}
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = float(np.sqrt(vx + vy))
    df = float((vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))) if se > 0 else 1.0
    diff = float(x.mean() - y.mean())
    p = float(2 * stats.t.sf(abs(diff) / se, df)) if se > 0 else float(diff == 0)
    h95, h90 = (float(stats.t.ppf(q, df) * se) for q in (0.975, 0.95))
    return {
        "estimate": diff,
        "low": diff - h95,
        "high": diff + h95,
        "low90": diff - h90,
        "high90": diff + h90,
        "se": se,
        "df": df,
        "p_welch": p,
        "p_permutation": permutation_p(x, y),
        "detectable_at_80pct_power": float((stats.t.ppf(0.975, df) + stats.t.ppf(0.8, df)) * se),
        "n": [len(x), len(y)],
    }


def tost(a: Sequence[float], b: Sequence[float], margin: float = EFFECT) -> dict[str, Any]:
    """Two one-sided Welch t tests that a - b lies within +-``margin`` (alpha 0.05 each)."""
    w = welch(a, b)
    if "se" not in w:
        return {"equivalent": False, "margin": margin, "p": None}
    lower = float(stats.t.sf((w["estimate"] + margin) / w["se"], w["df"]))
    upper = float(stats.t.cdf((w["estimate"] - margin) / w["se"], w["df"]))
    p = max(lower, upper)
    return {
        "equivalent": bool(p < ALPHA),
        "margin": margin,
        "p": p,
        "p_lower": lower,
        "p_upper": upper,
        "interval90": [w["low90"], w["high90"]],
    }


def conditional_power(a: Sequence[float], b: Sequence[float], n_final: int) -> float:
    """Conditional power of the final two-sided test at ``n_final`` seeds per arm, taking the
    observed difference and pooled SD as true (Brownian-motion form, current trend)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = min(len(x), len(y))
    sd = float(np.sqrt((x.var(ddof=1) + y.var(ddof=1)) / 2))
    if sd == 0 or n >= n_final:
        return float("nan")
    z_now = (x.mean() - y.mean()) / (sd * np.sqrt(2 / n))
    t = n / n_final
    b_t, drift = z_now * np.sqrt(t), z_now / np.sqrt(t)
    z = stats.norm.ppf(1 - ALPHA / 2)
    spread = np.sqrt(1 - t)
    mean_final = b_t + drift * (1 - t)
    return float(stats.norm.sf((z - mean_final) / spread) + stats.norm.cdf((-z - mean_final) / spread))


def futility(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """The plan's one futility look at :data:`FUTILITY_SEEDS` seeds per arm (non-binding)."""
    cp = conditional_power(a, b, PLANNED_SEEDS)
    w = welch(a, b)
    stop = bool(np.isfinite(cp) and cp < 0.10 and w.get("high", np.inf) < EFFECT)
    return {"seeds_per_arm": FUTILITY_SEEDS, "conditional_power": cp, "welch": w, "stop": stop}


# -- one run's row -----------------------------------------------------------------------------


def run_row(run_dir: Path) -> dict[str, Any]:
    """Run-level endpoints from a run's evaluation and logs (solvers of age >= 1)."""
    report = json.loads((run_dir / EVAL_FILE).read_text())
    trained = [m for m in report["members"] if m["age"] >= 1]
    base = report["base"]

    def mean(key: str) -> float:
        return float(np.mean([m[key] for m in trained])) if trained else float("nan")

    metrics = [r for r in _read_jsonl(run_dir / "metrics.jsonl") if "step" in r]
    dose = answers_per_solver(run_dir)
    code = (run_dir / CODE_FILE).read_text().splitlines() if (run_dir / CODE_FILE).is_file() else []
    per_problem = {
        key: np.mean([m["per_problem"][key] for m in trained], axis=0).round(5).tolist()
        for key in ("gold_loglik_change", "random_gold_loglik_change", "sampled_correct", "answer_entropy", "greedy")
    }
    return {
        "E1": mean("e1_change"),
        "gate": float(np.mean([m["e1_change"] - m["random_e1_change"] for m in trained])),
        "random_E1": mean("random_e1_change"),
        "sampled_vs_temperature_matched_base": mean("sampled_pass_at_1")
        - base["sampled_pass_at_1_temperature_star"],
        "sampled_change": mean("sampled_pass_at_1") - base["sampled_pass_at_1"],
        "greedy_change": mean("greedy_pass_at_1") - base["greedy_pass_at_1"],
        "temperature_star": report["calibration"]["temperature_star"],
        "calibration_solver_pass_at_1": report["calibration"]["solver_pass_at_1"],
        "kl_answers": mean("kl_answers"),
        "random_kl_ratio_all_positions": float(
            np.mean([m["random_kl_all_positions"] / m["kl_all_positions"] for m in trained if m["kl_all_positions"] > 0])
        )
        if trained
        else float("nan"),
        "solvers": len(trained),
        "newborns": len(report["members"]) - len(trained),
        "answers_per_solver": dose["mean"],
        "answers_per_solver_each": dose["per_solver"],
        "logged_answers": dose["logged_answers"],
        "valid_share": float(np.mean([r.get("valid_share", np.nan) for r in metrics])),
        "tokens_generated_per_step": float(np.mean([r.get("tokens_generated", np.nan) for r in metrics])),
        "tokens_trained_per_step": float(np.mean([r.get("tokens_trained", np.nan) for r in metrics])),
        "seconds_per_step": float(np.mean([r["seconds"] for r in metrics if "seconds" in r])),
        "evaluation_seconds": report["seconds"],
        "code": code,
        "per_problem": per_problem,
    }


def analyse(rows: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    """Per-arm summaries and the plan's decisions from the evaluated runs."""
    arms: dict[str, Any] = {}
    decisions: dict[str, Any] = {}
    for arm, by_seed in rows.items():
        seeds = sorted(by_seed)
        col = {k: [by_seed[s][k] for s in seeds] for k in ("E1", "gate", "sampled_vs_temperature_matched_base", "sampled_change", "greedy_change", "temperature_star", "answers_per_solver", "valid_share", "seconds_per_step")}
        arms[arm] = {
            "seeds": seeds,
            "answers_per_solver": col["answers_per_solver"],
            "estimates": {k: t_interval(v) for k, v in col.items()},
            "per_seed": {str(s): by_seed[s] for s in seeds},
        }
        for key, value, name in (
            ("gate", GATE_SESOI, f"{arm}_learns_beyond_random_adapter"),
            ("sampled_vs_temperature_matched_base", GATE_SESOI, f"{arm}_beats_temperature_matched_base"),
        ):
            values = col[key]
            if len(values) >= 2:
                p = sign_flip_p(values)
                ci = t_interval(values)
                decisions[name] = {
                    "value": bool(p < ALPHA and ci["mean"] >= value),
                    "estimate": ci,
                    "p_sign_flip": p,
                    "smallest_effect_of_interest": value,
                    "seeds": len(values),
                }
    first, second = PRIMARY
    if len(rows.get(first, {})) >= 2 and len(rows.get(second, {})) >= 2:
        a = [rows[first][s]["E1"] for s in sorted(rows[first])]
        b = [rows[second][s]["E1"] for s in sorted(rows[second])]
        w = welch(a, b)
        significant = "p_welch" in w and w["p_welch"] < ALPHA
        decisions["coevolution_beats_selfplay"] = {"value": bool(significant and w["estimate"] > 0), **w}
        decisions["selfplay_beats_coevolution"] = {"value": bool(significant and w["estimate"] < 0)}
        equivalence = tost(a, b)
        decisions["equivalent_within_0.008"] = {"value": equivalence["equivalent"], **equivalence}
        if significant:
            outcome = "co-evolution teaches more" if w["estimate"] > 0 else "self-play teaches more"
        elif equivalence["equivalent"]:
            outcome = "equivalent within +-0.008"
        else:
            outcome = "inconclusive"
        decisions["outcome"] = outcome
        for key in ("sampled_vs_temperature_matched_base", "greedy_change", "answers_per_solver"):
            decisions[f"difference_{key}"] = welch(
                [rows[first][s][key] for s in sorted(rows[first])],
                [rows[second][s][key] for s in sorted(rows[second])],
            )
        n = min(len(a), len(b))
        if n >= FUTILITY_SEEDS:
            decisions["futility_look"] = futility(a[:FUTILITY_SEEDS], b[:FUTILITY_SEEDS])
    elif rows.get(first) and rows.get(second):
        a = [rows[first][s]["E1"] for s in sorted(rows[first])]
        b = [rows[second][s]["E1"] for s in sorted(rows[second])]
        decisions["coevolution_beats_selfplay"] = {
            "value": None,
            "estimate": float(np.mean(a) - np.mean(b)),
            "n": [len(a), len(b)],
            "note": "fewer than two seeds in an arm: no interval and no test yet",
        }
    n = min(len(rows.get(first, {})), len(rows.get(second, {})))
    planned = n >= PLANNED_SEEDS or decisions.get("futility_look", {}).get("stop", False)
    for decision in decisions.values():
        if isinstance(decision, dict):
            decision["provisional"] = not planned
    return {"arms": arms, "decisions": decisions}


# -- running -----------------------------------------------------------------------------------


def _cli() -> list[str]:
    return [sys.executable, "-c", "from redqueen.experiments.cli import main; main()"]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True).stdout.strip()


def tree_version(tree: Path) -> str:
    """``tree``'s commit, marked ``+changes`` when its ``redqueen`` has uncommitted edits."""
    commit = _git(tree, "rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+changes" if _git(tree, "status", "--porcelain", "redqueen") else "")


def stamped_versions(run_dir: Path) -> set[str]:
    """The code versions a run's stamp file names (one ``what version time`` line each)."""
    path = run_dir / CODE_FILE
    lines = path.read_text().splitlines() if path.is_file() else []
    return {line.split()[1] for line in lines if len(line.split()) >= 2}


def is_pinned(version: str) -> bool:
    """Whether a code version is :data:`PINNED` (any abbreviation) without uncommitted edits."""
    return "+" not in version and version.startswith(PINNED)


def pinned_tree(tree: Path, keep: Path = KEEP) -> Path:
    """A worktree at :data:`PINNED`, created if missing; exits with one line when it, or a
    persisted run's stamp, names another commit."""
    for run in sorted(keep.glob(f"*/{CODE_FILE}")):
        other = {v for v in stamped_versions(run.parent) if not is_pinned(v)}
        if other:
            raise SystemExit(f"coevolution_dose: {run.parent.name} ran on {sorted(other)}, not {PINNED}: not starting")
    if not (tree / ".git").exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), PINNED], check=True)
    version = tree_version(tree)
    if not is_pinned(version):
        raise SystemExit(f"coevolution_dose: {tree} is at {version}, not {PINNED}: not starting")
    return tree


def _env(tree: Path) -> dict[str, str]:
    """The environment of the runs and evaluations: ``redqueen`` imported from ``tree``."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(tree), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}


def _stamp(run_dir: Path, what: str, tree: Path) -> None:
    with (run_dir / CODE_FILE).open("a") as handle:
        handle.write(f"{what} {tree_version(tree)} {time.strftime('%Y-%m-%dT%H:%M:%S')}\n")


def persist(run_dir: Path, keep: Path) -> Path:
    """Copy what the analysis needs of an evaluated run, and its solvers' adapters, to
    ``keep/<run>``; the copy's evaluation is written last, so it marks a complete copy."""
    dest = keep / run_dir.name
    dest.mkdir(parents=True, exist_ok=True)
    report = json.loads((run_dir / EVAL_FILE).read_text())
    for member in report["members"]:
        source = run_dir / "population" / member["name"]
        if source.is_dir():
            shutil.copytree(source, dest / "population" / member["name"], dirs_exist_ok=True)
    for name in (*(n for n in KEPT_FILES if n != EVAL_FILE), EVAL_FILE):
        shutil.copy2(run_dir / name, dest / name)
    base = run_dir.parent / BASE_FILE
    if base.is_file() and not (keep / BASE_FILE).is_file():
        shutil.copy2(base, keep / BASE_FILE)
    return dest


def kept(run_dir: Path, keep: Path) -> bool:
    """Whether the run has a persisted copy: then it counts as finished and evaluated."""
    return (keep / run_dir.name / EVAL_FILE).is_file()


def run_or_resume(arm: str, seed: int, run_dir: Path, steps: int, tree: Path = ROOT) -> None:
    """Start the run, or continue it from its last checkpoint, with ``redqueen`` from ``tree``."""
    env = _env(tree)
    if (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").glob("step_*/meta.json")):
        other = {v for v in stamped_versions(run_dir) if v != tree_version(tree)}
        if other:
            raise SystemExit(f"coevolution_dose: {run_dir.name} ran on {sorted(other)}, not {tree_version(tree)}: not resuming")
        _stamp(run_dir, "resume", tree)
        subprocess.run([*_cli(), "resume", str(run_dir), "--no-plots"], check=True, env=env, cwd=tree)
        return
    if run_dir.exists():
        shutil.rmtree(run_dir)
    preset, own = ARMS[arm]
    argv = [*_cli(), "run", preset, "--out", str(run_dir), "--no-plots"]
    for item in (*COMMON, *own, f"seed={seed}", f"steps={steps}"):
        argv += ["--set", item]
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(argv, env=env, cwd=tree)
    while process.poll() is None and not (run_dir / "config.yaml").is_file():
        time.sleep(1)
    if run_dir.is_dir():
        _stamp(run_dir, "start", tree)
    if process.wait() != 0:
        raise subprocess.CalledProcessError(process.returncode, argv)


def evaluated(run_dir: Path, steps: int) -> bool:
    path = run_dir / EVAL_FILE
    last = run_dir / "checkpoints" / f"step_{steps}" / "meta.json"
    return path.is_file() and last.is_file() and path.stat().st_mtime >= last.stat().st_mtime


def jobs(arms: Sequence[str], seeds: Sequence[int]) -> list[tuple[str, int]]:
    """Primary arms interleaved by seed, then the secondary arm's seeds."""
    primary = [(arm, s) for s in seeds for arm in PRIMARY if arm in arms]
    return primary + [(arm, s) for arm in arms if arm not in PRIMARY for s in seeds]


def write(
    workdir: Path, out: Path, arms: Sequence[str], seeds: Sequence[int], steps: int, keep: Path = KEEP
) -> dict[str, Any]:
    """Rewrite ``out`` from the evaluated runs, persisting any not yet copied to ``keep`` and
    reading every evaluated run from its copy."""
    rows: dict[str, dict[int, dict[str, Any]]] = {arm: {} for arm in arms}
    in_progress: list[dict[str, Any]] = []
    for arm, seed in jobs(arms, seeds):
        run_dir = workdir / f"{arm}-seed{seed}"
        if not kept(run_dir, keep) and evaluated(run_dir, steps) and _finished(run_dir, steps):
            persist(run_dir, keep)
        if kept(run_dir, keep):
            rows[arm][seed] = run_row(keep / run_dir.name)
        elif (run_dir / "tasks.jsonl").is_file() and (run_dir / "lineage.csv").is_file():
            dose = answers_per_solver(run_dir)
            in_progress.append(
                {"arm": arm, "seed": seed, "steps_done": dose["steps"], "answers_per_solver_so_far": dose["mean"]}
            )
    result = {
        "plan": "benchmarks/COEVOLUTION_DOSE.md",
        "setup": {
            "steps": steps,
            "arms": {a: ARMS[a] for a in arms},
            "common_overrides": list(COMMON),
            "planned_seeds_per_arm": PLANNED_SEEDS,
            "effect_of_interest": EFFECT,
            "held_out_problems": 256,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        },
        **analyse(rows),
        "in_progress": in_progress,
    }
    base = workdir / BASE_FILE if (workdir / BASE_FILE).is_file() else keep / BASE_FILE
    if base.is_file():
        ref = json.loads(base.read_text())
        result["base_per_problem"] = {k: ref[k] for k in ("gold_loglik", "sampled_correct", "answer_entropy", "greedy")}
        result["base_calibration"] = {k: ref[k] for k in ("calibration_grid", "calibration_pass_at_1")}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1, default=float) + "\n")
    tmp.replace(out)
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("runs/coevolution-dose"))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(PLANNED_SEEDS)))
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--out", type=Path, default=RESULTS / "coevolution_dose.json")
    parser.add_argument("--keep", type=Path, default=KEEP, help="where evaluated runs are persisted")
    parser.add_argument("--tree", type=Path, default=ROOT.parent / "dose-tree", help=f"the worktree at {PINNED}")
    parser.add_argument("--analyse-only", action="store_true", help="only rewrite --out from the evaluated runs")
    parser.add_argument("--evaluate", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.evaluate is not None:
        from dose_evaluation import evaluate

        return evaluate(args.evaluate, args.steps, args.workdir)
    workdir = args.workdir.resolve()
    if not args.analyse_only:
        tree = pinned_tree(args.tree.resolve(), args.keep)
        if not (workdir / BASE_FILE).is_file() and (args.keep / BASE_FILE).is_file():
            workdir.mkdir(parents=True, exist_ok=True)
            shutil.copy2(args.keep / BASE_FILE, workdir / BASE_FILE)
        look = write(workdir, args.out, args.arms, args.seeds, args.steps, args.keep)["decisions"].get("futility_look")
        stopped = bool(look and look["stop"])
        for arm, seed in jobs(args.arms, args.seeds):
            if stopped and arm in PRIMARY:
                continue
            run_dir = workdir / f"{arm}-seed{seed}"
            if kept(run_dir, args.keep):
                continue
            if not _finished(run_dir, args.steps):
                print(f"coevolution_dose: {arm} seed {seed}: running", file=sys.stderr, flush=True)
                run_or_resume(arm, seed, run_dir, args.steps, tree)
            if not evaluated(run_dir, args.steps):
                print(f"coevolution_dose: {arm} seed {seed}: evaluating", file=sys.stderr, flush=True)
                script = tree / "benchmarks" / "coevolution_dose.py"
                subprocess.run(
                    [sys.executable, str(script), "--evaluate", str(run_dir), "--steps", str(args.steps), "--workdir", str(workdir)],
                    check=True,
                    env=_env(tree),
                    cwd=tree,
                )
            persist(run_dir, args.keep)
            result = write(workdir, args.out, args.arms, args.seeds, args.steps, args.keep)
            look = result["decisions"].get("futility_look")
            stopped = bool(look and look["stop"])
    result = write(workdir, args.out, args.arms, args.seeds, args.steps, args.keep)
    print(json.dumps({k: v.get("value", v) if isinstance(v, dict) else v for k, v in result["decisions"].items()}, indent=1))
    return result


if __name__ == "__main__":
    main()
