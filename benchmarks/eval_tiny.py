"""tiny-coder before vs after a ``tiny`` co-evolution run, on the held-out ``code_output`` suite.

For each seed this runs ``redqueen run tiny --set seed=S steps=N`` and then evaluates the run
directory with :func:`redqueen.experiments.evaluation.evaluate_run`: the bare base model (the
"before": the ``tiny`` preset starts every adapter at PEFT's init, B = 0, which is exactly the
base model) and every living member (the "after"), all on the same held-out problems in the same
process. Ratios are population numbers over the base model's, measured in the same run.

Usage::

    python benchmarks/eval_tiny.py [--seeds 0 1 2] [--steps 8] [--limit 128]

Writes ``benchmarks/results/eval_tiny.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import fmean

ROOT = Path(__file__).resolve().parent
RESULT = ROOT / "results" / "eval_tiny.json"


def _summary(report, role: str | None) -> dict | None:
    summary = report.summary(role)
    if summary is None:
        return None
    return {
        "n_members": summary.n_members,
        "mean": summary.mean,
        "best": summary.best.pass_at_1,
        "weakest": summary.weakest.pass_at_1,
    }


def _run_tiny(seed: int, steps: int, out: Path) -> float:
    command = shutil.which("redqueen")
    argv = (
        [command]
        if command
        else [sys.executable, "-c", "from redqueen.experiments.cli import main; main()"]
    )
    argv += [
        "run",
        "tiny",
        "--out",
        str(out),
        "--no-plots",
        "--set",
        f"seed={seed}",
        "--set",
        f"steps={steps}",
    ]
    start = time.perf_counter()
    subprocess.run(argv, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark and write its JSON; returns the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--limit", type=int, default=128, help="held-out problems")
    parser.add_argument("--workdir", type=Path, default=None, help="keep run directories here")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args(argv)

    from redqueen.experiments.evaluation import evaluate_run

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="eval_tiny-"))
    rows = []
    for seed in args.seeds:
        run_dir = workdir / f"tiny-seed{seed}"
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_seconds = _run_tiny(seed, args.steps, run_dir)
        report = evaluate_run(run_dir, "code_output", limit=args.limit)
        base = report.base.pass_at_1
        students = _summary(report, "student")
        row = {
            "seed": seed,
            "run_seconds": round(run_seconds, 1),
            "eval_seconds": round(report.seconds, 1),
            "n_problems": len(report.problems),
            "base_pass_at_1": base,
            "population": _summary(report, None),
            "students": students,
            "teachers": _summary(report, "teacher"),
            "student_mean_over_base": (students["mean"] / base) if students and base else None,
            "members": {s.member: s.pass_at_1 for s in report.population},
        }
        rows.append(row)
        print(json.dumps(row), flush=True)

    def mean_of(key: str, sub: str | None = None) -> float | None:
        values = [r[key][sub] if sub else r[key] for r in rows if r[key] is not None]
        values = [v for v in values if v is not None]
        return fmean(values) if values else None

    base_mean = mean_of("base_pass_at_1")
    student_mean = mean_of("students", "mean")
    result = {
        "benchmark": "eval_tiny",
        "suite": "code_output (held-out procedural code_o, greedy pass@1)",
        "anchor": "tiny-coder without adapter (the run's starting point), same process",
        "preset": "tiny",
        "steps": args.steps,
        "seeds": rows,
        "summary": {
            "base_pass_at_1": base_mean,
            "student_mean_pass_at_1": student_mean,
            "student_best_pass_at_1": mean_of("students", "best"),
            "student_weakest_pass_at_1": mean_of("students", "weakest"),
            "teacher_mean_pass_at_1": mean_of("teachers", "mean"),
            "student_mean_over_base": (student_mean / base_mean)
            if student_mean and base_mean
            else None,
        },
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["summary"], indent=2))
    return result


if __name__ == "__main__":
    main()
