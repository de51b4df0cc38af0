"""The paper's comparison table: evolved population against a self-play baseline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from redqueen.experiments.evaluation._evaluate import evaluate_run
from redqueen.experiments.evaluation._report import EvalReport
from redqueen.experiments.evaluation._suite import make_suite


def cached_or_evaluate(
    run_dir: str | Path,
    suite: str,
    *,
    limit: int | None = None,
    device: str = "cpu",
    reuse: bool = True,
) -> EvalReport:
    """The run's ``eval_<suite>.json`` when it covers exactly these problems, else a fresh evaluation."""
    path = Path(run_dir) / f"eval_{suite}.json"
    if reuse and path.is_file():
        report = EvalReport.load(path)
        wanted = tuple(problem.id for problem in make_suite(suite).problems(limit))
        if report.problems == wanted:
            return report
    return evaluate_run(run_dir, suite, limit=limit, device=device)


def comparison_table(rows: Sequence[tuple[EvalReport, EvalReport]]) -> str:
    """Markdown table, one line per suite, from (population report, self-play report) pairs.

    Columns follow the paper: the population's mean and weakest member against the baseline
    (a self-play run, or baseline adapters); summaries use the student role when a run has one.
    """
    lines = [
        "| benchmark | base model | baseline | population mean | population weakest | population best |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]

    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.1f}"

    for population, selfplay in rows:
        summary = population.headline()
        baseline = selfplay.headline()
        base = population.base
        lines.append(
            f"| {population.suite} (n={len(population.problems)}) "
            f"| {fmt(base.pass_at_1 if base else None)} "
            f"| {fmt(baseline.mean if baseline else None)} "
            f"| {fmt(summary.mean if summary else None)} "
            f"| {fmt(summary.weakest.pass_at_1 if summary else None)} "
            f"| {fmt(summary.best.pass_at_1 if summary else None)} |"
        )
    return "\n".join(lines) + "\n"


def split_baselines(report: EvalReport) -> tuple[EvalReport, EvalReport]:
    """One report with baseline rows as two, (population, baselines), for :func:`comparison_table`.

    The baseline adapters become the second report's population, so its headline is their mean.
    """
    baseline_rows = tuple(
        replace(score, source="population") for score in report.scores if score.source == "baseline"
    )
    own = tuple(score for score in report.scores if score.source != "baseline")
    return replace(report, scores=own), replace(report, scores=baseline_rows)


def compare_runs(
    population_run: str | Path,
    selfplay_run: str | Path,
    suites: Sequence[str] = ("humaneval",),
    *,
    limit: int | None = None,
    device: str = "cpu",
    reuse: bool = True,
    echo: bool = True,
) -> str:
    """Compare an evolved population with a self-play run on each suite, as a markdown table.

    Each run is evaluated once per suite (or its saved ``eval_<suite>.json`` is reused when it
    covers the same problems). Numbers are greedy pass@1 in percent.

    Args:
        population_run: Run directory of the population (co-evolution) run.
        selfplay_run: Run directory of the self-play baseline.
        suites: Registered suite names.
        limit: Only the first ``limit`` problems of each suite.
        device: Torch device for generation.
        reuse: Reuse saved reports that cover the same problems.
        echo: Also print the table.

    Returns:
        The markdown table.

    Raises:
        redqueen.experiments.rundir.RunDirectoryError: If a run directory cannot be read.
        redqueen._registry.UnknownNameError: If a suite name is not registered.
    """
    rows = [
        (
            cached_or_evaluate(population_run, suite, limit=limit, device=device, reuse=reuse),
            cached_or_evaluate(selfplay_run, suite, limit=limit, device=device, reuse=reuse),
        )
        for suite in suites
    ]
    table = (
        f"Greedy pass@1 (%): population `{population_run}` vs self-play `{selfplay_run}`\n\n"
        + comparison_table(rows)
    )
    if echo:
        print(table)
    return table
