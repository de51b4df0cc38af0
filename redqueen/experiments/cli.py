"""The ``redqueen`` command line.

``run`` starts an experiment from a preset or YAML file, ``resume`` continues one from its run
directory, ``plot`` redraws its plots, ``export`` copies a member's adapter out as a PEFT folder,
``sweep`` runs a grid over seeds on Ray Tune, ``compare`` draws conditions with bootstrap bands,
and ``list`` shows every registry (operators, selections, environments, presets, plots, ...).
Bad input exits with status 2 and one line naming the field or file, never a traceback.
Names from a run directory (folders, member ids, condition labels) are printed escaped
(:mod:`._display`), so none can send a terminal escape sequence or forge a line.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from redqueen._params import pack_pieces
from redqueen._registry import ALL_REGISTRIES
from redqueen.experiments._display import EscapingFormatter, error_line, shown
from redqueen.experiments._run_lines import first_line, last_line, live_progress, run_failure
from redqueen.experiments.ciao import ciao_command
from redqueen.experiments.domain_check import domain_check_command
from redqueen.experiments.evaluation.command import eval_command
from redqueen.experiments.plugins import import_plugin, load_plugins
from redqueen.experiments.plugins import one_line as _one_line
from redqueen.experiments.study_commands import compare_command, export_table_command, sweep_command

if TYPE_CHECKING:
    from redqueen.experiments.runner import Runner

app = typer.Typer(
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="LoRA adapters as genomes.",
)

#: Exit status for bad input (unknown key, wrong type, missing file, unknown member, ...).
EXIT_BAD_INPUT = 2
#: Exit status of a run stopped by SIGINT after writing its checkpoint.
EXIT_INTERRUPTED = 130
#: Exit status of a run stopped by SIGTERM (a scheduler's pre-emption) after its checkpoint.
EXIT_TERMINATED = 143


def configure_logging(level: str = "INFO") -> None:
    """Send the ``redqueen`` loggers' records to stderr through rich (the command line's setup).

    Library users configure ``logging`` themselves; the package only adds a ``NullHandler``.

    Raises:
        ValueError: If ``level`` is not a logging level name.
    """
    import logging

    from rich.logging import RichHandler

    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"--log-level: unknown level {level!r} (DEBUG, INFO, WARNING, ERROR)")
    logger = logging.getLogger("redqueen")
    for handler in [h for h in logger.handlers if isinstance(h, RichHandler)]:
        logger.removeHandler(handler)
    handler = RichHandler(console=Console(stderr=True), show_time=False, show_path=False, markup=False)
    handler.setFormatter(EscapingFormatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(numeric)


def _show_version(value: bool) -> None:
    if value:
        from redqueen import __version__

        typer.echo(f"redqueen {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
    ),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR."),
) -> None:
    """redqueen: LoRA adapters as genomes (PopuLoRA co-evolution)."""
    with bad_input_exits():
        configure_logging(log_level)


def _plugin_option(action: str) -> Any:
    # Typed as typer.Option is (Any), so that it stands as the default of a list[str] parameter.
    return typer.Option(
        None,
        "--plugin",
        help=f"Module or .py file registering operators, plots, ... to {action} (repeatable).",
    )


def fail(message: str) -> typer.Exit:
    """Print ``error: <message>`` as one line on stderr (names escaped) and return the exit to raise."""
    typer.echo(error_line(message), err=True)
    return typer.Exit(EXIT_BAD_INPUT)


@contextmanager
def bad_input_exits(*, starting: bool = False) -> Iterator[None]:
    """Turn the errors bad input raises (config, paths, registries, files) into exit status 2.

    Args:
        starting: The block builds or restores an environment. Whatever fails there (a device
            that is not available, a model that does not fit) is a setup problem of the
            run rather than a crash mid-run, so it too becomes one line naming the error.
    """
    try:
        yield
    except (ValueError, KeyError, OSError) as error:
        raise fail(_one_line(error)) from None
    except Exception as error:
        if not starting:
            raise
        raise fail(f"cannot start the run: {type(error).__name__}: {_one_line(error)}") from None


def _default_out(source: str) -> Path:
    name = Path(source).stem if Path(source).suffix in (".yaml", ".yml") else source
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path("runs") / f"{name}-{stamp}"
    suffix = 2
    while out.exists():
        out = Path("runs") / f"{name}-{stamp}-{suffix}"
        suffix += 1
    return out


def _drive(runner: Runner) -> None:
    """Run to the end with a live progress bar, report, and exit 130 (143) on SIGINT (SIGTERM).

    A step that fails (a full disk, a plug-in that raises) ends the run with one line naming
    what failed and where, and exit status 2; nothing written before the last checkpoint is lost.
    """
    import signal

    console = Console(stderr=True)
    progress, on_step = live_progress(console, runner)
    try:
        with progress:
            result = runner.run(callbacks=[on_step])
    except (KeyboardInterrupt, typer.Exit):
        raise
    except BaseException as error:
        raise fail(run_failure(runner, error)) from None
    finally:
        runner.close()
    for note in result.plot_notes:
        console.print(f"plot {shown(note)}", markup=False, highlight=False)
    if result.interrupted:
        typer.echo(
            f"interrupted after step {result.steps_done}/{result.steps_total}; checkpoint written."
            f" Continue with: redqueen resume {shown(result.path)}",
            err=True,
        )
        raise typer.Exit(EXIT_TERMINATED if result.stop_signal == signal.SIGTERM else EXIT_INTERRUPTED)
    typer.echo(last_line(result.path, result.steps_done, runner.plots))


@app.command("run")
def run_command(
    preset_or_yaml: str = typer.Argument(..., help="A preset name (see `redqueen list`) or a YAML file."),
    out: Path | None = typer.Option(None, "--out", help="Run directory (default runs/<preset>-<time>)."),
    overrides: list[str] | None = typer.Option(
        None, "--set", help="Dotted key=value override, e.g. --set steps=2 (repeatable)."
    ),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Write plots at the end."),
    plugins: list[str] | None = typer.Option(
        None, "--plugin", help="Module or .py file registering operators, selections, ... (repeatable)."
    ),
) -> None:
    """Start an experiment and write its run directory."""
    from redqueen.experiments.build import plan_environment
    from redqueen.experiments.config import load_config
    from redqueen.experiments.launch import check_run_target, start_run

    with bad_input_exits(starting=True):
        load_plugins(shipped=False)  # before the config: it may name a plug-in's domain, ...
        recorded = [import_plugin(spec) for spec in plugins or ()]
        config = load_config(preset_or_yaml, list(overrides or ()))
        plan = plan_environment(config)  # bad input is one line, with no first line before it
        target = check_run_target(out if out is not None else _default_out(preset_or_yaml))
        typer.echo(first_line(target, config.logging))  # before the model loads
        runner = start_run(config, target, plots=plots, plugins=recorded, plan=plan)
    _drive(runner)


@app.command("resume")
def resume_command(
    run_dir: Path = typer.Argument(..., help="The run directory to continue."),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Write plots at the end."),
    steps: int | None = typer.Option(
        None, "--steps", min=0, help="Continue to this many steps in total (a finished run too)."
    ),
    trust_plugins: bool = typer.Option(
        False, "--trust-plugins", help="Import the plug-ins the run directory's plugins.json names."
    ),
    plugins: list[str] | None = typer.Option(
        None, "--plugin", help="Confirm a plug-in of plugins.json by naming it again (repeatable)."
    ),
    trust_remote: bool = typer.Option(
        False,
        "--trust-remote",
        help="Use config.yaml's settings that reach other machines (engine.ray_address, logging.wandb).",
    ),
) -> None:
    """Continue a run from its latest checkpoint.

    The plug-ins it was started with (plugins.json) run code, so they are imported only when
    confirmed: by --trust-plugins, or by naming each of them again with --plugin. Settings of
    config.yaml that reach other machines (a Ray cluster to join, a W&B project) are used only
    with --trust-remote.
    """
    from redqueen.experiments.launch import resume_run

    with bad_input_exits(starting=True):
        load_plugins(shipped=False)
        if run_dir.is_dir():
            _import_confirmed_plugins(run_dir, trust_plugins, list(plugins or ()))
        runner = resume_run(
            run_dir,
            plots=plots,
            steps=steps,
            trust_remote=trust_remote,
            # once the checkpoint and logs are checked, before the model loads
            checked=lambda: typer.echo(first_line(run_dir, None, resuming=True)),
        )
    _drive(runner)


def _import_confirmed_plugins(run_dir: Path, trust: bool, named: list[str]) -> None:
    """Import the run's recorded plug-ins, or refuse naming them if they were not confirmed.

    Modules already imported (redqueen's own, listed by
    :data:`redqueen.experiments.plugins.PLUGIN_MODULES`) run no new
    code and need no confirmation.
    """
    from redqueen.experiments.rundir import RunDirectory

    run = RunDirectory(run_dir)
    run.require()  # a link or special file inside is refused before any plug-in runs
    recorded = run.read_plugins()
    pending = [spec for spec in recorded if spec not in sys.modules]
    confirmed = {str(Path(n).resolve()) if Path(n).suffix == ".py" else n for n in named}
    unconfirmed = [spec for spec in pending if spec not in confirmed]
    if unconfirmed and not trust:
        raise ValueError(
            f"{run.plugins_path} names plug-ins that would run code: {', '.join(unconfirmed)}; "
            "pass --trust-plugins, or --plugin for each, to import them"
        )
    for spec in pending:
        import_plugin(spec)
    for spec in named:
        import_plugin(spec)


@app.command("plot")
def plot_command(
    run_dir: Path = typer.Argument(..., help="The run directory."),
    plugins: list[str] | None = _plugin_option("draw"),
) -> None:
    """Draw the plots of a run into DIR/plots/ from its logs and lineage."""
    from redqueen.experiments.plots import make_plots
    from redqueen.experiments.rundir import RunDirectory

    with bad_input_exits():
        load_plugins()
        for spec in plugins or ():
            import_plugin(spec)
        run = RunDirectory(run_dir)
        run.require()
        with run.snapshot():
            report = make_plots(run_dir)
    for path in report.written:
        typer.echo(shown(path))
    for note in report.notes:
        typer.echo(f"note: {shown(note)}", err=True)


@app.command("export")
def export_command(
    run_dir: Path = typer.Argument(..., help="The run directory."),
    member_id: str = typer.Argument(..., help="Id of a living member, e.g. teacher-0003."),
    out: Path = typer.Argument(..., help="Folder to write the PEFT adapter to."),
) -> None:
    """Write a member's adapter as a PEFT folder (PeftModel.from_pretrained loads it)."""
    from redqueen.experiments.rundir import export_adapter

    with bad_input_exits():
        path = export_adapter(run_dir, member_id, out)
    typer.echo(shown(path))


