"""Program complexity metrics (:func:`complexity`), a behaviour descriptor for proposed tasks."""

from __future__ import annotations

import ast

__all__ = ["COMPLEXITY_KEYS", "complexity"]

#: Keys of the dictionary :func:`complexity` returns.
COMPLEXITY_KEYS: tuple[str, ...] = (
    "ast_depth",
    "cyclomatic",
    "halstead_volume",
    "halstead_difficulty",
    "halstead_effort",
    "lines",
    "n_variables",
)


def _depth(node: ast.AST) -> int:
    """Depth of the AST (iterative, so deeply nested programs cannot overflow the stack)."""
    best, stack = 0, [(node, 1)]
    while stack:
        current, depth = stack.pop()
        best = max(best, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(current))
    return best


def complexity(program: str) -> dict[str, float]:
    """Structural and Halstead complexity of a program, used to describe what teachers propose.

    Cyclomatic complexity (summed over blocks) and Halstead volume/difficulty/effort come from
    ``radon`` (imported here, so the executor works where radon is not installed); AST depth,
    non-blank source lines and distinct assigned names come from :mod:`ast`.

    Args:
        program: Program text.

    Returns:
        A dict with the keys in :data:`COMPLEXITY_KEYS` (floats).

    Raises:
        SyntaxError: If ``program`` does not parse.
        ImportError: If ``radon`` is not installed.
    """
    from radon.complexity import cc_visit
    from radon.metrics import h_visit

    tree = ast.parse(program)
    blocks = cc_visit(program)
    # Methods are reported inside their classes too; count functions and methods once.
    cyclomatic = 0
    for block in blocks:
        if hasattr(block, "methods"):
            cyclomatic += sum(m.complexity for m in block.methods)
        else:
            cyclomatic += block.complexity
    halstead = h_visit(program).total
    names = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    names |= {
        a.arg
        for n in ast.walk(tree)
        if isinstance(n, ast.arguments)
        for a in (*n.posonlyargs, *n.args, *n.kwonlyargs)
    }
    return {
        "ast_depth": float(_depth(tree)),
        "cyclomatic": float(max(cyclomatic, 1)),
        "halstead_volume": float(halstead.volume),
        "halstead_difficulty": float(halstead.difficulty),
        "halstead_effort": float(halstead.effort),
        "lines": float(sum(1 for line in program.splitlines() if line.strip())),
        "n_variables": float(len(names)),
    }
