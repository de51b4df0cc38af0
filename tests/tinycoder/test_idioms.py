"""The idiom generator: natural programs beside the grammar's, never a hand-written one."""

from __future__ import annotations

import ast
import itertools
import random

import pytest

from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.corpus import build_corpus, candidates
from redqueen.tinycoder.gold import GoldPool
from redqueen.tinycoder.handwritten import handwritten_keys
from redqueen.tinycoder.idioms import IDIOM_LEVEL, IdiomGenerator, natural_value
from redqueen.verifiers import Executor


def test_programs_are_seeded_python_over_words_and_larger_numbers() -> None:
    first = [IdiomGenerator(rng=random.Random(5)).program() for _ in range(3)]
    again = [IdiomGenerator(rng=random.Random(5)).program() for _ in range(3)]
    assert first == again
    generator, rng = IdiomGenerator(rng=random.Random(0)), random.Random(1)
    programs = [generator.program() for _ in range(600)]
    for p in programs:
        tree = ast.parse(p.source)
        assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == ["f"]
        assert p.level == IDIOM_LEVEL
        ast.parse(f"f({p.random_input(rng)})")
    # Many forms, not a few: names vary, and so do constants, methods and operators.
    assert len({canonical_key(p.source) for p in programs}) > 200
    assert max(int(natural_value("nat", rng)) for _ in range(200)) > 1000
    sentences = " ".join(ast.literal_eval(natural_value("sentence", rng)) for _ in range(200))
    assert any(word in sentences.split() for word in ("apple", "river", "Alice", "python"))
    with pytest.raises(ValueError, match="unknown kind"):
        natural_value("float", rng)


def test_the_stream_mixes_idioms_only_when_asked() -> None:
    plain = list(itertools.islice(candidates(0, (1, 2)), 50))
    assert {p.level for p, _ in plain} <= {1, 2}
    mixed = [p.level for p, _ in itertools.islice(candidates(0, (1, 2), idiom_share=0.5), 200)]
    assert 60 < mixed.count(IDIOM_LEVEL) < 140
    with pytest.raises(ValueError, match="idiom_share"):
        next(candidates(0, (1,), idiom_share=1.5))


def test_a_corpus_of_idioms_is_valid_and_holds_no_hand_written_program() -> None:
    with Executor(workers=1) as fallback, GoldPool(workers=1, fallback=fallback) as pool:
        entries = build_corpus(80, seed=2, executor=pool, levels=(1,), idiom_share=1.0)
    assert {e.level for e in entries} == {IDIOM_LEVEL}
    assert not {canonical_key(e.program) for e in entries} & handwritten_keys()
    # Loops as well as one-liners, and whole words in the inputs.
    assert any("for " in e.program for e in entries)
    assert any("'" in i and len(i) > 8 for e in entries for i in e.inputs)
