"""Parsing and comparing Python literals without ever evaluating model text.

Gold outputs are ``repr`` strings and answers are model text; both are read with
:func:`ast.literal_eval` only, so nothing a model writes can run in the trainer's process.
"""

from __future__ import annotations

import ast
import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection

__all__ = ["LiteralParseError", "literal_equal", "parse_args", "parse_literal", "values_equal"]

#: Longest text the parsers accept (a guard against pathological inputs).
MAX_LITERAL_CHARS = 100_000
#: Text that may denote a value with no literal form: an int in base 2, 8 or 16 (the only form
#: in which a literal denotes an int longer than the interpreter writes in decimal,
#: ``sys.get_int_max_str_digits``), a float with an exponent or 309 digits (``1e999`` and
#: ``1.e999`` are ``inf``, whose repr is not a literal), or ``...`` (whose repr is
#: ``Ellipsis``). Searched in the text without underscores, which may split a number's digits.
_MAY_LACK_A_FORM = re.compile(r"0[xXoObB]|\d\.?[eE]|\d{309}|\.\.\.")
#: Bits past which an int may be too long to write in decimal (4,300 digits, the default limit).
_LONG_INT_BITS = 14_000


class LiteralParseError(ValueError):
    """Raised when text is not a Python literal (or a literal argument list)."""


def parse_literal(text: str) -> object:
    """Parse one Python literal (numbers, strings, bytes, tuples, lists, dicts, sets, None, bools).

    Surrounding whitespace is ignored. ``set()`` (the repr of an empty set) is accepted.

    Args:
        text: The literal's source, e.g. a gold output ``"[1, 2]"`` or a model's answer.

    Raises:
        LiteralParseError: If ``text`` is not a string, is too long, or is not a literal.
    """
    if not isinstance(text, str):
        raise LiteralParseError(f"expected a string literal source, got {type(text).__name__}")
    if len(text) > MAX_LITERAL_CHARS:
        raise LiteralParseError(f"literal longer than {MAX_LITERAL_CHARS} characters")
    stripped = text.strip()
    if stripped == "set()":
        return set()
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise LiteralParseError(f"not a Python literal: {_preview(stripped)}") from exc
    _check_writable(value, stripped)
    return value


def parse_args(text: str) -> tuple[tuple[object, ...], dict[str, object]]:
    """Parse an argument list as written inside ``f(...)``: literals, optionally ``name=literal``.

    ``"[3, 1], 'ab'"`` gives ``(([3, 1], 'ab'), {})``; ``"x=2"`` gives ``((), {"x": 2})``.
    Star-arguments and non-literal expressions are refused, so an answer cannot smuggle code.

    Args:
        text: The argument source.

    Raises:
        LiteralParseError: If ``text`` is not a literal argument list.
    """
    if not isinstance(text, str):
        raise LiteralParseError(f"expected argument source, got {type(text).__name__}")
    if len(text) > MAX_LITERAL_CHARS:
        raise LiteralParseError(f"argument list longer than {MAX_LITERAL_CHARS} characters")
    try:
        tree = ast.parse(f"f({text.strip()}\n)", mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise LiteralParseError(f"not an argument list: {_preview(text)}") from exc
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise LiteralParseError(f"not an argument list: {_preview(text)}")
    args: list[object] = []
    for node in call.args:
        if isinstance(node, ast.Starred):
            raise LiteralParseError("star-arguments are not allowed in an argument list")
        args.append(_literal_node(node, text))
    kwargs: dict[str, object] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise LiteralParseError("**-arguments are not allowed in an argument list")
        kwargs[keyword.arg] = _literal_node(keyword.value, text)
    _check_writable((args, kwargs), text)
    return tuple(args), kwargs


def _check_writable(value: object, text: str) -> None:
    """Refuse a value that cannot be written back as a literal, so that every caller that writes
    one (a canonical input, the round trip of a gold output) can: ``0x`` and 4,000 digits is an
    int too long to write in decimal (its ``repr`` raises), ``1e999`` is ``inf`` and ``...`` is
    ``Ellipsis`` (their ``repr`` is not a literal)."""
    if _MAY_LACK_A_FORM.search(text.replace("_", "")) is None:
        return
    stack = [value]
    while stack:
        item = stack.pop()
        if item is Ellipsis:
            lacking = True
        elif isinstance(item, float):
            lacking = not math.isfinite(item)
        elif isinstance(item, complex):
            lacking = not (math.isfinite(item.real) and math.isfinite(item.imag))
        elif isinstance(item, int):
            lacking = item.bit_length() > _LONG_INT_BITS and not _decimal_writes(item)
        else:
            lacking = False
            if isinstance(item, list | tuple | set | frozenset):
                stack.extend(item)
            elif isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
        if lacking:
            raise LiteralParseError(f"literal has no literal form: {_preview(text)}")


def _decimal_writes(number: int) -> bool:
    try:
        repr(number)
    except ValueError:
        return False
    return True


def format_args(args: tuple[object, ...], kwargs: dict[str, object]) -> str:
    """The canonical source of an argument list (the inverse of :func:`parse_args`)."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return ", ".join(parts)


def values_equal(a: object, b: object) -> bool:
    """Equality of values and of their types, all the way down; never raises.

    Python's ``==`` makes ``True == 1 == 1.0 == (1+0j)`` and so ``{True, 2} == {1, 2}``; an
    answer of another type is another answer (a program that returns ``1.0`` did not return
    ``1``), so here two values are equal only when their types are the same at every level:
    items of lists and tuples, dict keys and values, set members. NaN equals NaN (a float's or
    a complex part's), so a value always equals its own copy.
    """
    if type(a) is not type(b):
        return False
    # From here ``b`` is of ``a``'s type: each isinstance of ``b`` below only tells the checker.
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, complex) and isinstance(b, complex):
        return values_equal(a.real, b.real) and values_equal(a.imag, b.imag)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        keys = _stored_keys(a, b)
        return keys is not None and all(values_equal(a[k], b[keys[k]]) for k in a)
    if isinstance(a, set | frozenset) and isinstance(b, set | frozenset):
        return _stored_keys(a, b) is not None
    try:
        return bool(a == b)
    except Exception:
        return False


def _stored_keys(a: Collection[object], b: Collection[object]) -> dict[object, object] | None:
    """For each key (or member) of ``a``, the one ``b`` holds, when all are of equal types.

    Keys that are ``==`` share a hash, so ``b``'s own key is found by lookup: ``{1: 0}`` holds
    ``1`` where ``{True: 0}`` holds ``True``.
    """
    if len(a) != len(b):
        return None
    held = {key: key for key in b}
    try:
        keys = {key: held[key] for key in a}
    except (KeyError, TypeError):
        return None
    return keys if all(values_equal(k, keys[k]) for k in a) else None


def literal_equal(a: str, b: str) -> bool:
    """Whether two literal sources denote equal values (``"[1, 2]"`` vs ``"[1,2]"``: True).

    Types count (:func:`values_equal`): ``"1"`` does not equal ``"1.0"`` nor ``"True"``, a list
    never equals a tuple; text that is not a literal is equal to nothing.
    """
    try:
        return values_equal(parse_literal(a), parse_literal(b))
    except LiteralParseError:
        return False


def _literal_node(node: ast.expr, text: str) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "set"
            and not node.args
            and not node.keywords
        ):
            return set()
        raise LiteralParseError(f"argument is not a literal: {_preview(text)}") from exc


def _preview(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
