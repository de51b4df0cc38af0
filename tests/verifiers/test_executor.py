"""Executor behaviour on well-behaved programs: values, errors, isolation between runs, lifecycle."""

from __future__ import annotations

import ast
import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from redqueen.verifiers import ExecResult, Executor, ExecutorClosedError, values_equal

CORPUS = [
    ("def f(s):\n    return s[::-1].upper() + s.replace('a', 'b')", "f('banana')"),
    (
        "def f(xs):\n    return sorted(xs, key=lambda x: (-x, x)), sum(xs), xs[1:3]",
        "f([5, 3, 9, 1])",
    ),
    ("def f(d):\n    return {k: v * 2 for k, v in sorted(d.items())}", "f({'b': 2, 'a': 1})"),
    (
        "def f(n):\n    return {i % 4 for i in range(n)}, frozenset('abc') == frozenset('cab')",
        "f(10)",
    ),
    ("def f(words):\n    return {w: len(w) for w in set(words)}", "f(['xy', 'abc', 'xy', 'q'])"),
    ("def f(n):\n    return 1 if n < 2 else n * f(n - 1)", "f(20)"),
    (
        "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\ndef f(n):\n    return [fib(i) for i in range(n)]",
        "f(15)",
    ),
    (
        "class Stack:\n    def __init__(self):\n        self.items = []\n"
        "    def push(self, x):\n        self.items.append(x)\n        return self\n"
        "    def pop(self):\n        return self.items.pop()\n"
        "def f(xs):\n    s = Stack()\n    for x in xs:\n        s.push(x * x)\n    return [s.pop() for _ in xs]",
        "f([1, 2, 3])",
    ),
    (
        "from collections import Counter\ndef f(s):\n    return sorted(Counter(s).most_common(2))",
        "f('mississippi')",
    ),
    (
        "import math, itertools\ndef f(n):\n    return [math.comb(n, k) for k in range(n + 1)], list(itertools.accumulate(range(n)))",
        "f(6)",
    ),
    (
        "def f(x):\n    return x / 3, -x // 2, 2 ** 70, None, True, 1e-300 * 1e-300, b'ab' * 2",
        "f(7)",
    ),
    ("def f(t):\n    a, *rest = t\n    return (a,), tuple(rest), (), [[]], {}", "f((1, 2, 3))"),
]


def _direct(source: str, expr: str):
    namespace: dict = {}
    exec(source, namespace)  # trusted corpus, run here only to compare with the sandbox
    return eval(expr, namespace)


@pytest.mark.parametrize(("source", "expr"), CORPUS)
def test_corpus_matches_direct_execution(executor, source, expr):
    result = executor.execute(source, expr)
    assert result.ok, result.error
    assert values_equal(ast.literal_eval(result.value), _direct(source, expr))


def test_execute_many_keeps_order_and_runs_each_in_a_fresh_process(executor):
    pairs = [("def f(x):\n    return x * x", f"f({i})") for i in range(20)]
    pairs.append(("import math\nmath.pi = 3\ndef f():\n    return math.pi", "f()"))
    pairs.append(("import math\ndef f():\n    return math.pi", "f()"))
    results = executor.execute_many(pairs)
    assert [r.value for r in results[:20]] == [repr(i * i) for i in range(20)]
    assert results[20].value == "3"
    assert results[21].value == repr(3.141592653589793)


def test_errors_are_reported_not_raised(executor):
    bad = executor.execute("def f(x):\n    return 1 / x", "f(0)")
    assert not bad.ok and bad.value is None and not bad.timed_out
    assert bad.error.startswith("ZeroDivisionError")
    syntax = executor.execute("def f(:\n", "f()")
    assert not syntax.ok and syntax.error.startswith("SyntaxError")
    assert executor.execute("x = 1", "y").error.startswith("NameError")


def test_stdout_is_captured_and_capped():
    with Executor(workers=1, timeout=2.0, max_stdout_chars=100) as ex:
        fine = ex.execute("print('hello', 3)", "1")
        assert fine.ok and fine.stdout == "hello 3\n"
        loud = ex.execute("print('x' * 101)", "1")
        assert not loud.ok and "printed more than 100" in loud.error
        caught = ex.execute("try:\n    print('x' * 500)\nexcept BaseException:\n    pass", "1")
        assert not caught.ok


def test_value_size_is_capped():
    with Executor(workers=1, timeout=2.0, max_value_chars=50) as ex:
        assert ex.execute("", "'a' * 40").ok
        big = ex.execute("", "'a' * 60")
        assert not big.ok and "longer than 50" in big.error


