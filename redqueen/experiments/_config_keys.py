"""Every configuration key with its type, default, range and meaning, read from the settings objects.

The configuration's sections are the settings objects of :mod:`redqueen.settings` (and
:class:`~redqueen.experiments.config.EnvironmentConfig`), so the reference is generated from
them and cannot drift: the type and range from each field's annotation and constraints, the
default from ``ExperimentConfig()``, the meaning from the ``Attributes:`` section of the
class's Google-style docstring (the nearest class in its MRO that documents the field).
``redqueen config keys`` prints it; the documentation site's configuration page is built from
:func:`keys_markdown`. Nothing here imports torch.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from redqueen._params import _bounds, _type_text
from redqueen.experiments.config import ExperimentConfig

__all__ = ["ConfigKey", "attribute_docs", "config_keys", "keys_markdown", "keys_text"]

_HEADER = re.compile(r"^(\s*)Attributes:\s*$")
_ENTRY = re.compile(r"^(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


@dataclass(frozen=True)
class ConfigKey:
    """One leaf key of the configuration.

    Attributes:
        key: Dotted path, e.g. ``evolution.cull_fraction`` (what ``--set`` takes).
        type: The field's type, e.g. ``float`` or ``int | None``.
        default: The default as YAML text (what ``--set key=...`` would read back).
        range: The field's declared bounds, e.g. ``>= 0, <= 1``; empty when it has none.
        meaning: The field's description from its settings object's docstring.
        section: The settings class that holds the key, e.g. ``ReplacementConfig``.
    """

    key: str
    type: str
    default: str
    range: str
    meaning: str
    section: str


def attribute_docs(cls: type) -> dict[str, str]:
    """Field name -> description from the ``Attributes:`` sections of ``cls`` and its bases.

    A subclass's description wins over a base's. Continuation lines are joined into one line.
    """
    found: dict[str, str] = {}
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in ("pydantic", "builtins"):
            continue  # BaseModel documents its own machinery, not settings
        for name, text in _parse_attributes(inspect.cleandoc(klass.__dict__.get("__doc__") or "")):
            found.setdefault(name, text)
    return found


def _parse_attributes(doc: str) -> Iterator[tuple[str, str]]:
    lines = doc.splitlines()
    for index, line in enumerate(lines):
        header = _HEADER.match(line)
        if header is None:
            continue
        indent = len(header.group(1))
        name, entry_depth = "", 0
        words: list[str] = []
        for body in lines[index + 1 :]:
            depth = len(body) - len(body.lstrip())
            if body.strip() and depth <= indent:
                break  # the next section ("Raises:") or the end of the block
            entry = _ENTRY.match(body.strip())
            if entry and (not name or depth <= entry_depth):
                if name:
                    yield name, " ".join(words)
                name, words, entry_depth = entry.group(1), [entry.group(2)], depth
            elif name and body.strip():
                words.append(body.strip())
        if name:
            yield name, " ".join(words)


def _yaml_text(value: object) -> str:
    """``value`` (plain data) as one line of YAML that reads back as ``value``."""
    if isinstance(value, dict | list):
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000).strip()
    if isinstance(value, str):
        try:
            plain = yaml.safe_load(value) == value and "\n" not in value
        except yaml.YAMLError:
            plain = False
        return value if plain and value else json.dumps(value)
    if isinstance(value, float):
        mantissa, _, exponent = repr(value).partition("e")
        if exponent and "." not in mantissa:  # YAML 1.1 reads "1e-08" as a string
            return f"{mantissa}.0e{exponent}"
    return json.dumps(value)


def _range_text(field: FieldInfo) -> str:
    metadata = list(field.metadata)
    bounds = _type_text(field.annotation)[1] + _bounds(metadata)
    bounds += [f"length >= {m.min_length}" for m in metadata if getattr(m, "min_length", None)]
    return ", ".join(bounds)


def _walk(model: BaseModel, data: dict[str, object], prefix: str) -> Iterator[ConfigKey]:
    cls = type(model)
    docs = attribute_docs(cls)
    for name, field in cls.model_fields.items():
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            nested = data[name]
            assert isinstance(nested, dict)
            yield from _walk(value, nested, f"{prefix}{name}.")
            continue
        yield ConfigKey(
            key=f"{prefix}{name}",
            type=_type_text(field.annotation)[0].replace("Ellipsis", "..."),
            default=_yaml_text(data[name]),
            range=_range_text(field),
            meaning=docs.get(name, ""),
            section=cls.__name__,
        )


def config_keys(config: ExperimentConfig | None = None) -> list[ConfigKey]:
    """Every leaf key of ``config`` (default: ``ExperimentConfig()``), in the models' field order.

    A key whose value is a settings object is a section and is walked into; every other key
    (numbers, names, lists, free-form mappings such as ``evolution.operators``) is a leaf.
    """
    config = ExperimentConfig() if config is None else config
    return list(_walk(config, config.model_dump(mode="json"), ""))


def keys_text(keys: list[ConfigKey]) -> str:
    """One line per key: ``key: type = default (range)  meaning``."""
    lines = []
    for item in keys:
        head = f"{item.key}: {item.type} = {item.default}"
        if item.range:
            head += f" ({item.range})"
        lines.append(f"{head}  {item.meaning.replace('``', '`')}".rstrip())
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def keys_markdown(keys: list[ConfigKey]) -> str:
    """A Markdown table per top-level section (the ``steps``, ``seed``, ... keys first)."""
    groups: dict[str, list[ConfigKey]] = {}
    for item in keys:
        top = item.key.split(".")[0] if "." in item.key else ""
        groups.setdefault(top, []).append(item)
    fields = ExperimentConfig.model_fields
    sections = {name: getattr(fields[name].annotation, "__name__", name) for name in groups if name}
    out = []
    for top, items in groups.items():
        title = f"`{top}:` ({sections[top]})" if top else "Top level"
        out += [f"## {title}", "", "| key | type | default | range | meaning |",
                "| --- | --- | --- | --- | --- |"]
        out += [
            f"| `{item.key}` | `{item.type}` | `{item.default}` | "  # a code span keeps its pipes
            f"{_cell(item.range)} | {_cell(item.meaning)} |"
            for item in items
        ]
        out.append("")
    return "\n".join(out)
