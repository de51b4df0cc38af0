"""YAML reading that refuses a mapping with the same key twice (PyYAML keeps the last)."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["safe_load"]


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader whose mappings raise on a repeated key, naming it and its line."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: the base constructor reports it
                break
            if repeated:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"key {key!r} appears twice", key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def safe_load(text: str | bytes) -> object:
    """``yaml.safe_load``, except that a key given twice in one mapping is an error.

    Raises:
        yaml.YAMLError: On invalid YAML or a repeated key (its ``problem_mark`` is the
            repeated key's position).
    """
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
