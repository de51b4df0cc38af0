"""A sandboxed child holds nothing but its own request, and cannot tell one run from another.

The heap scans run the real fork server with one change: in each child, just before
confinement, a scan of the whole address space (``/proc/self/mem``) for request markers, whose
findings the child then reports as its value. What a scan there cannot find, no program
in that child can find either, by frames, ``gc`` or raw memory.
"""

from __future__ import annotations

import os
import re
import secrets
import textwrap
from pathlib import Path

import pytest

import redqueen.verifiers._server as server_module
from redqueen.verifiers import CandidateTest, Executor, validate_program

VERIFIERS = Path(server_module.__file__).parent
MARKER = re.compile(r"SECRET-[0-9a-f]{16}-END")


def _marker() -> str:
    return f"SECRET-{secrets.token_hex(8)}-END"


SCANNING_SERVER = textwrap.dedent(
    """
    import os, re, sys
    sys.path.insert(0, {verifiers!r})
    import _child

    PATTERN = re.compile(rb"SECRET-[0-9a-f]{{16}}-END")
    FOUND = []
    real_confine, real_serve_calls = _child.confine, _child.serve_calls

    def scan():
        found = set()
        with open("/proc/self/maps") as handle:
            regions = handle.read().splitlines()
        fd = os.open("/proc/self/mem", os.O_RDONLY)
        try:
            for line in regions:
                fields = line.split()
                if fields[1][0] != "r" or (len(fields) > 5 and fields[5].startswith("[v")):
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                try:
                    data = os.pread(fd, end - start, start)
                except OSError:
                    continue
                found.update(m.decode() for m in PATTERN.findall(data))
        finally:
            os.close(fd)
        return sorted(found)

    def scanning_confine(server, keep):
        FOUND[:] = scan()
        real_confine(server, keep)

    def reporting_program(source, expr, writer, max_value_chars, extra):
        if "candidate" in extra:
            return b"V", repr({{"self": FOUND, "candidate": extra["candidate"]()}})
        return b"V", repr(FOUND)

    def reporting_candidate(source, entry_point, calls, replies, max_chars):
        program = f"def {{entry_point}}(*args):\\n    return {{FOUND!r}}\\n"
        real_serve_calls(program, entry_point, calls, replies, max_chars)

    _child.confine = scanning_confine
    _child.execute_program = reporting_program
    _child.serve_calls = reporting_candidate
    import _zygote
    _zygote.main()
    """
)


@pytest.fixture
def scanning_executor(tmp_path, monkeypatch):
    if not os.path.exists("/proc/self/mem"):
        pytest.skip("no /proc/self/mem on this host")
    script = tmp_path / "scanning_server.py"
    script.write_text(SCANNING_SERVER.format(verifiers=str(VERIFIERS)))
    monkeypatch.setattr(server_module, "_ZYGOTE", script)
    with Executor(workers=1, timeout=10.0) as ex:  # one server: every request passes through it
        yield ex


def test_a_child_holds_only_its_own_request(scanning_executor):
    markers = [_marker() for _ in range(12)]
    pairs = [(f"X = {m!r}\n", f"{i}") for i, m in enumerate(markers)]
    for marker, result in zip(markers, scanning_executor.execute_many(pairs), strict=True):
        assert result.ok, result
        assert eval(result.value) == [marker]  # its own request, and nothing any other held


def test_the_candidate_process_never_holds_the_test(scanning_executor):
    program_marker, test_marker = _marker(), _marker()
    earlier = _marker()
    assert scanning_executor.execute(f"X = {earlier!r}", "1").ok
    test = CandidateTest(
        program=f"SOURCE = {program_marker!r}\ndef solve(x):\n    return x",
        entry_point="solve",
        test=f"EXPECTED = {test_marker!r}\ndef check(candidate):\n    return candidate(1)",
        expr="check(candidate)",
    )
    (result,) = scanning_executor.run_tests([test])
    assert result.ok, result
    seen = eval(result.value)
    assert seen["candidate"] == [program_marker]  # never the test, never an earlier request
    assert seen["self"] == [test_marker]  # the test's process holds no program text either


