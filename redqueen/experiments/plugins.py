"""Loading plug-ins: the shipped registry modules, the ``redqueen.plugins`` entry points of
installed packages, and modules or ``.py`` files named with ``--plugin``.

Every command that reads a registry (``run``, ``resume``, ``list``, ``plot``, ``eval``) calls
:func:`load_plugins` and :func:`import_plugin` from here; errors are one line naming the plug-in.

A plug-in that raises or calls ``sys.exit`` while being imported is caught like any error. One
that ends the process outright (``os._exit``, a signal) cannot be caught in the process it
ends, and would make a command exit 0 having done nothing. So each plug-in is first imported in
a forked child (:func:`_check_import_survives`): cheap, since the child shares the parent's
already imported modules, and the child reports back through a pipe that its import returned.
If it did not, the plug-in is refused before the real import. A plug-in's import therefore
runs twice and must be repeatable (it already must be: ``resume`` imports it again).

The check is a safeguard against plug-ins that crash, not a boundary against hostile ones: the
child is another process (its pid differs, its output goes nowhere), so a plug-in can tell the
check from the real import and end the process only in the second. As a second layer, during
the real import ``os._exit`` raises instead of ending the process (:func:`_exit_raises`), so
that call is reported as one line too. A plug-in that signals itself (SIGKILL cannot be
caught), or calls ``_exit`` through ``ctypes`` or a reference taken earlier, still ends the
process; confirm only plug-ins you would run yourself.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import signal
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

#: Modules whose import fills the registries that ``redqueen list`` shows.
PLUGIN_MODULES = (
    "redqueen.evo.operators",
    "redqueen.evo.selection",
    "redqueen.environments.surrogate",
    "redqueen.experiments.plots",
    "redqueen.experiments.config",
    "redqueen.environments.coevolution",
    "redqueen.environments.selfplay",
    "redqueen.environments.games",
    "redqueen.environments._code_domain",
    "redqueen.experiments.evaluation",
)

#: Entry-point group through which an installed package registers plug-ins without flags.
ENTRY_POINT_GROUP = "redqueen.plugins"


def load_plugins(*, shipped: bool = True) -> None:
    """Import every module that registers plug-ins: the shipped ones, then every entry point of
    the ``redqueen.plugins`` group of the installed packages.

    Args:
        shipped: Import the shipped registries' modules too (what ``redqueen list`` shows). A
            run leaves them out: it imports what its configuration names, so that a surrogate
            run never loads the language-model stack.

    Raises:
        ValueError: Naming the entry point, if it fails to import.
    """
    for module in PLUGIN_MODULES if shipped else ():
        importlib.import_module(module)
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        label = f"{entry.name} ({entry.value}, entry point {ENTRY_POINT_GROUP})"
        if entry.module not in sys.modules:
            _check_import_survives(label, entry.load)
        try:
            with _exit_raises():
                entry.load()
        except KeyboardInterrupt:
            raise
        except _ExitCalled as called:
            raise ValueError(
                f"plugin {label}: called os._exit({called.code!r}) while being imported"
            ) from None
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
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"plugin {spec!r}: give a module name or a .py file")
    path = Path(spec)
    try:
        if path.suffix == ".py":
            if path.is_dir():
                raise ValueError(f"plugin {spec}: a directory, not a .py file")
            if not path.is_file():
                raise ValueError(f"plugin {spec}: file not found")
            path = path.resolve()
            name = f"redqueen_plugin_{path.stem}"
            if name not in sys.modules:
                module_spec = importlib.util.spec_from_file_location(name, path)
                if module_spec is None or module_spec.loader is None:
                    raise ValueError(f"plugin {spec}: cannot be imported as a module")
                _check_import_survives(spec, lambda: _exec_file(name, module_spec))
                with _exit_raises():
                    _exec_file(name, module_spec)
            return str(path)
        if spec not in sys.modules:
            _check_import_survives(spec, lambda: importlib.import_module(spec))
        with _exit_raises():
            importlib.import_module(spec)
        return spec
    except ValueError as error:  # a refusal above, or the plug-in's own (a duplicate name, ...)
        if str(error).startswith(f"plugin {spec}: "):
            raise
        raise ValueError(f"plugin {spec}: cannot import (ValueError: {one_line(error)})") from None
    except _ExitCalled as called:
        raise ValueError(
            f"plugin {spec}: called os._exit({called.code!r}) while being imported"
        ) from None
    except SystemExit as error:  # sys.exit() in a plug-in must not end redqueen as if it succeeded
        raise ValueError(
            f"plugin {spec}: called sys.exit({error.code!r}) while being imported"
        ) from None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the plug-in's own code may raise anything while importing
        raise ValueError(
            f"plugin {spec}: cannot import ({type(error).__name__}: {one_line(error)})"
        ) from None


def _exec_file(name: str, module_spec: importlib.machinery.ModuleSpec) -> None:
    assert module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


class _ExitCalled(BaseException):
    """``os._exit`` was called during a plug-in's real import (a ``BaseException``, so that the
    plug-in's own ``except Exception`` does not swallow it)."""

    def __init__(self, code: object) -> None:
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def _exit_raises() -> Iterator[None]:
    """While the block runs, ``os._exit`` in this process raises :class:`_ExitCalled` instead of
    ending it. A process the plug-in forks meanwhile still ends as it asks."""
    real = os._exit
    importer = os.getpid()

    def guarded(code: int) -> None:
        if os.getpid() != importer:
            real(code)
        raise _ExitCalled(code)

    modules = [m for m in (os, sys.modules.get("posix"), sys.modules.get("nt")) if m is not None]
    patched = [m for m in modules if getattr(m, "_exit", None) is real]
    for module in patched:
        module._exit = guarded  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module in patched:
            module._exit = real  # type: ignore[attr-defined]


def _check_import_survives(label: str, load: Callable[[], object]) -> None:
    """Run ``load`` in a forked child first; refuse the plug-in if it ended that process.

    The child's output is discarded and its errors ignored: the real import, done next in this
    process, reports those. Where ``fork`` is unavailable the check is skipped.

    Raises:
        ValueError: Naming the plug-in and how the child ended.
    """
    if not hasattr(os, "fork"):
        return
    read_end, write_end = os.pipe()
    try:
        with (
            warnings.catch_warnings()
        ):  # fork() of a threaded process warns (3.12+); the child only imports
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return
    if pid == 0:  # the child: import, say so, and leave without running any exit handler
        try:
            os.close(read_end)
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            try:
                load()
            except BaseException:  # noqa: S110 - reported by the real import in the parent
                pass
            os.write(write_end, b"ok")
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        answer = pipe.read()
    _, status = os.waitpid(pid, 0)
    if answer == b"ok":
        return
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit status {code}"
    raise ValueError(
        f"plugin {label}: ended the process while being imported ({how}, e.g. os._exit); refused"
    )


def one_line(error: BaseException) -> str:
    """An exception's message on one line (a ``KeyError``'s without its quotes)."""
    text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    text = " ".join(text.split()) or type(error).__name__
    return text
