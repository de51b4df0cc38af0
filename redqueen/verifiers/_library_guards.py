"""Library objects that read an attribute a program can set back as a name or as code, guarded
once in the fork server before it serves.

The static check refuses setting the attribute names such objects read back
(``READ_ONLY_ATTRIBUTES`` in ``_allowlist.py``) and any store on what a module or an imported
name leads to, but the text does not show every store: an alias the program holds under a name
of its own (``T = typing.Counter[int]`` then ``T.x = v``) takes one as well. So before it
serves, the fork server (:func:`guard_library`) lets each such attribute be written once, by the
library, with what the library itself writes there:

* ``typing``'s aliases and special forms: an alias's ``__reduce__`` looks its ``_name`` up in
  typing's globals, where ``'__builtins__'`` is the builtins dict (``copy.copy`` of it returned
  ``eval``), and an alias forwards a store of any public name to the class it stands for. Each
  attribute is written once, when typing makes the object, and nothing is forwarded.

Each guard costs only the stores it watches (a few per alias made), nothing per run.

Standard library only; imported by the fork server as a sibling module.
"""

from __future__ import annotations

import typing
from collections.abc import Callable

__all__ = ["guard_library"]


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _refuse(what: str) -> AttributeError:
    return AttributeError(f"{what} is written once, by the library, in the sandbox")


# --------------------------------------------------------------------------------------- typing


def _alias_setattr(alias: object, name: str, value: object) -> None:
    """``_BaseGenericAlias.__setattr__``: typing writes a dunder or a private name once, on the
    alias, as it makes it; a public name, which typing forwarded to the class the alias stands
    for (``typing.Counter[int].x = v`` set ``collections.Counter.x``), is refused."""
    if name in vars(alias) or not (_is_dunder(name) or name.startswith("_")):
        raise _refuse(f"typing alias attribute {name!r}")
    object.__setattr__(alias, name, value)


def _form_setattr(form: object, name: str, value: object) -> None:
    """``_SpecialForm.__setattr__``: each slot is written once, as typing makes the form."""
    try:
        object.__getattribute__(form, name)
    except AttributeError:
        object.__setattr__(form, name, value)
        return
    raise _refuse(f"typing special form attribute {name!r}")


def _typing_delattr(value: object, name: str) -> None:
    raise _refuse(f"typing attribute {name!r}")


# ---------------------------------------------------------------------------------------- setup


def guard_library() -> None:
    """Install the guards (see the module docstring); the fork server calls it once, to serve."""
    alias, form = vars(typing)["_BaseGenericAlias"], vars(typing)["_SpecialForm"]
    methods: tuple[tuple[type, str, Callable[..., None]], ...] = (
        (alias, "__setattr__", _alias_setattr),
        (alias, "__delattr__", _typing_delattr),
        (form, "__setattr__", _form_setattr),
        (form, "__delattr__", _typing_delattr),
    )
    for owner, name, method in methods:
        setattr(owner, name, method)
