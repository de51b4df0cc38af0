"""``Any`` in signatures may only go down: a ratchet against ``tests/any_baseline.json``.

Every signature counts, private names and private modules included: each ``Any`` in a
parameter or return annotation of any function or method, and in the annotation of a class
attribute, counts once (the same count as ``benchmarks/code_measures.py``). A module may not
count more than its baseline; when it counts fewer, lower the baseline so that the gain is kept.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "redqueen"
BASELINE = Path(__file__).with_name("any_baseline.json")


def _any_in(annotation: ast.expr | None) -> int:
    if annotation is None:
        return 0
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return 0
    return sum(
        1
        for node in ast.walk(annotation)
        if (isinstance(node, ast.Name) and node.id == "Any")
        or (isinstance(node, ast.Attribute) and node.attr == "Any")
    )


def count_any(source: str) -> int:
    """``Any`` annotations in every signature and class attribute of one module's source."""
    total = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            total += sum(_any_in(p.annotation) for p in params if p is not None)
            total += _any_in(node.returns)
        elif isinstance(node, ast.ClassDef):
            total += sum(_any_in(i.annotation) for i in node.body if isinstance(i, ast.AnnAssign))
    return total


def counts(package: Path = PACKAGE) -> dict[str, int]:
    """Module name -> its count, for every module with at least one."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        n = count_any(path.read_text())
        if n:
            found[module] = n
    return found


def test_any_does_not_grow() -> None:
    baseline: dict[str, int] = json.loads(BASELINE.read_text())
    now = counts()
    grew = {m: (baseline.get(m, 0), n) for m, n in now.items() if n > baseline.get(m, 0)}
    assert not grew, (
        f"new Any in signatures (module: (baseline, now)): {grew}; "
        "say what the seam carries with a Protocol or a concrete type"
    )
    fell = {m: (b, now.get(m, 0)) for m, b in baseline.items() if now.get(m, 0) < b}
    assert not fell, f"fewer Any than the baseline (module: (baseline, now)): {fell}; lower {BASELINE.name}"


def test_counter_sees_every_signature() -> None:
    source = (
        "from typing import Any\n"
        "__all__ = ['f', 'C']\n"
        "def f(x: Any, *a: Any, **k: 'dict[str, Any]') -> Any: ...\n"
        "def _g(x: Any) -> Any: ...\n"
        "class C:\n"
        "    size: Any\n"
        "    _cache: 'list[Any]'\n"
        "    def __init__(self, x: typing.Any) -> None: ...\n"
        "    def _hidden(self, x: Any) -> Any: ...\n"
        "    def shown(self) -> list[Any]: ...\n"
        "    def nested(self) -> None:\n"
        "        def inner(y: Any) -> None: ...\n"
    )
    assert count_any(source) == 13
