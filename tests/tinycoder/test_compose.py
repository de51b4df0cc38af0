"""Composed natural programs: typed, seeded, every name read, many more forms than templates."""

from __future__ import annotations

import ast
import itertools
import random

import pytest

from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.compose import ComposedGenerator
from redqueen.tinycoder.corpus import build_corpus, candidates
from redqueen.tinycoder.gold import GoldPool
from redqueen.tinycoder.handwritten import handwritten_keys
from redqueen.tinycoder.idioms import IDIOM_LEVEL, IdiomGenerator
from redqueen.verifiers import Executor


def _bound_and_read(source: str) -> tuple[set[str], set[str]]:
    tree = ast.parse(source)
    bound = {a.arg for a in tree.body[0].args.args}  # type: ignore[attr-defined]
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
    return bound, read


def test_programs_are_seeded_and_every_name_they_bind_is_read() -> None:
    first = [ComposedGenerator(rng=random.Random(4)).program() for _ in range(5)]
    assert first == [ComposedGenerator(rng=random.Random(4)).program() for _ in range(5)]
    generator, rng = ComposedGenerator(rng=random.Random(0)), random.Random(1)
    programs = [generator.program() for _ in range(500)]
    for p in programs:
        bound, read = _bound_and_read(p.source)
        assert bound <= read, p.source
        assert p.level == IDIOM_LEVEL and p.params
        ast.parse(f"f({p.random_input(rng)})")
    # Loops, dict counters, branches and named steps as well as single expressions.
    text = "\n".join(p.source for p in programs)
    for piece in ("for ", ".get(", "if ", " for ", "return "):
        assert piece in text
    assert any(len(p.source.splitlines()) >= 4 for p in programs)
    with pytest.raises(ValueError, match="max_depth"):
        ComposedGenerator(rng=rng, max_depth=0)


def test_composition_writes_far_more_distinct_programs_than_the_templates() -> None:
    composed = ComposedGenerator(rng=random.Random(0))
    templates = IdiomGenerator(rng=random.Random(0))
    n = 3000
    n_composed = len({canonical_key(composed.program().source) for _ in range(n)})
    n_templates = len({canonical_key(templates.program().source) for _ in range(n)})
    assert n_composed > 0.7 * n
    assert n_composed > 2 * n_templates


def test_the_stream_is_unchanged_unless_composition_is_asked_for() -> None:
    def sources(**shares: float) -> list[str]:
        stream = candidates(7, (1, 2), **shares)
        return [p.source for p, _ in itertools.islice(stream, 120)]

    assert sources(idiom_share=0.5) == sources(idiom_share=0.5, composed_share=0.0)
    mixed = sources(idiom_share=0.5, composed_share=1.0)
    assert mixed != sources(idiom_share=0.5)
    with pytest.raises(ValueError, match="composed_share"):
        next(candidates(0, (1,), idiom_share=0.5, composed_share=2.0))


def test_a_corpus_of_composed_programs_is_valid_and_holds_no_hand_written_program() -> None:
    with Executor(workers=1) as fallback, GoldPool(workers=1, fallback=fallback) as pool:
        entries = build_corpus(
            60, seed=5, executor=pool, levels=(1,), idiom_share=1.0, composed_share=1.0
        )
    assert len(entries) == 60 and {e.level for e in entries} == {IDIOM_LEVEL}
    assert not {canonical_key(e.program) for e in entries} & handwritten_keys()
    # Every entry reads its input: its outputs are not all equal.
    assert all(len(set(e.outputs)) > 1 for e in entries)
