"""Configuration defaults read from the runtime classes that define them, without importing them.

A configuration section mirrors a runtime class (the learner's ``LearnerConfig``, the game's
``GameSettings``, the sandbox ``Executor``, the rewards, ``PFSPMatchmaker``, the code-game
environment's population sizes). The default of each setting is written once, in the runtime
class; :func:`runtime_default` gives pydantic a ``default_factory`` that reads it from the
class's source (a dataclass field or a keyword default of ``__init__``). Reading the source with
:mod:`ast` rather than importing the module keeps loading a configuration free of torch and
transformers. The defaults are literals; ``tests/experiments/test_defaults_once.py`` checks
every one against the imported class.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parent.parent


@functools.cache
def class_defaults(where: str) -> dict[str, Any]:
    """The literal defaults of the class at ``where`` (``"engine/_learner.py:LearnerConfig"``,
    relative to the package): its annotated class attributes and its ``__init__`` keywords.

    Raises:
        LookupError: If the file has no such class.
    """
    path, _, name = where.partition(":")
    tree = ast.parse((_PACKAGE / path).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return _defaults_of(node)
    raise LookupError(f"{where}: no such class")


def _defaults_of(cls: ast.ClassDef) -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value:
            try:
                defaults[item.target.id] = ast.literal_eval(item.value)
            except ValueError:
                continue  # not a literal (a field(...) call): not a default this reader knows
        elif isinstance(item, ast.FunctionDef) and item.name == "__init__":
            args = item.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            for arg, value in pairs:
                try:
                    defaults[arg.arg] = ast.literal_eval(value)
                except ValueError:
                    continue
    return defaults


def runtime_default(where: str, name: str) -> Callable[[], Any]:
    """A ``default_factory`` giving the default of setting ``name`` as the class at ``where``
    writes it (see :func:`class_defaults`)."""

    def make() -> Any:
        return class_defaults(where)[name]

    return make


def defaults_from(where: str) -> Callable[[str], Callable[[], Any]]:
    """``default = defaults_from("verifiers/_executor.py:Executor")``; then
    ``Field(default_factory=default("timeout"))``."""

    def factory(name: str) -> Callable[[], Any]:
        return runtime_default(where, name)

    return factory
