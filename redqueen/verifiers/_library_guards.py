"""Library objects that read an attribute a program can set back as a name or as code, guarded
once in the fork server before it serves; and the ``__main__`` module each program runs as.

The static check refuses setting the attribute names such objects read back
(``READ_ONLY_ATTRIBUTES`` in ``_allowlist.py``) and any store on what a module or an imported
name leads to, but the text does not show every store: ``self.name = name`` is everyday code,
and a program's method may be called with a dataclass field as ``self``; an alias the program
holds under a name of its own (``T = typing.Counter[int]`` then ``T.x = v``) takes one as well.
So before it serves, the fork server (:func:`guard_library`) lets each such attribute be written
once, by the library, with what the library itself writes there:

* ``dataclasses.Field.name``: ``dataclass`` writes each field's name, those of the fields a
  subclass copies from its bases included, into the source of the methods it executes
  (``__init__``, ``__eq__`` ...). Written once, from None, as an identifier that is neither a
  keyword nor a dunder; and ``dataclass`` refuses a base whose fields disagree with their keys.
* ``typing``'s aliases and special forms: an alias's ``__reduce__`` looks its ``_name`` up in
  typing's globals, where ``'__builtins__'`` is the builtins dict (``copy.copy`` of it returned
  ``eval``), and an alias forwards a store of any public name to the class it stands for. Each
  attribute is written once, when typing makes the object, and nothing is forwarded.

Each guard costs only the stores it watches (a few per field or alias made), nothing per run.

A program runs as a fresh ``__main__`` module of its own (:func:`main_namespace`): code that a
library compiles against ``sys.modules[cls.__module__]`` (``dataclass``'s methods) sees the
program's globals, where it used to see the fork server's script (``os``, ``sys``, ``Zygote``).

Standard library only; imported by the fork server as a sibling module.
"""

from __future__ import annotations

import builtins
import dataclasses
import keyword
import sys
import typing
from collections.abc import Callable
from typing import Any

__all__ = ["guard_library", "main_namespace"]

_UNSET = object()


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _is_plain_name(value: object) -> bool:
    """A ``str`` that is an identifier, not a keyword and not a dunder: what a class body binds."""
    return (
        type(value) is str
        and value.isidentifier()
        and not keyword.iskeyword(value)
        and not _is_dunder(value)
    )


def _refuse(what: str) -> AttributeError:
    return AttributeError(f"{what} is written once, by the library, in the sandbox")


# ---------------------------------------------------------------------------------- dataclasses


def _field_setattr(field: dataclasses.Field, name: str, value: object) -> None:
    """``Field.__setattr__``: ``name`` goes from unset to None (``Field.__init__``), then once
    from None to a plain name (``dataclass``'s ``_get_field``)."""
    if name == "name":
        current = getattr(field, "name", _UNSET)
        if not (
            (current is _UNSET and value is None) or (current is None and _is_plain_name(value))
        ):
            raise _refuse("a dataclass field's name")
    object.__setattr__(field, name, value)


def _field_delattr(field: dataclasses.Field, name: str) -> None:
    if name == "name":
        raise _refuse("a dataclass field's name")
    object.__delattr__(field, name)


def _checking_bases(process_class: Callable[..., type]) -> Callable[..., type]:
    """``dataclasses._process_class``, refusing a base whose fields disagree with their keys.

    ``dataclass`` copies each base's ``__dataclass_fields__`` by the fields' names and writes
    those names into the source it executes; a field's name now never changes once written,
    and this holds the table it sits in to the same.
    """

    def checked(cls: type, *args: Any, **kwargs: Any) -> type:
        for base in cls.__mro__[1:]:
            for key, field in getattr(base, "__dataclass_fields__", {}).items():
                name = getattr(field, "name", None)
                if not (type(key) is str and type(name) is str and name == key):
                    raise TypeError(
                        f"dataclass: base {base.__qualname__} holds its field {key!r} under "
                        "another name"
                    )
        return process_class(cls, *args, **kwargs)

    return checked


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
        (dataclasses.Field, "__setattr__", _field_setattr),
        (dataclasses.Field, "__delattr__", _field_delattr),
        (alias, "__setattr__", _alias_setattr),
        (alias, "__delattr__", _typing_delattr),
        (form, "__setattr__", _form_setattr),
        (form, "__delattr__", _typing_delattr),
    )
    for owner, name, method in methods:
        setattr(owner, name, method)
    module = vars(dataclasses)  # dataclass() reads _process_class from its globals per call
    module["_process_class"] = _checking_bases(module["_process_class"])


def main_namespace(extra: dict[str, Any]) -> dict[str, Any]:
    """The namespace of a fresh ``__main__`` module, now in ``sys.modules``, with ``extra``
    bound in it: where the program about to run in this child runs."""
    main = type(sys)("__main__")
    namespace = vars(main)
    namespace["__builtins__"] = builtins
    namespace.update(extra)
    sys.modules["__main__"] = main
    return namespace
