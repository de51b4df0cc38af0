"""Renamed programs: new names, the same canonical form, the same outputs in the sandbox."""

from __future__ import annotations

import ast
import builtins
import random

from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.corpus import render_lean_documents
from redqueen.tinycoder.rename import rename_identifiers
from redqueen.verifiers import Executor, validate_programs


def test_renamed_programs_compute_the_same_outputs(small_splits) -> None:
    splits, _ = small_splits
    entries = splits.train[:60] + splits.ood
    rng = random.Random(5)
    renamed = [rename_identifiers(e.program, rng) for e in entries]
    assert sum(r != e.program for r, e in zip(renamed, entries, strict=True)) >= 0.9 * len(entries)
    with Executor(workers=2) as executor:
        verdicts = validate_programs(
            [(r, list(e.inputs)) for r, e in zip(renamed, entries, strict=True)], executor
        )
    for source, entry, verdict in zip(renamed, entries, verdicts, strict=True):
        assert verdict.ok and verdict.outputs == entry.outputs, source
        assert canonical_key(source) == canonical_key(entry.program)
        defined = {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}
        assert "f" in defined and not (defined - {"f"}) & set(dir(builtins))


def test_attributes_and_keyword_arguments_keep_their_names() -> None:
    source = (
        "def g(key):\n    return key.upper()\n\n\n"
        "def f(xs, key):\n    return sorted(xs, key=abs)[:1] + [g(key).lower()]\n"
    )
    out = rename_identifiers(source, random.Random(0))
    assert "key=abs" in out and ".upper()" in out and ".lower()" in out
    assert "def f(" in out and "def g(" not in out
    namespace: dict = {}
    exec(out, namespace)  # noqa: S102 - a fixed test program
    assert namespace["f"]([3, -1], "ab") == [-1, "ab"]


def test_what_it_cannot_rename_safely_comes_back_unchanged() -> None:
    source = "def f(a, n=3):\n    return g(n=a)\n\n\ndef g(n=1):\n    return n\n"
    assert rename_identifiers(source, random.Random(0)) == source
    assert rename_identifiers("def f(:\n", random.Random(0)) == "def f(:\n"


def test_lean_documents_rename_a_share_of_their_programs(small_splits) -> None:
    splits, _ = small_splits
    entries = splits.train[:80]
    plain = render_lean_documents(entries, seed=1, full_share=0.0)
    mixed = render_lean_documents(entries, seed=1, full_share=0.0, rename_share=0.5)
    changed = sum(a != b for a, b in zip(plain, mixed, strict=True))
    assert 20 <= changed <= 60
    assert render_lean_documents(entries, seed=1, full_share=0.0, rename_share=0.0) == plain
