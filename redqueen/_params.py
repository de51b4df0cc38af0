"""Parameter schemas of registered entries: read from typed signatures, checked, described.

A registered function or class declares its parameters by its keyword-only arguments, their
annotations and defaults, as mergekit builds its schemas from type hints; a range goes into the
annotation with pydantic's ``Field``::

    def gaussian(genome, *, rng, sigma: Annotated[float, Field(ge=0)] = 0.1): ...

:func:`signature_model` turns such a signature into a pydantic model, :func:`check_params`
validates a parameter mapping against it with a one-line error naming the key, and
:func:`describe_params` writes the schema as plain text for ``redqueen list`` (wrapped by
:func:`pack_pieces`).
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model


class ParameterError(ValueError):
    """A parameter mapping does not fit an entry's schema.

    Attributes:
        key: The offending parameter (empty when the mapping as a whole is wrong).
        problem: What is wrong with it, in a few words.
    """

    def __init__(self, key: str, problem: str) -> None:
        self.key, self.problem = key, " ".join(problem.split())
        super().__init__(f"{key}: {self.problem}" if key else self.problem)


def _signature_of(obj: object) -> tuple[inspect.Signature, Callable[..., object] | None] | None:
    """The signature callers use, and the function whose annotations describe it."""
    if isinstance(obj, type):
        init = next((k.__dict__["__init__"] for k in obj.__mro__ if "__init__" in k.__dict__), None)
        if init is None or init is object.__init__:
            return inspect.Signature(), init
        try:
            return inspect.signature(obj), init
        except (TypeError, ValueError):
            return None
    if not callable(obj):
        return None
    try:
        return inspect.signature(obj), obj
    except (TypeError, ValueError):
        return None


def unknown_keywords(
    obj: object, names: Collection[str], *, positional: int = 0, context: Collection[str] = ()
) -> tuple[list[str], list[str]]:
    """The ``names`` that ``obj`` cannot take as parameters, and those it can, both sorted.

    Args:
        obj: A registered function or class.
        names: Keyword names a caller means to pass.
        positional: How many leading arguments the caller fills by position (not parameters).
        context: Keyword names the caller supplies itself (``rng``, ``weights``).

    Nothing is unknown when ``obj`` takes ``**kwargs`` or has no readable signature.
    """
    found = _signature_of(obj)
    if found is None:
        return [], []
    params = list(found[0].parameters.values())
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return [], []
    keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    takes = {p.name for p in params[positional:] if p.kind in keyword and p.name not in context}
    known = sorted(n for n in takes if not n.startswith("_"))
    return sorted(set(names) - takes), known


def signature_model(obj: object, name: str, context: Collection[str] = ()) -> type[BaseModel] | None:
    """A pydantic model of ``obj``'s keyword-only parameters (a class: its constructor's).

    Args:
        obj: A registered function or class.
        name: Used to name the model.
        context: Keyword names the caller supplies (``rng``, ``weights``), not parameters.

    Returns:
        The model (unknown keys forbidden unless ``obj`` takes ``**kwargs``), or ``None`` for an
        object that is not callable.
    """
    found = _signature_of(obj)
    if found is None:
        return None
    signature, function = found
    try:
        hints = typing.get_type_hints(function, include_extras=True) if function is not None else {}
    except Exception:  # annotations naming what the module cannot resolve: read them as Any
        hints = {}
    fields: dict[str, Any] = {}
    open_ended = False
    for param in signature.parameters.values():
        if param.kind is param.VAR_KEYWORD:
            open_ended = True
        if (
            param.kind is not param.KEYWORD_ONLY
            or param.name in context
            or param.name.startswith("_")
        ):
            continue
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints.get(param.name, Any), default)
    config = ConfigDict(
        extra="allow" if open_ended else "forbid",
        arbitrary_types_allowed=True,
        protected_namespaces=(),
        allow_inf_nan=False,
    )
    with warnings.catch_warnings():  # a parameter may shadow a BaseModel attribute (``copy``)
        warnings.simplefilter("ignore")
        return create_model(f"{name}_params", __config__=config, **fields)


def check_scalar_params(model: type[BaseModel] | None, params: Mapping[str, object]) -> None:
    """Check the plain values (numbers, strings, booleans) among ``params`` against the fields
    of ``model`` that they name: their declared types and ranges. Other values (arrays,
    archives) and names ``model`` lacks are left to the callee.

    Raises:
        ParameterError: Naming the first bad key and what is wrong with it.
    """
    if model is None:
        return
    fields = model.model_fields
    plain = {
        key: value
        for key, value in params.items()
        if key in fields and isinstance(value, (bool, int, float, str))
    }
    if not plain:
        return
    check_params(_plain_model(model, tuple(sorted(plain))), plain)


@functools.lru_cache(maxsize=256)
def _plain_model(model: type[BaseModel], keys: tuple[str, ...]) -> type[BaseModel]:
    """The fields ``keys`` of ``model`` as a model of their own (built once per pair)."""
    fields = model.model_fields
    config = ConfigDict(arbitrary_types_allowed=True, protected_namespaces=())
    definitions: dict[str, Any] = {key: (fields[key].annotation, fields[key]) for key in keys}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_model(f"{model.__name__}_plain", __config__=config, **definitions)


def check_params(model: type[BaseModel] | None, params: Mapping[str, object]) -> dict[str, Any]:
    """Validate ``params`` against ``model``; returns the given keys with normalised values.

    Raises:
        ParameterError: Naming the first bad key: unknown, missing, wrong type or out of range.
    """
    if not isinstance(params, Mapping):
        raise ParameterError("", f"expected a mapping of parameters, got {params!r}")
    if model is None:
        if params:
            raise ParameterError(str(next(iter(params))), "unknown parameter (takes none)")
        return {}
    try:
        validated = model.model_validate(dict(params))
    except ValidationError as error:
        errors = error.errors()
        # Of one key's errors (one per member of a union), the one that got deepest says most.
        same = [e for e in errors if e["loc"][:1] == errors[0]["loc"][:1]]
        first = max(same, key=lambda e: len(e["loc"]))
        key = str(first["loc"][0]) if first["loc"] else ""  # not the union member's tag
        if first["type"] == "extra_forbidden":
            known = ", ".join(model.model_fields) or "none"
            raise ParameterError(key, f"unknown parameter (known: {known})") from None
        if first["type"] == "missing":
            raise ParameterError(key, "required parameter is missing") from None
        message = first["msg"].removeprefix("Value error, ")
        raise ParameterError(
            key, f"{message[:1].lower()}{message[1:]} (got {shown_value(first.get('input'))})"
        ) from None
    given = validated.model_dump(exclude_unset=True)
    return {key: given.get(key, value) for key, value in params.items()}


def shown_value(value: object) -> str:
    """``repr(value)`` for an error message, cut to its start when long, so that a value pasted
    by mistake stays a line: ``'xxx...' (100002 characters)``."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


