"""The base of every settings object: unknown keys are errors, values are frozen and finite."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import UnionType
from typing import ClassVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator
from typing_extensions import Self

__all__ = ["Settings", "non_finite"]


class Settings(BaseModel):
    """A frozen, validated group of settings: a configuration section and the object the
    runtime class takes whole, so that each default and range is written once, here.

    Unknown keys are errors, values are immutable once validated, and every number is finite
    (``.inf`` and ``.nan`` are refused, in free-form mappings too). A free-form mapping
    (:attr:`_FREE_FORM`: ``environment.options``, ...) is handed to code that may turn a string
    into a number (``float("1e400")`` is ``inf``), so there a string that reads as a non-finite
    number is refused as well.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )
    #: Fields holding free-form mappings, whose numeric strings are checked too.
    _FREE_FORM: ClassVar[tuple[str, ...]] = ()

    def updated(self, **changes: object) -> Self:
        """A copy with ``changes`` applied and checked again (a frozen object is never edited).

        Raises:
            pydantic.ValidationError: (a ``ValueError``) naming a refused field.
        """
        return self.model_validate({**dict(self), **changes})

    @model_validator(mode="before")
    @classmethod
    def _finite_numbers(cls, data: object) -> object:
        if not isinstance(data, Mapping):
            return data
        for key, value in data.items():
            bad = non_finite(value, str(key), strings=key in cls._FREE_FORM)
            if bad is not None:
                path, shown = bad
                raise ValueError(f"{path}: must be a finite number (got {shown})")
            field = cls.model_fields.get(str(key))
            if isinstance(value, bool) and field is not None and _number_not_bool(field.annotation):
                # YAML's true/false would otherwise pass as 1/0 (``steps: true`` runs one step).
                raise ValueError(f"{key}: must be a number, not {str(value).lower()}")
        return data


def _number_not_bool(annotation: object) -> bool:
    """Whether a field's type is a number (``int``, ``float``, optional or not) and not ``bool``."""
    kinds = (
        set(get_args(annotation)) if get_origin(annotation) in (Union, UnionType) else {annotation}
    )
    kinds.discard(type(None))
    return bool(kinds) and kinds <= {int, float}


def non_finite(value: object, path: str, *, strings: bool = False) -> tuple[str, str] | None:
    """Dotted path and text of the first non-finite number in plain data (with ``strings``,
    of a string that ``float`` reads as one too), or ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return path, repr(value)
    if strings and isinstance(value, str) and not _finite_text(value):
        return path, repr(value)
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = non_finite(item, f"{path}.{key}", strings=strings)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = non_finite(item, f"{path}.{index}", strings=strings)
            if found is not None:
                return found
    return None


def _finite_text(text: str) -> bool:
    """Whether ``text`` is not a number, or a finite one (``"1e400"``, ``"nan"``, ``"-inf"`` are not)."""
    try:
        return math.isfinite(float(text))
    except (ValueError, OverflowError):
        return True
