"""The ``redqueen`` command line."""

from __future__ import annotations

import importlib

import typer
from rich.console import Console
from rich.table import Table

from redqueen._registry import ALL_REGISTRIES

app = typer.Typer(add_completion=False, no_args_is_help=True, help="LoRA adapters as genomes.")

#: Modules whose import fills the registries that ``redqueen list`` shows.
PLUGIN_MODULES = ("redqueen.evo.operators",)


@app.callback()
def _root() -> None:
    """redqueen: LoRA adapters as genomes (PopuLoRA co-evolution)."""


def load_plugins() -> None:
    """Import every module that registers plug-ins."""
    for module in PLUGIN_MODULES:
        importlib.import_module(module)


@app.command("list")
def list_registries() -> None:
    """Show every registered operator, selection scheme, environment and preset."""
    load_plugins()
    console = Console()
    for kind, registry in sorted(ALL_REGISTRIES.items()):
        table = Table(title=kind, show_header=False, title_justify="left")
        for name in sorted(registry):
            table.add_row(name, registry.describe(name))
        console.print(table)


def main() -> None:
    """Console-script entry point."""
    app()
