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
* ``functools.cached_property.attrname`` (no longer listed for programs): the key under which ``__get__`` stores what it
  computed in an instance's dict; as ``'__reduce_ex__'`` it gave an instance a
  ``__reduce_ex__`` of its own, which ``copy.copy`` called, and from whose result ``copy`` set
  any attribute, dunders included, on any object. Written once, by ``__set_name__``, as a name
  its class binds, never a dunder.
* ``copy`` looked ``__reduce_ex__``, ``__reduce__`` and ``__deepcopy__`` up on the object
  itself, where an instance's dict could hold them (a cached property's, above); one there is
  now passed over for the class's, as the interpreter passes it over for special methods.

Each guard costs only the stores it watches (a few per field, alias or cached property made)
and ``copy`` a dict lookup per object its tables do not cover; nothing per run.

A program runs as a fresh ``__main__`` module of its own (:func:`main_namespace`): code that a
library compiles against ``sys.modules[cls.__module__]`` (``dataclass``'s methods) sees the
program's globals, where it used to see the fork server's script (``os``, ``sys``, ``Zygote``).

Standard library only; imported by the fork server as a sibling module.
"""

from __future__ import annotations

import builtins
import copy
import dataclasses
import functools
import keyword
import sys
import typing
from collections.abc import Callable

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


def _written_once(attr: str, what: str) -> tuple[Callable[..., None], Callable[..., None]]:
    """``__setattr__`` and ``__delattr__`` for a class whose ``attr`` the library writes into
    source or reads back as a name: it goes from unset to None (the class's ``__init__``), then
    once from None to a plain name; it is never deleted. Other attributes are left alone."""

    def setattr_(obj: object, name: str, value: object) -> None:
        if name == attr:
            try:
                current = object.__getattribute__(obj, attr)
            except AttributeError:
                current = _UNSET
            if not (
                (current is _UNSET and value is None) or (current is None and _is_plain_name(value))
            ):
                raise _refuse(what)
        object.__setattr__(obj, name, value)

    def delattr_(obj: object, name: str) -> None:
        if name == attr:
            raise _refuse(what)
        object.__delattr__(obj, name)

    return setattr_, delattr_


#: ``Field.name``: dataclass's ``_get_field`` names a field once, then writes the name into the
#: source of the methods it executes, its own class's and every subclass's.
_field_setattr, _field_delattr = _written_once("name", "a dataclass field's name")


def _checking_bases(process_class: Callable[..., type]) -> Callable[..., type]:
    """``dataclasses._process_class``, refusing a base whose fields disagree with their keys.

    ``dataclass`` copies each base's ``__dataclass_fields__`` by the fields' names and writes
    those names into the source it executes; a field's name now never changes once written,
    and this holds the table it sits in to the same.
    """

    def checked(cls: type, *args: object, **kwargs: object) -> type:
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


# ------------------------------------------------------------------------------------ functools


#: ``cached_property.attrname``: ``__set_name__`` sets it once, with the name its class binds, and
#: ``__get__`` writes the instance's dict under it.
_cached_property_setattr, _cached_property_delattr = _written_once(
    "attrname", "a cached_property's attrname"
)


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


# ----------------------------------------------------------------------------------------- copy


def _special_method(value: object, name: str, default: object = None) -> object:
    """``getattr`` as ``copy`` calls it (a special method's name, a default of None), except that
    a method an instance holds in its own dict is passed over for its class's, as the
    interpreter passes it over when it looks up a special method."""
    own = getattr(value, "__dict__", None)
    if own is None or name not in own or isinstance(value, type):
        return getattr(value, name, default)
    kind = type(value)
    for klass in kind.__mro__:
        found = vars(klass).get(name, _UNSET)
        if found is not _UNSET:
            bind = getattr(type(found), "__get__", None)
            return found if bind is None else bind(found, value, kind)
    return default


# ---------------------------------------------------------------------------------------- setup


def guard_library() -> None:
    """Install the guards (see the module docstring); the fork server calls it once, to serve."""
    alias, form = vars(typing)["_BaseGenericAlias"], vars(typing)["_SpecialForm"]
    methods: tuple[tuple[type, str, Callable[..., None]], ...] = (
        (dataclasses.Field, "__setattr__", _field_setattr),
        (dataclasses.Field, "__delattr__", _field_delattr),
        (functools.cached_property, "__setattr__", _cached_property_setattr),
        (functools.cached_property, "__delattr__", _cached_property_delattr),
        (alias, "__setattr__", _alias_setattr),
        (alias, "__delattr__", _typing_delattr),
        (form, "__setattr__", _form_setattr),
        (form, "__delattr__", _typing_delattr),
    )
    for owner, name, method in methods:
        setattr(owner, name, method)
    module = vars(dataclasses)  # dataclass() reads _process_class from its globals per call
    module["_process_class"] = _checking_bases(module["_process_class"])
    vars(copy)["getattr"] = _special_method  # copy's functions read getattr there, first


def main_namespace(extra: dict[str, object]) -> dict[str, object]:
    """The namespace of a fresh ``__main__`` module, now in ``sys.modules``, with ``extra``
    bound in it: where the program about to run in this child runs."""
    main = type(sys)("__main__")
    namespace = vars(main)
    namespace["__builtins__"] = builtins
    namespace.update(extra)
    sys.modules["__main__"] = main
    return namespace
