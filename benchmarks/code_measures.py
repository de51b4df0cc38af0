"""Code measures of the package, for the targets of a refactoring (written to JSON).

Counted over every module of ``redqueen/``:

- ``files_over_400``: modules longer than 400 lines;
- ``longest_bodies``: the longest function bodies outside ``tinycoder/``, in lines from the
  first statement after the docstring to the last line of the function (signature and
  docstring not counted);
- ``radon``: blocks of cyclomatic grade D, E or F (``radon.complexity.cc_visit``);
- ``any_in_signatures``: ``Any`` in the parameter and return annotations of every function and
  method, private names included, and in the annotations of class attributes;
- ``tiny_config_imports_torch``: whether ``load_config("tiny")`` in a fresh interpreter imports
  ``torch`` (and ``transformers``).

Usage::

    python benchmarks/code_measures.py [--package DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_public_any import count_any  # noqa: E402 (the one counter, beside its ratchet)


def any_in_signatures(tree: ast.Module) -> int:
    """``Any`` in every function's signature and every class attribute annotation (the
    counter of the ratchet, ``tests/test_public_any.py``)."""
    return count_any(ast.unparse(tree))


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of a function's body, its docstring left out."""
    body = node.body
    if (
        len(body) > 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    end = node.end_lineno or body[-1].lineno
    return end - body[0].lineno + 1


def measure(package: Path) -> dict[str, object]:
    files = sorted(package.rglob("*.py"))
    over, bodies, graded, any_total = [], [], [], 0
    for path in files:
        text = path.read_text()
        rel = str(path.relative_to(package.parent))
        lines = len(text.splitlines())
        if lines > 400:
            over.append((rel, lines))
        tree = ast.parse(text)
        any_total += any_in_signatures(tree)
        if "tinycoder" not in path.parts:
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    bodies.append((body_lines(node), f"{rel}:{node.name}"))
        for block in cc_visit(text):
            rank = cc_rank(block.complexity)
            if rank in "DEF":
                graded.append((rank, block.complexity, f"{rel}:{block.fullname}"))
    bodies.sort(reverse=True)
    return {
        "files_over_400": len(over),
        "files_over_400_list": sorted(over, key=lambda item: -item[1]),
        "longest_bodies": bodies[:10],
        "bodies_over_60": sum(1 for n, _ in bodies if n > 60),
        "radon_D": sum(1 for r, _, _ in graded if r == "D"),
        "radon_E_or_worse": sum(1 for r, _, _ in graded if r in "EF"),
        "radon_blocks": sorted(graded, key=lambda item: -item[1]),
        "any_in_signatures": any_total,
    }


_PROBE = (
    "import sys; from redqueen.experiments.config import load_config; load_config('tiny'); "
    "print(int('torch' in sys.modules), int('transformers' in sys.modules))"
)


def torch_on_load(package: Path) -> dict[str, bool]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        check=True,
        cwd=package.parent,
        env={"PYTHONPATH": str(package.parent), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    ).stdout.split()
    return {"torch": out[0] == "1", "transformers": out[1] == "1"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, default=ROOT / "redqueen")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = measure(args.package)
    result["tiny_config_imports"] = torch_on_load(args.package)
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(
        f"files over 400: {result['files_over_400']}; longest body: {result['longest_bodies'][0]}; "
        f"bodies over 60: {result['bodies_over_60']}; radon D: {result['radon_D']}, "
        f"E+: {result['radon_E_or_worse']}; Any in signatures: {result['any_in_signatures']}; "
        f"load_config('tiny') imports: {result['tiny_config_imports']}"
    )


if __name__ == "__main__":
    main()