app.command("eval")(eval_command)
app.command("ciao")(ciao_command)
app.command("sweep")(sweep_command)
app.command("compare")(compare_command)
app.command("export-table")(export_table_command)
domain_app = typer.Typer(help="Task domains: try one's pipeline without a model.", no_args_is_help=True)
domain_app.command("check")(domain_check_command)
app.add_typer(domain_app, name="domain")
config_app = typer.Typer(help="The configuration's keys, from the settings objects.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("keys")
def config_keys_command(
    markdown: bool = typer.Option(False, "--markdown", help="A Markdown table per section."),
) -> None:
    """Every configuration key, one a line: type = default (range), then its meaning."""
    from redqueen.experiments._config_keys import config_keys, keys_markdown, keys_text

    typer.echo(keys_markdown(config_keys()) if markdown else keys_text(config_keys()))


@app.command("list")
def list_registries(plugins: list[str] | None = _plugin_option("list")) -> None:
    """Show every registered operator, selection scheme, environment and preset (plain text),
    with those of installed (entry point ``redqueen.plugins``) and given plug-ins; under an entry,
    indented, its parameters (name: type = default (range)) and what it needs."""
    with bad_input_exits():
        load_plugins()
        for spec in plugins or ():
            import_plugin(spec)
    for kind, registry in sorted(ALL_REGISTRIES.items()):
        typer.echo(f"{kind}:")
        names = sorted(registry)
        width = max((len(name) for name in names), default=0)
        for name in names:
            typer.echo(f"  {name:<{width}}  {' '.join(registry.describe(name).split())}".rstrip())
            pieces = registry.describe_params(name)
            if pieces:
                typer.echo(pack_pieces(pieces, indent=width + 4))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: usage errors are one line and exit 2, like bad input."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        args = ["--help"]
    try:
        code = app(args, prog_name="redqueen", standalone_mode=False)
    except typer.Abort:
        sys.exit(EXIT_INTERRUPTED)
    except typer.TyperException as error:  # the argument parser's usage errors
        format_message = getattr(error, "format_message", None)
        message = format_message() if callable(format_message) else str(error)
        typer.echo(error_line(message), err=True)
        sys.exit(EXIT_BAD_INPUT)
    sys.exit(code if isinstance(code, int) else 0)
