"""Canonical form of a program: the key on which the corpus is deduplicated.

Two programs that differ only in the names of their parameters, locals, comprehension
variables and helper functions, or in formatting (spaces, blank lines, parentheses, quotes),
teach a model the same thing. :func:`canonical_form` renames every name the program binds in
order of first appearance (helpers ``h0, h1, ...``, everything else ``v0, v1, ...``; the entry
function keeps its name ``f``), then dumps the abstract syntax tree without positions, so all
of those variants share one form. Builtins, attributes and constants are kept as written.
"""

from __future__ import annotations

import ast
import builtins
import hashlib

__all__ = ["ENTRY", "canonical_form", "canonical_key"]

#: Name of the entry function every task program defines.
ENTRY = "f"
_BUILTINS = frozenset(dir(builtins))


class _Renamer(ast.NodeTransformer):
    """Renames bound names in order of first appearance (functions first, so calls agree)."""

    def __init__(self, functions: list[str]) -> None:
        self.names: dict[str, str] = {}
        for name in functions:
            if name != ENTRY and name not in self.names:
                self.names[name] = f"h{len(self.names)}"

    def _bind(self, name: str) -> str:
        if name == ENTRY:
            return name
        if name not in self.names:
            self.names[name] = f"v{len(self.names)}"
        return self.names[name]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._bind(node.name)
        self.generic_visit(node)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._bind(node.arg)
        node.annotation = None
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        # A builtin read before anything binds its name stays a builtin; bound names are renamed.
        if isinstance(node.ctx, ast.Load) and node.id not in self.names and node.id in _BUILTINS:
            return node
        node.id = self._bind(node.id)
        return node


def canonical_form(source: str) -> str:
    """The program's syntax tree with canonical names and no formatting, as text.

    Raises:
        SyntaxError: If ``source`` does not parse.
    """
    tree = ast.parse(source)
    functions = [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    tree = _Renamer(functions).visit(tree)
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def canonical_key(source: str) -> bytes:
    """A 16-byte digest of :func:`canonical_form` (compact enough to hold millions in a set).

    Raises:
        SyntaxError: If ``source`` does not parse.
    """
    return hashlib.blake2b(canonical_form(source).encode(), digest_size=16).digest()
