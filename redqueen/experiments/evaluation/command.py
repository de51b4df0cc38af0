"""``redqueen eval``: benchmark an evolved population from the command line.

Register with ``app.command("eval")(eval_command)``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from redqueen._registry import UnknownNameError
from redqueen.experiments._display import error_line, shown, shown_lines
from redqueen.experiments.build import device_problem
from redqueen.experiments.evaluation._compare import comparison_table, split_baselines
from redqueen.experiments.evaluation._evaluate import evaluate_run
from redqueen.experiments.evaluation._problem_file import ProblemFileSuite
from redqueen.experiments.evaluation._report import EvalReport, across_runs
from redqueen.experiments.evaluation._standalone import evaluate_model
from redqueen.experiments.evaluation._suite import SUITES, BenchmarkSuite
from redqueen.experiments.plugins import import_plugin, load_plugins
from redqueen.experiments.rundir import RunDirectoryError
from redqueen.settings._game import MAX_EXECUTOR_WORKERS


def _fail(message: str) -> typer.Exit:
    print(error_line(message), file=sys.stderr)
    return typer.Exit(2)


def eval_command(
    run_dirs: list[Path] | None = typer.Argument(
        None,
        help="Run directories (config.yaml and population/); several runs (seeds) add a CI over runs. "
        "Leave out with --model.",
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        help="Evaluate this model (Hugging Face id, local path or tiny-coder) without a run directory.",
    ),
    adapter: list[Path] | None = typer.Option(
        None, "--adapter", help="With --model: a PEFT adapter folder to score too (repeatable)."
    ),
    out: Path = typer.Option(
        Path("."), "--out", help="With --model: folder for eval_<benchmark>.json/.md."
    ),
    benchmark: str = typer.Option("humaneval", "--benchmark", "-b", help="Benchmark suite name."),
    problems: Path | None = typer.Option(
        None,
        "--problems",
        help=(
            "Your own code_o / code_i problems, JSON lines with program and input (output "
            "optional: computed in the sandbox); used instead of --benchmark."
        ),
    ),
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
    workers: int | None = typer.Option(
        None, "--workers", min=1, max=MAX_EXECUTOR_WORKERS, help="Sandbox worker processes."
    ),
    cpu_threads: int | None = typer.Option(
        None,
        "--cpu-threads",
        min=1,
        max=1024,  # model.cpu_threads' range
        help="Torch CPU threads (default: the run's model.cpu_threads).",
    ),
    plugins: list[str] | None = typer.Option(
        None, "--plugin", help="Module or .py file registering benchmark suites (repeatable)."
    ),
) -> None:
    """Greedy pass@1 of every living member, the base model and baselines, with bootstrap CIs;
    writes eval_<benchmark>.json/.md into each run directory. With --model instead of run
    directories: the model bare and with each --adapter, written into --out."""
    run_dirs = list(run_dirs or [])
    baselines = list(baseline or [])
    _check_inputs(run_dirs, model, list(adapter or []), baselines)
    problem = device_problem(device)
    if problem is not None:
        raise _fail(f"--device: {problem}")
    if model is not None and out.exists() and not out.is_dir():
        raise _fail(f"--out {out} is a file, not a folder")
    if model is not None:  # else found only when the report was written, after every answer
        above = next((p for p in out.parents if p.exists()), None)
        if above is not None and not above.is_dir():
            raise _fail(f"--out {out}: {above} is a file, not a folder")
    _load_plugins(plugins or [])
    _check_benchmark(benchmark, problems)
    for path in baselines:
        if not path.exists():
            raise _fail(f"baseline {path} does not exist")
    try:
        suite = benchmark if problems is None else _problem_suite(problems, workers)
    except (RunDirectoryError, OSError, ImportError, ValueError) as error:
        raise _fail(_first_line(error)) from None
    if model is not None:
        _evaluate_model(
            model,
            suite,
            adapters=list(adapter or []),
            out=out,
            limit=limit,
            device=device,
            batch_size=batch_size,
            workers=workers,
        )
        return
    reports = [
        _evaluate_run(
            run_dir,
            suite,
            baselines=baselines,
            limit=limit,
            device=device,
            batch_size=batch_size,
            workers=workers,
            cpu_threads=cpu_threads,
        )
        for run_dir in run_dirs
    ]
    if len(reports) > 1:
        _print_interval(reports)


#: Bad input while evaluating (unreadable run, adapter or model files, unknown names, a missing
#: optional package): one line, status 2.
_BAD_INPUT = (RunDirectoryError, UnknownNameError, OSError, ImportError, ValueError)


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _check_inputs(
    run_dirs: list[Path], model: str | None, adapters: list[Path], baselines: list[Path]
) -> None:
    """Run directories or ``--model``, with the options that go with each, and that they exist."""
    if (model is None) == (not run_dirs):
        raise _fail(
            "give run directories or --model, not both"
            if run_dirs
            else "give run directories or --model"
        )
    if adapters and model is None:
        raise _fail("--adapter needs --model (a run directory's members are its adapters)")
    if baselines and model is not None:
        raise _fail("--baseline needs run directories; with --model, give adapters with --adapter")
    if model is not None:
        _check_model(model)
    for path in adapters:
        if not path.exists():
            raise _fail(f"adapter {path} does not exist")
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            what = "is a file, not a directory" if run_dir.exists() else "does not exist"
            raise _fail(f"run directory {run_dir} {what}")


def _check_model(model: str) -> None:
    """``--model`` names something to load: a hub id, or a local path (as the host reads one,
    :func:`redqueen.engine._host._load_model`) that is a folder; checked before any log line."""
    if not model.strip():
        raise _fail("--model: give a Hugging Face id, a local model folder or tiny-coder")
    if model.startswith(("/", "./", "../", "~")):
        local = Path(model).expanduser()
        if not local.is_dir():
            what = "is a file, not a model folder" if local.exists() else "does not exist"
            raise _fail(f"--model {model} {what}")
        if not (local / "config.json").is_file():
            raise _fail(f"--model {model}: no config.json, not a model folder")


def _load_plugins(plugins: list[str]) -> None:
    """The installed plug-ins and those named by ``--plugin`` (which may register suites)."""
    try:
        load_plugins()
        for spec in plugins:
            import_plugin(spec)
    except ValueError as error:
        raise _fail(str(error)) from None


def _check_benchmark(benchmark: str, problems: Path | None) -> None:
    """A registered benchmark, or a problem file that exists."""
    if problems is None and benchmark not in SUITES:
        raise _fail(f"unknown benchmark {benchmark!r} (known: {', '.join(sorted(SUITES))})")
    if problems is not None and not problems.is_file():
        what = "is a directory, not a file" if problems.is_dir() else "does not exist"
        raise _fail(f"problems file {problems} {what}")


def _evaluate_model(
    model: str,
    suite: str | BenchmarkSuite,
    *,
    adapters: list[Path],
    out: Path,
    limit: int | None,
    device: str,
    batch_size: int | None,
    workers: int | None,
) -> None:
    """``--model``: the model bare and with each adapter, the report printed and written."""
    try:
        report = evaluate_model(
            model,
            suite,
            adapters=adapters,
            out=out,
            limit=limit,
            device=device,
            batch_size=batch_size,
            workers=workers,
        )
    except _BAD_INPUT as error:
        raise _fail(_first_line(error)) from None
    print(shown_lines(report.to_markdown()))
    print(
        f"wrote {shown(out / f'eval_{report.suite}.json')} and {shown(out / f'eval_{report.suite}.md')}"
    )


def _evaluate_run(
    run_dir: Path,
    suite: str | BenchmarkSuite,
    *,
    baselines: list[Path],
    limit: int | None,
    device: str,
    batch_size: int | None,
    workers: int | None,
    cpu_threads: int | None,
) -> EvalReport:
    """One run directory's members, base model and baselines, printed and written there."""
    try:
        report = evaluate_run(
            run_dir,
            suite,
            baselines=baselines,
            limit=limit,
            device=device,
            batch_size=batch_size,
            workers=workers,
            cpu_threads=cpu_threads,
        )
    except _BAD_INPUT as error:
        raise _fail(_first_line(error)) from None
    print(shown_lines(report.to_markdown()))
    if report.baselines:
        print(shown_lines(comparison_table([split_baselines(report)])))
    name = report.suite
    print(f"wrote {shown(run_dir / f'eval_{name}.json')} and {shown(run_dir / f'eval_{name}.md')}")
    return report


def _print_interval(reports: list[EvalReport]) -> None:
    """The headline's t interval over runs (seeds)."""
    interval = across_runs(reports)
    if interval is not None:
        print(
            f"over {interval.n} runs: headline mean pass@1 {interval.mean:.3f} "
            f"(95% CI {interval.low:.3f}-{interval.high:.3f}, t interval over runs)"
            + ("; fewer than 5 runs: a wide, rough interval" if interval.n < 5 else "")
        )


def _problem_suite(path: Path, workers: int | None) -> ProblemFileSuite:
    """The suite of a problem file, its missing outputs computed in a sandbox."""
    from redqueen.verifiers import Executor

    with Executor(workers=workers) as executor:
        return ProblemFileSuite.from_file(path, executor)