def test_working_directory_is_private_writable_and_cleaned(executor):
    first = executor.execute(
        "import os\nwith open('note.txt', 'w') as fh:\n    fh.write('hi')\ncwd = os.getcwd()", "cwd"
    )
    assert first.ok, first.error
    assert not os.path.exists(ast.literal_eval(first.value))  # removed after the run
    seen = executor.execute_many([("import os", "os.listdir('.')")] * 4)
    assert all(r.ok and r.value == "[]" for r in seen)


def test_hash_seed_is_fixed_across_workers_and_executors(executor):
    program = "def f():\n    return [hash('redqueen') % 1000, list({'a', 'b', 'c', 'd', 'e'})]"
    values = {r.value for r in executor.execute_many([(program, "f()")] * 4)}
    with Executor(workers=1, timeout=2.0) as other:
        values.add(other.execute(program, "f()").value)
    assert len(values) == 1


def test_bad_arguments_raise_at_the_boundary(executor):
    with pytest.raises(TypeError, match="pair 0"):
        executor.execute_many([("x = 1",)])
    with pytest.raises(TypeError, match="str"):
        executor.execute(b"x = 1", "x")
    with pytest.raises(ValueError, match="heap_jitter"):
        executor.execute_many([("", "1")], heap_jitter=[1, 2])
    with pytest.raises(ValueError, match="workers"):
        Executor(workers=0)
    # A string, a fraction or a flag is not a count of servers, and a count past the limit
    # would start servers until the machine ran out of descriptors.
    for bad in ("2", 2.5, True):
        with pytest.raises(TypeError, match="workers must be an integer"):
            Executor(workers=bad)
    with pytest.raises(ValueError, match=r"workers must be in \[1, 1024\]"):
        Executor(workers=99_999_999_999)
    with pytest.raises(ValueError, match="timeout"):
        Executor(timeout=0)
    assert executor.execute_many([]) == []


def _descendants() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_close_leaves_no_process_and_is_idempotent():
    before = _descendants()
    ex = Executor(workers=2, timeout=1.0)
    started = _descendants() - before
    assert len(started) == 2
    assert ex.execute("", "6 * 7") == ExecResult(True, "42", None, False, "")
    ex.close()
    ex.close()
    assert ex.closed
    assert not (_descendants() & started)
    with pytest.raises(ExecutorClosedError):
        ex.execute("", "1")
    ex.__del__()  # safe after close


def test_a_killed_worker_is_replaced():
    with Executor(workers=1, timeout=1.0) as ex:
        server = psutil.Process().children()[-1]
        server.kill()
        server.wait(5)
        result = ex.execute("def f(x):\n    return x + 1", "f(1)")
        if not result.ok:  # the loss may surface on the first call; the next one works
            result = ex.execute("def f(x):\n    return x + 1", "f(1)")
        assert result.ok and result.value == "2"


def test_features_report_the_isolation_layers(executor):
    features = executor.features
    assert features["fork_server"] and features["rlimits"] and features["socket_refused"]
    assert set(features) >= {"seccomp", "landlock", "network_namespace", "drop_root"}


def test_concurrent_callers_get_their_own_results(executor):
    def work(k: int) -> list[str | None]:
        results = executor.execute_many(
            [("def f(x):\n    return x * 3", f"f({k * 100 + i})") for i in range(10)]
        )
        return [r.value for r in results]

    with ThreadPoolExecutor(4) as pool:
        outputs = list(pool.map(work, range(4)))
    assert outputs == [[repr((k * 100 + i) * 3) for i in range(10)] for k in range(4)]


def test_survives_its_temporary_directory_being_removed():
    with Executor(workers=1, timeout=1.0) as ex:
        workdir = ast.literal_eval(ex.execute("import os", "os.getcwd()").value)
        shutil.rmtree(os.path.dirname(workdir))  # as a tmp cleaner would
        result = ex.execute("with open('x', 'w') as fh:\n    fh.write('1')", "1")
        assert result.ok, result.error


def test_preloaded_modules_are_importable_by_programs() -> None:
    with Executor(workers=1, preload=("random", "hashlib")) as ex:
        result = ex.execute(
            "import hashlib, random\ndef f():\n    return hashlib.md5(b'a').hexdigest()[:4], random.Random(1).random() < 1",
            "f()",
        )
    assert result.ok, result.error
    assert result.value == repr(("0cc1", True))
