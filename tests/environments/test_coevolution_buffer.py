"""Task buffer, task signatures and complexity summaries (no model needed)."""

from __future__ import annotations

import random

import pytest

from redqueen.environments.task_buffer import (
    IDENTITY_TRIPLET,
    TaskBuffer,
    complexity_score,
    normalise_program,
    task_signature,
)
from redqueen.verifiers import Triplet


def _triplet(i: int) -> Triplet:
    return Triplet(program=f"def f(x):\n    return x + {i}", input="1", output=repr(1 + i))


def test_buffer_starts_from_the_identity_program():
    buffer = TaskBuffer(capacity=4)
    assert list(buffer) == [IDENTITY_TRIPLET]
    assert IDENTITY_TRIPLET.program == "def f(x):\n    return x"


def test_trimming_drops_the_oldest_and_keeps_the_newest():
    buffer = TaskBuffer(capacity=3)
    for i in range(5):
        buffer.add(_triplet(i))
    assert len(buffer) == 3
    assert list(buffer) == [_triplet(2), _triplet(3), _triplet(4)]
    assert buffer.newest == _triplet(4)
    tiny = TaskBuffer(capacity=1)
    tiny.add(_triplet(9))
    assert list(tiny) == [_triplet(9)]


def test_sampling_is_seeded_and_without_replacement_when_possible():
    buffer = TaskBuffer(capacity=10, seed=[_triplet(i) for i in range(6)])
    a = buffer.sample(4, random.Random(3))
    b = buffer.sample(4, random.Random(3))
    assert a == b and len(set(a)) == 4
    small = TaskBuffer(capacity=10)
    assert small.sample(3, random.Random(0)) == [IDENTITY_TRIPLET] * 3
    assert buffer.sample(0, random.Random(0)) == []


def test_buffer_state_round_trips():
    buffer = TaskBuffer(capacity=3, seed=[_triplet(i) for i in range(4)])
    other = TaskBuffer(capacity=8)
    other.load_state_dict(buffer.state_dict())
    assert list(other) == list(buffer) and other.capacity == 3
    other.add(_triplet(7))
    assert len(other) == 3 and other.newest == _triplet(7)


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity"):
        TaskBuffer(capacity=0)


def test_signature_ignores_names_docstrings_and_layout():
    a = "def f(xs):\n    total = 0\n    for v in xs:\n        total += v\n    return total"
    b = 'def f(items):\n    """Sum."""\n    acc = 0\n    for it in items:  # loop\n        acc += it\n    return acc'
    c = "def f(xs):\n    total = 1\n    for v in xs:\n        total *= v\n    return total"
    assert task_signature(a) == task_signature(b)
    assert task_signature(a) != task_signature(c)
    assert len(task_signature(a)) == 12
    # Builtins keep their names: len and sum are different programs.
    assert task_signature("def f(x):\n    return len(x)") != task_signature(
        "def f(x):\n    return sum(x)"
    )
    assert normalise_program("def f(x:\n") == "def f(x:"


def test_complexity_score_grows_with_branches_and_size():
    simple = complexity_score({"cyclomatic": 1.0, "halstead_volume": 0.0})
    branchy = complexity_score({"cyclomatic": 4.0, "halstead_volume": 0.0})
    bigger = complexity_score({"cyclomatic": 1.0, "halstead_volume": 120.0})
    assert simple == 1.0 and branchy > simple and bigger > simple
