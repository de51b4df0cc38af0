"""Loading plug-ins: the shipped registry modules, the ``redqueen.plugins`` entry points of
installed packages, and modules or ``.py`` files named with ``--plugin``.

Every command that reads a registry (``run``, ``resume``, ``list``, ``plot``, ``eval``) calls
:func:`load_plugins` and :func:`import_plugin` from here; errors are one line naming the plug-in.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
from pathlib import Path

#: Modules whose import fills the registries that ``redqueen list`` shows.
PLUGIN_MODULES = (
    "redqueen.evo.operators",
    "redqueen.evo.selection",
    "redqueen.environments.surrogate",
    "redqueen.experiments.plots",
    "redqueen.experiments.config",
    "redqueen.environments",
    "redqueen.experiments.evaluation",
)

#: Entry-point group through which an installed package registers plug-ins without flags.
ENTRY_POINT_GROUP = "redqueen.plugins"


def load_plugins() -> None:
    """Import every module that registers plug-ins: the shipped ones, then every entry point of
    the ``redqueen.plugins`` group of the installed packages.

    Raises:
        ValueError: Naming the entry point, if it fails to import.
    """
    for module in PLUGIN_MODULES:
        importlib.import_module(module)
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry.load()
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # an installed plug-in may raise anything, sys.exit too
            raise ValueError(
                f"plugin {entry.name} ({entry.value}, entry point {ENTRY_POINT_GROUP}): cannot import "
                f"({type(error).__name__}: {one_line(error)})"
            ) from None


def import_plugin(spec: str) -> str:
    """Import a plug-in given as a module name or a ``.py`` file, so its registrations apply.

    Returns:
        The spec as it should be recorded (a file becomes its absolute path).

    Raises:
        ValueError: Naming the plug-in, if it cannot be found or fails to import.
    """
    path = Path(spec)
    try:
        if path.suffix == ".py":
            if not path.is_file():
                raise ValueError(f"plugin {spec}: file not found")
            path = path.resolve()
            name = f"redqueen_plugin_{path.stem}"
            if name not in sys.modules:
                module_spec = importlib.util.spec_from_file_location(name, path)
                if module_spec is None or module_spec.loader is None:
                    raise ValueError(f"plugin {spec}: cannot be imported as a module")
                module = importlib.util.module_from_spec(module_spec)
                sys.modules[name] = module
                try:
                    module_spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[name]
                    raise
            return str(path)
        importlib.import_module(spec)
        return spec
    except ValueError:
        raise
    except SystemExit as error:  # sys.exit() in a plug-in must not end redqueen as if it succeeded
        raise ValueError(f"plugin {spec}: called sys.exit({error.code!r}) while being imported") from None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the plug-in's own code may raise anything while importing
        raise ValueError(f"plugin {spec}: cannot import ({type(error).__name__}: {one_line(error)})") from None


def one_line(error: BaseException) -> str:
    """An exception's message on one line (a ``KeyError``'s without its quotes)."""
    text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    text = " ".join(text.split()) or type(error).__name__
    return text
