"""Compare two run directories' logs, ignoring wall-clock columns.

A refactoring that must not change results is checked by running the same preset before and
after it and comparing ``metrics.jsonl``, ``tasks.jsonl``, ``ratings.jsonl`` (every key whose
name starts with ``seconds`` dropped) and ``lineage.csv`` line by line.

Usage::

    python benchmarks/compare_logs.py BEFORE AFTER [BEFORE2 AFTER2 ...]

Prints one line per pair (``same`` or the first difference) and exits 1 if any pair differs.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

FILES = ("metrics.jsonl", "tasks.jsonl", "ratings.jsonl", "lineage.csv")


def _clean(value: object) -> object:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if not str(k).startswith("seconds")}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def first_difference(before: Path, after: Path) -> str | None:
    """The first difference between two run directories' logs, or ``None``."""
    for name in FILES:
        a, b = before / name, after / name
        if a.exists() != b.exists():
            return f"{name}: present in only one"
        if not a.exists():
            continue
        lines_a, lines_b = a.read_text().splitlines(), b.read_text().splitlines()
        if len(lines_a) != len(lines_b):
            return f"{name}: {len(lines_a)} lines vs {len(lines_b)}"
        for i, (x, y) in enumerate(zip(lines_a, lines_b, strict=True)):
            if name.endswith(".jsonl"):
                cx, cy = _clean(json.loads(x)), _clean(json.loads(y))
                if cx != cy:
                    assert isinstance(cx, dict) and isinstance(cy, dict)
                    keys = sorted(k for k in set(cx) | set(cy) if cx.get(k) != cy.get(k))
                    return f"{name} line {i + 1}: {keys[:6]} e.g. {keys[0]}: {cx.get(keys[0])!r} vs {cy.get(keys[0])!r}"
            elif x != y:
                return f"{name} line {i + 1}: {x[:80]!r} vs {y[:80]!r}"
    return None


def main() -> None:
    paths = [Path(p) for p in sys.argv[1:]]
    if not paths or len(paths) % 2:
        print("usage: compare_logs.py BEFORE AFTER [BEFORE2 AFTER2 ...]", file=sys.stderr)
        raise SystemExit(2)
    differ = False
    for before, after in zip(paths[::2], paths[1::2], strict=True):
        diff = first_difference(before, after)
        differ |= diff is not None
        print(f"{after}: {'same' if diff is None else diff}")
    raise SystemExit(1 if differ else 0)


if __name__ == "__main__":
    main()
