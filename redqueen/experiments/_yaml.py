"""YAML reading that refuses a mapping with the same key twice (PyYAML keeps the last), and
documents too big to be a configuration, before anything is built from them.

Aliases let a few hundred bytes stand for billions of values ("billion laughs"): PyYAML builds
them as shared objects, but everything that walks the result afterwards (validation, dumping
the resolved ``config.yaml``) walks the expansion. So the document is first composed into its
node graph, where an alias is one shared node, and the size of its expansion is counted on that
graph; only a document within :data:`MAX_NODES` is turned into Python objects.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["MAX_BYTES", "MAX_NODES", "YAMLLimitError", "safe_load"]

#: Largest YAML text read (a resolved configuration is a few kilobytes).
MAX_BYTES = 1 << 20
#: Most nodes a document may have once its aliases are expanded.
MAX_NODES = 100_000


class YAMLLimitError(yaml.YAMLError):
    """A document over :data:`MAX_BYTES`, or whose aliases expand past :data:`MAX_NODES`."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader whose mappings raise on a repeated key, naming it and its line, and whose
    integers too long for Python to convert are YAML errors at their line."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return int(super().construct_yaml_int(node))
        except ValueError as error:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"an integer too long to read ({str(error).split(':')[0]})",
                node.start_mark,
            ) from None

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
                    "while constructing a mapping",
                    node.start_mark,
                    f"key {key!r} appears twice",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def safe_load(text: str | bytes) -> object:
    """``yaml.safe_load``, except that a key given twice in one mapping is an error.

    Raises:
        yaml.YAMLError: On invalid YAML or a repeated key (its ``problem_mark`` is the
            repeated key's position).
        YAMLLimitError: On a text over :data:`MAX_BYTES`, an alias that contains itself, or
            aliases that expand past :data:`MAX_NODES` nodes (checked before expanding).
    """
    if len(text) > MAX_BYTES:
        raise YAMLLimitError(
            f"{len(text)} bytes, more than the {MAX_BYTES} a configuration may have"
        )
    loader = _UniqueKeyLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise YAMLLimitError("nested too deeply") from None
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_expansion(root: yaml.Node) -> None:
    """Count the nodes of ``root`` with every alias expanded, without expanding any."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            active.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[key] > MAX_NODES:
                raise YAMLLimitError(
                    f"aliases expand to more than {MAX_NODES} values (line {node.start_mark.line + 1}); "
                    "refused before expanding"
                )
            continue
        if key in sizes:
            continue
        if key in active:
            raise YAMLLimitError(
                f"an alias refers to its own anchor (line {node.start_mark.line + 1})"
            )
        active.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _UniqueKeyLoader.construct_yaml_int)
