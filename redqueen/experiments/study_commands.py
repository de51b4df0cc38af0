"""``redqueen sweep`` and ``redqueen compare``: seeds, grids and error bars from the command line.

Register with ``app.command("sweep")(sweep_command)``, ``app.command("compare")(compare_command)``
and ``app.command("export-table")(export_table_command)``.
Bad input (a malformed ``--grid``, an unknown config key, a path that holds no runs, a metric no
run logged) exits with status 2 and one line naming it, before any trial starts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from redqueen.experiments._display import error_line, shown, shown_lines


def _fail(message: str | Exception) -> typer.Exit:
    print(error_line(message), file=sys.stderr)
    return typer.Exit(2)


def sweep_command(
    config: str = typer.Argument(..., help="A preset name or a YAML file, as for `redqueen run`."),
    seeds: int = typer.Option(1, "--seeds", min=1, help="Seeds 0..N-1 per grid point."),
    grid: list[str] | None = typer.Option(
        None, "--grid", help="key=v1,v2,... crossed with the other --grid keys (repeatable)."
    ),
    overrides: list[str] | None = typer.Option(
        None, "--set", help="key=value applied to every trial (repeatable)."
    ),
    out: Path | None = typer.Option(None, "--out", help="Sweep directory (default runs/sweep-<config>)."),
    address: str | None = typer.Option(
        None, "--address", help="Ray cluster address (default: start Ray on this machine)."
    ),
    cpus_per_trial: float = typer.Option(1.0, "--cpus-per-trial", min=0.01, help="CPUs Ray reserves per trial."),
    max_concurrent: int = typer.Option(0, "--max-concurrent", min=0, help="Trials at once (0: as CPUs allow)."),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Draw each run's plots."),
    plugins: list[str] | None = typer.Option(
        None, "--plugin", help="Module or .py file registering operators, selections, ... (repeatable)."
    ),
) -> None:
    """Run a grid of configurations over seeds as Ray Tune trials; each trial is a run directory.

    Running the same command again continues the sweep: finished runs are kept, interrupted ones
    resume from their checkpoints.
    """
    from redqueen.experiments.sweep import parse_grid, run_sweep

    target = out if out is not None else Path("runs") / f"sweep-{Path(config).stem}"
    try:
        parsed = parse_grid(list(grid or ()))
        groups = run_sweep(config, out=target, seeds=seeds, grid=parsed, overrides=list(overrides or ()),
                           address=address, cpus_per_trial=cpus_per_trial, max_concurrent=max_concurrent,
                           plots=plots, plugins=list(plugins or ()))
    except (ValueError, KeyError, OSError) as error:
        raise _fail(str(error.args[0]) if isinstance(error, KeyError) and error.args else error) from None
    for name, runs in groups.items():
        typer.echo(f"{shown(name)}: {len(runs)} runs in {shown(runs[0].parent)}")
    typer.echo(f"sweep complete: {shown(target)} (compare with: redqueen compare {shown(target)})")


def compare_command(
    dirs: list[Path] = typer.Argument(..., help="Sweep directories, folders of runs or run directories."),
    metric: list[str] | None = typer.Option(
        None, "--metric", "-m",
        help="metrics.jsonl column to compare (repeatable; default: the runs' objective headline, "
             "e.g. heldout_lift, then solve_rate and best_rating).",
    ),
    window: int = typer.Option(1, "--window", help="Final value: mean of each run's last N logged steps."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default DIR/compare)."),
) -> None:
    """Draw metrics over time per condition with t bands; final values with CIs; paired tests
    where seeds match, Holm-corrected."""
    from redqueen.experiments.compare import compare
    from redqueen.experiments.rundir import RunDirectoryError

    try:
        result = compare(dirs, metrics=list(metric) if metric else None, out=out, window=window)
    except (ValueError, OSError, RunDirectoryError) as error:
        raise _fail(error) from None
    typer.echo(shown_lines(result.table))
    for path in result.files:
        typer.echo(f"wrote {shown(path)}")


def export_table_command(
    dirs: list[Path] = typer.Argument(..., help="Sweep directories, folders of runs or run directories."),
    out: Path = typer.Option(..., "--out", help="A .csv file, or .parquet (needs pyarrow)."),
) -> None:
    """Write every run's metrics per step, with its configuration keys as columns, as one table."""
    from redqueen.experiments.analysis import export_table
    from redqueen.experiments.rundir import RunDirectoryError

    try:
        path = export_table(dirs, out)
    except (ValueError, OSError, RunDirectoryError) as error:
        raise _fail(error) from None
    typer.echo(f"wrote {shown(path)}")