def test_raw_memory_modules_are_neither_importable_nor_reachable(executor):
    attempts = {
        "import": "import ctypes",
        "import_extension": "import _ctypes",
        "importlib": "import importlib\nimportlib.import_module('ctypes')",
        "sys_modules": "import sys\nassert 'ctypes' not in sys.modules and '_ctypes' not in sys.modules\n"
        "raise ImportError('not in sys.modules')",
        "sandbox_globals": "import sys\nfor name in ('_seccomp', '_zygote', '_child', '__main__'):\n"
        "    m = sys.modules.get(name)\n"
        "    if m is not None and 'ctypes' in vars(m):\n        X = vars(m)['ctypes']\n"
        "X.string_at(id(1), 8)",
        "gc_walk": "import gc\n[o for o in gc.get_objects() if 'ctypes' in type(o).__module__]",
        "extension_loader": "import importlib.machinery as m, sys\n"
        "path = [p for p in sys.path if p.endswith('lib-dynload')] or ['/nonexistent']\n"
        "name = path[0] + '/_ctypes' + m.EXTENSION_SUFFIXES[0]\n"
        "loader = m.ExtensionFileLoader('_ctypes', name)\n"
        "loader.create_module(m.ModuleSpec('_ctypes', loader, origin=name))",
        "frames": "import sys\nf = sys._getframe()\nfound = []\nwhile f is not None:\n"
        "    for v in list(f.f_locals.values()):\n"
        "        for attr in ('libc', 'prctl', 'seccomp', 'landlock'):\n"
        "            if getattr(v, attr, None) is not None:\n                found.append(attr)\n"
        "    f = f.f_back\nassert not found, found\nraise ImportError('nothing found')",
    }
    if not executor.features.get("raw_memory_unloaded"):
        # With ctypes loaded for the kernel calls, the interpreter keeps _ctypes in its
        # extension cache, which a loader reaches without the import statement (a known hole).
        del attempts["extension_loader"]
    for name, source in attempts.items():
        result = executor.execute(source, "1")
        assert not result.ok, (name, result)
        assert result.error.startswith(
            ("ImportError", "ModuleNotFoundError", "PermissionError", "NameError")
        ), (
            name,
            result,
        )
    healthy = executor.execute("import collections\ndef f(x):\n    return sorted(x)", "f([2, 1])")
    assert healthy.ok and healthy.value == "[1, 2]"


def test_no_ctypes_type_lives_in_a_child(executor):
    """Where the kernel calls are compiled (``_kernelcalls``), ``ctypes`` was never loaded in
    the fork server, so not even its types can be found by walking the class graph."""
    if not executor.features.get("raw_memory_unloaded"):
        pytest.skip("the sandbox's kernel calls go through ctypes on this host")
    walk = textwrap.dedent(
        """
        def f():
            seen, stack, found = set(), [object], []
            while stack:
                cls = stack.pop()
                for sub in type.__subclasses__(cls):
                    if sub not in seen:
                        seen.add(sub)
                        stack.append(sub)
                        if sub.__module__.partition('.')[0] in ('ctypes', '_ctypes'):
                            found.append(sub.__qualname__)
            return found
        """
    )
    result = executor.execute(walk, "f()")
    assert result.ok and result.value == "[]", result


def test_nothing_a_program_reads_tells_validation_from_judging(executor):
    """The red team's program: it looks for anything run-specific in every frame it can reach.
    Before, validation's heap-jitter value sat in the child's request, a live local."""
    spy = textwrap.dedent(
        """
        import sys
        def f(x):
            seen = []
            frame = sys._getframe()
            while frame is not None:
                for value in list(frame.f_locals.values()):
                    if isinstance(value, dict) and "jitter" in value:
                        seen.append(value["jitter"])
                frame = frame.f_back
            return (x, seen)
        """
    )
    validated = executor.execute_many([(spy, "f(1)")] * 2, heap_jitter=[3, 8])
    judged = executor.execute(spy, "f(1)")
    values = {r.value for r in [*validated, judged]}
    assert all(r.ok for r in [*validated, judged]) and values == {"(1, [])"}, values


def test_repeats_of_one_input_run_in_different_interpreters():
    """Validation's two runs of an input land on different fork servers, so outputs that
    depend on addresses differ even for objects made before the fork (``id(len)``)."""
    pair = ("def f(x):\n    return id(len) + x", "f(0)")
    with Executor(workers=1) as ex:  # a second server is started for the repeat
        first, second = ex.execute_many([pair, pair])
        assert first.ok and second.ok and first.value != second.value
        verdict = validate_program("def f(x):\n    return x + 1", ["1", "2"], ex)
        assert verdict.ok and verdict.outputs == ("2", "3")


def test_every_run_takes_its_own_heap_shift(executor):
    """Two runs of one program on one server place its fresh objects differently."""
    pair = ("def f(x):\n    return id(object()) % 4096", "f(0)")
    values = {executor.execute(*pair).value for _ in range(12)}
    assert len(values) > 1


def test_a_child_holds_few_descriptors(executor):
    source = textwrap.dedent(
        """
        import os
        def f(x):
            count = 0
            try:
                while count < 10000:
                    os.pipe()
                    count += 2
            except OSError:
                pass
            return count
        """
    )
    result = executor.execute(source, "f(0)")
    assert result.ok and int(result.value) <= 32, result


@pytest.mark.parametrize("workers", [1, 2])
def test_many_repeats_take_no_more_servers_than_two_or_the_workers(workers):
    pair = ("def f(x):\n    return x + 1", "f(1)")
    with Executor(workers=workers) as ex:
        results = ex.execute_many([pair] * 12)
        assert all(r.ok and r.value == "2" for r in results)
        assert len(ex._servers) == max(workers, 2)
