"""``redqueen eval``: benchmark an evolved population from the command line.

Register with ``app.command("eval")(eval_command)``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from redqueen._registry import UnknownNameError
from redqueen.experiments.evaluation._compare import comparison_table, split_baselines
from redqueen.experiments.evaluation._evaluate import evaluate_run
from redqueen.experiments.evaluation._report import across_runs
from redqueen.experiments.evaluation._suite import SUITES
from redqueen.experiments.rundir import RunDirectoryError


def _fail(message: str) -> typer.Exit:
    print(f"error: {message}", file=sys.stderr)
    return typer.Exit(2)


def eval_command(
    run_dirs: list[Path] = typer.Argument(
        ..., help="Run directories (config.yaml and population/); several runs (seeds) add a CI over runs."
    ),
    benchmark: str = typer.Option("humaneval", "--benchmark", "-b", help="Benchmark suite name."),
    baseline: list[Path] | None = typer.Option(
        None,
        "--baseline",
        help="A self-play run directory or an exported adapter folder (repeatable).",
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N problems."),
    device: str = typer.Option("cpu", "--device", help="Torch device for generation."),
    batch_size: int | None = typer.Option(
        None, "--batch-size", min=1, help="Rows per generation call (default: the host's)."
    ),
    workers: int | None = typer.Option(None, "--workers", min=1, help="Sandbox worker processes."),
    cpu_threads: int | None = typer.Option(
        None,
        "--cpu-threads",
        min=1,
        help="Torch CPU threads (default: the run's model.cpu_threads).",
    ),
) -> None:
    """Greedy pass@1 of every living member, the base model and baselines, with bootstrap CIs;
    writes eval_<benchmark>.json/.md into each run directory."""
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise _fail(f"run directory {run_dir} does not exist")
    if benchmark not in SUITES:
        raise _fail(f"unknown benchmark {benchmark!r} (known: {', '.join(sorted(SUITES))})")
    baselines = list(baseline or [])
    for path in baselines:
        if not path.exists():
            raise _fail(f"baseline {path} does not exist")
    reports = []
    for run_dir in run_dirs:
        try:
            report = evaluate_run(
                run_dir,
                benchmark,
                baselines=baselines,
                limit=limit,
                device=device,
                batch_size=batch_size,
                workers=workers,
                cpu_threads=cpu_threads,
            )
        except (RunDirectoryError, UnknownNameError, OSError, ImportError, ValueError) as error:
            # Bad input (unreadable run, adapter or model files, missing optional package): one line.
            raise _fail(str(error).splitlines()[0] if str(error) else type(error).__name__) from None
        reports.append(report)
        print(report.to_markdown())
        if report.baselines:
            print(comparison_table([split_baselines(report)]))
        print(f"wrote {run_dir / f'eval_{benchmark}.json'} and {run_dir / f'eval_{benchmark}.md'}")
    if len(reports) > 1:
        interval = across_runs(reports)
        if interval is not None:
            print(
                f"over {interval.n} runs: headline mean pass@1 {interval.mean:.3f} "
                f"(95% CI {interval.low:.3f}-{interval.high:.3f}, bootstrap over runs)"
            )
