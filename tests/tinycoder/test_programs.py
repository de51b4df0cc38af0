"""The generator: seeded, parseable at every level, and each level harder than the one below."""

from __future__ import annotations

import ast
import random

import pytest

from redqueen.tinycoder import MAX_LEVEL, OOD_LEVEL, TRAIN_LEVELS, ProgramGenerator
from redqueen.tinycoder.canonical import canonical_key


def _programs(level: int, n: int, seed: int = 0) -> list[str]:
    gen = ProgramGenerator(rng=random.Random(seed))
    return [gen.program(level).source for _ in range(n)]


def test_levels_split_into_training_and_out_of_distribution() -> None:
    assert OOD_LEVEL == MAX_LEVEL and OOD_LEVEL not in TRAIN_LEVELS
    assert TRAIN_LEVELS == tuple(range(1, MAX_LEVEL))
    with pytest.raises(ValueError, match="level must be in"):
        ProgramGenerator(rng=random.Random(0)).program(MAX_LEVEL + 1)


def test_mean_ast_size_grows_with_every_level() -> None:
    sizes = []
    for level in range(1, MAX_LEVEL + 1):
        trees = [ast.parse(s) for s in _programs(level, 40)]
        sizes.append(sum(sum(1 for _ in ast.walk(t)) for t in trees) / len(trees))
    assert all(a < b for a, b in zip(sizes, sizes[1:], strict=False)), sizes


def test_higher_levels_use_the_wider_grammar() -> None:
    text = "\n".join(_programs(7, 60) + _programs(8, 60))
    for construct in ("while ", "break", "def g(n, v):", "    def ", "enumerate(", "zip("):
        assert construct in text, construct
    trees = [ast.parse(s) for s in _programs(4, 80)]
    early = [t for t in trees if sum(isinstance(n, ast.Return) for n in ast.walk(t)) > 1]
    assert early, "level 4 should write early returns"
    assert all("while" not in s for s in _programs(2, 50))


def test_seeded_and_mostly_distinct_above_level_two() -> None:
    assert _programs(5, 5, seed=3) == _programs(5, 5, seed=3)
    for level in (3, 6):
        keys = {canonical_key(s) for s in _programs(level, 200)}
        assert len(keys) >= 195
