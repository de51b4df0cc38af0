"""``Any`` in public signatures may only go down: a ratchet against ``tests/any_baseline.json``.

A counted signature is that of a function, method or class (its ``__init__``) named in the
module's ``__all__``, or, in a module without one, whose name does not start with ``_``. Private
modules count too: their unprefixed names are the seams between the package's modules. Each
``Any`` in a parameter or return annotation counts once. A module may not count more than its
baseline; when it counts fewer, lower the baseline so that the gain is kept.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "redqueen"
BASELINE = Path(__file__).with_name("any_baseline.json")


def _exported(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            value = node.value
            if isinstance(value, ast.List | ast.Tuple):
                return {e.value for e in value.elts if isinstance(e, ast.Constant)}
    return set()


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


def _signature_any(func: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = func.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return sum(_any_in(p.annotation) for p in params if p is not None) + _any_in(func.returns)


def count_public_any(source: str, module: str) -> int:
    """``Any`` annotations in the public signatures of one module's source."""
    tree = ast.parse(source)
    exported = _exported(tree)

    def public(name: str) -> bool:
        return name in exported if exported else not name.startswith("_")

    total = 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and public(node.name):
            total += _signature_any(node)
        elif isinstance(node, ast.ClassDef) and public(node.name):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    item.name == "__init__" or not item.name.startswith("_")
                ):
                    total += _signature_any(item)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    if not item.target.id.startswith("_"):
                        total += _any_in(item.annotation)
    return total


def counts(package: Path = PACKAGE) -> dict[str, int]:
    """Module name -> its count, for every module with at least one."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        n = count_public_any(path.read_text(), module)
        if n:
            found[module] = n
    return found


def test_public_any_does_not_grow() -> None:
    baseline: dict[str, int] = json.loads(BASELINE.read_text())
    now = counts()
    grew = {m: (baseline.get(m, 0), n) for m, n in now.items() if n > baseline.get(m, 0)}
    assert not grew, (
        f"new Any in public signatures (module: (baseline, now)): {grew}; "
        "say what the seam carries with a Protocol or a concrete type"
    )
    fell = {m: (b, now.get(m, 0)) for m, b in baseline.items() if now.get(m, 0) < b}
    assert not fell, f"fewer Any than the baseline (module: (baseline, now)): {fell}; lower {BASELINE.name}"


def test_counter_sees_public_signatures_only() -> None:
    source = (
        "from typing import Any\n"
        "__all__ = ['f', 'C']\n"
        "def f(x: Any, *a: Any, **k: 'dict[str, Any]') -> Any: ...\n"
        "def g(x: Any) -> Any: ...\n"
        "class C:\n"
        "    size: Any\n"
        "    def __init__(self, x: typing.Any) -> None: ...\n"
        "    def _hidden(self, x: Any) -> Any: ...\n"
        "    def shown(self) -> list[Any]: ...\n"
    )
    assert count_public_any(source, "redqueen.pkg._private") == 7
    assert count_public_any(source.replace("__all__ = ['f', 'C']\n", ""), "redqueen.pkg.mod") == 9
    # a private module's unprefixed names are seams between modules: they count too
    assert count_public_any(source.replace("__all__ = ['f', 'C']\n", ""), "redqueen._pkg") == 9