_BOUNDS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))


def _bounds(metadata: Iterable[object]) -> list[str]:
    parts = []
    for item in metadata:
        nested = getattr(item, "metadata", None)  # a FieldInfo inside Annotated[...]
        if isinstance(nested, list):
            parts += _bounds(nested)
            continue
        for attr, symbol in _BOUNDS:
            value = getattr(item, attr, None)
            if value is not None:
                parts.append(
                    f"{symbol} {value:g}" if isinstance(value, float) else f"{symbol} {value}"
                )
    return parts


def _type_text(annotation: object) -> tuple[str, list[str]]:
    """A plain name for an annotation (``float``, ``int | None``, ``tuple[float, float]``) and
    the bounds found in it."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        text, bounds = _type_text(args[0])
        return text, bounds + _bounds(args[1:])
    if origin in (typing.Union, types.UnionType):
        parts = [_type_text(arg) for arg in args]
        return " | ".join(t for t, _ in parts), [b for _, bs in parts for b in bs]
    if origin is typing.Literal:
        return " | ".join(repr(arg) for arg in args), []
    if annotation is Any:
        return "any", []
    if annotation is type(None):
        return "None", []
    if origin is not None:
        inner = [_type_text(arg)[0] for arg in args]
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(inner)}]", []
    return getattr(annotation, "__name__", str(annotation)), []


def describe_params(model: type[BaseModel] | None) -> list[str]:
    """Plain text of each parameter of a model: ``fraction: float = 0.25 (> 0, <= 1)``."""
    if model is None:
        return []
    items = []
    for key, field in model.model_fields.items():
        text, bounds = _type_text(field.annotation)
        text = f"{key}: {text}"
        if not field.is_required():
            text += f" = {field.default!r}"
        bounds += _bounds(field.metadata)
        items.append(f"{text} ({', '.join(bounds)})" if bounds else text)
    return items


def pack_pieces(pieces: list[str], *, indent: int, width: int = 100) -> str:
    """Pieces joined by commas (a semicolon before ``needs ...``), wrapped between pieces,
    never inside one, and indented."""
    lines: list[str] = []
    for piece in pieces:
        sep = ";" if piece.startswith("needs ") else ","
        if lines and len(lines[-1]) + len(piece) + 2 <= width - indent:
            lines[-1] += f"{sep} {piece}"
        else:
            if lines:
                lines[-1] += sep
            lines.append(piece)
    return "\n".join(" " * indent + line for line in lines)
