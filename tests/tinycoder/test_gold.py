"""GoldPool: the generator's programs run fast, with the sandbox's verdicts and limits."""

from __future__ import annotations

import time

import pytest

from redqueen.tinycoder.corpus import build_corpus
from redqueen.tinycoder.gold import GoldPool
from redqueen.verifiers import Executor, RejectReason, validate_programs

HASH_ORDER = "def f(a):\n    return str(list({'ab', 'cd', 'ef', 'gh', 'ij', 'kl'}))\n"


@pytest.fixture(scope="module")
def pools():
    with Executor(workers=1) as sandbox, GoldPool(workers=1, fallback=sandbox, timeout=1.0) as gold:
        yield sandbox, gold


def test_same_corpus_as_the_sandbox(pools) -> None:
    sandbox, gold = pools
    fast = build_corpus(40, seed=3, executor=gold)
    assert fast == build_corpus(40, seed=3, executor=sandbox)
    assert gold.fallback_batches == 0


def test_verdicts_of_accidents(pools) -> None:
    _, gold = pools
    items = [
        ("def f(a):\n    while True:\n        a += 1\n", ["1"]),
        ("def f(a):\n    return 'x' * (10 ** 10)\n", ["1"]),
        ("def f(a):\n    return f(a + 1)\n", ["1"]),
        ("def f(a):\n    print(a)\n    return a * 2\n", ["3", "4"]),
        (HASH_ORDER, ["1"]),
    ]
    loop, memory, recursion, printed, order = validate_programs(items, gold)
    assert loop.reason == RejectReason.TIMEOUT
    assert memory.reason == RejectReason.RUNTIME_ERROR and "MemoryError" in memory.detail
    assert recursion.reason == RejectReason.RUNTIME_ERROR
    assert printed.ok and printed.outputs == ("6", "8")
    # The two runs of an input see different hash seeds, so set order over strings shows.
    assert order.reason == RejectReason.NONDETERMINISTIC


def test_a_wedged_or_dead_worker_falls_back_to_the_sandbox() -> None:
    # A long loop inside one C call never returns to the interpreter, so the run's own timer
    # cannot stop it: the batch times out, the worker is replaced, the sandbox decides.
    wedge = "def f(a):\n    return sum(range(10 ** 12))\n"
    dies = "import os\ndef f(a):\n    os._exit(3)\n"
    with Executor(workers=1, timeout=1.0) as sandbox:
        with GoldPool(workers=1, fallback=sandbox, batch_timeout=2.0, chunk=1) as gold:
            t0 = time.monotonic()
            stuck, dead, fine = gold.execute_many([(wedge, "f(1)"), (dies, "f(1)"), ("x = 2", "x")])
            assert stuck.timed_out and not dead.ok and fine.ok and fine.value == "2"
            assert gold.fallback_batches == 2 and time.monotonic() - t0 < 30
            after = gold.execute_many([("def f(a):\n    return a\n", "f(5)")])
            assert after[0].value == "5" and gold.fallback_batches == 2


def test_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="positive"):
        GoldPool(workers=0)
    with GoldPool(workers=1) as gold, pytest.raises(ValueError, match="length"):
        gold.execute_many([("x = 1", "x")], heap_jitter=[0, 1])
