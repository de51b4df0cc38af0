"""Sandboxed checks per second: the fork-server executor against one ``python -c`` per program.

Measures, all in one run with the same number of parallel workers (default 2):

- ``python_c`` (the anchor): one ``python -c`` subprocess per program, as a verifier without a
  fork server would do it (the interpreter starts, imports ``site``, runs, prints the repr);
- ``python_S_c``: the same with ``-S`` (no ``site``), a stricter anchor;
- ``bare_fork``: fork, ``_exit``, wait from a small Python process, the ceiling any
  fork-per-program design approaches;
- ``executor``: :meth:`redqueen.verifiers.Executor.execute_many`, every program in a fresh
  forked child with all isolation layers on;
- ``validate``: :func:`redqueen.verifiers.validate_program` (two isolated runs per input);
- with ``--before PATH``: the executor of an unchanged checkout at ``PATH`` (imported through
  ``PYTHONPATH`` in a subprocess) against this checkout's, each in its own subprocess on the
  same programs, alternating within every round, so that a change to the sandbox is priced
  against the code it replaces in the same run; besides checks per second it records the
  CPU milliseconds per check of the host, its fork servers and their children (from
  ``/proc``), which a busy machine disturbs less than the wall clock.

Variants alternate in interleaved rounds so that all see the same machine load. Programs are
small functions like those teachers propose. Before timing, the run confirms that
the isolation is intact (a program that opens a socket, forks or writes outside its directory
fails). Writes ``benchmarks/results/verifier.json`` and prints the same JSON.

Usage::

    python benchmarks/verifier.py                   # 2 workers
    python benchmarks/verifier.py --workers 4 --checks 4000
    python benchmarks/verifier.py --before ../redqueen-previous   # also before/after
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from redqueen.verifiers import Executor, validate_program

RESULTS = Path(__file__).resolve().parent / "results"

PROGRAMS = [
    (
        "def f(xs):\n    return sorted(xs, reverse=True)[:3]",
        "f({i!r})",
        lambda i: list(range(i % 7 + 3)),
    ),
    (
        "def f(s):\n    return {c: s.count(c) for c in sorted(set(s))}",
        "f({i!r})",
        lambda i: "ab" * (i % 5) + "c",
    ),
    (
        "def f(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a",
        "f({i!r})",
        lambda i: i % 40,
    ),
    (
        "class Counter:\n    def __init__(self):\n        self.n = 0\n    def add(self, k):\n"
        "        self.n += k\n        return self\n"
        "def f(xs):\n    c = Counter()\n    for x in xs:\n        c.add(x)\n    return c.n",
        "f({i!r})",
        lambda i: [i, i + 1, i * 2],
    ),
]


def make_pairs(n: int) -> list[tuple[str, str]]:
    pairs = []
    for i in range(n):
        source, template, arg = PROGRAMS[i % len(PROGRAMS)]
        pairs.append((source, template.format(i=arg(i))))
    return pairs


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def run_python_c(pairs: list[tuple[str, str]], workers: int, extra: tuple[str, ...] = ()) -> float:
    """Checks per second with one interpreter launch per program."""

    def one(pair: tuple[str, str]) -> str:
        source, expr = pair
        code = f"{source}\nprint(repr({expr}))"
        done = subprocess.run(
            [sys.executable, *extra, "-c", code], capture_output=True, text=True, timeout=60
        )
        return done.stdout

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        outputs = list(pool.map(one, pairs))
    elapsed = time.perf_counter() - start
    assert all(outputs), "a python -c run printed nothing"
    return rate(len(pairs), elapsed)


def run_bare_fork(n: int, workers: int) -> float:
    """Forks per second: ``workers`` small processes each fork/_exit/wait ``n / workers`` times."""
    per = max(1, n // workers)
    code = (
        "import os, sys\n"
        f"for _ in range({per}):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
    )
    procs = []
    start = time.perf_counter()
    for _ in range(workers):
        procs.append(subprocess.Popen([sys.executable, "-S", "-c", code]))
    for proc in procs:
        proc.wait()
    elapsed = time.perf_counter() - start
    return rate(per * workers, elapsed)


def isolation_intact(executor: Executor) -> bool:
    """True when hostile programs fail inside this executor."""
    with tempfile.TemporaryDirectory() as scratch:
        os.chmod(scratch, 0o777)
        target = os.path.join(scratch, "escaped")
        hostile = [
            ("import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=0.2)", "1"),
            ("import os\nos.fork()", "1"),
            (f"open({target!r}, 'w').write('x')", "1"),
            ("import os\nos.kill(os.getppid(), 9)", "1"),
        ]
        results = executor.execute_many(hostile)
        return not any(r.ok for r in results) and not os.path.exists(target)


def _tree_cpu_seconds(pids: list[int]) -> float:
    """CPU seconds of this process, and of ``pids`` with the children they reaped (``/proc``)."""
    own = os.times()
    total = own.user + own.system
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        total += sum(int(x) for x in fields[11:15]) / ticks  # utime stime cutime cstime
    return total


def executor_rate(checks: int, round_index: int, rounds: int, workers: int) -> tuple[float, float]:
    """Checks per second of the importable executor on one round's share of the programs, and
    CPU milliseconds per check of the host, its fork servers and their children."""
    pairs = make_pairs(checks)[round_index::rounds]
    with Executor(workers=workers, timeout=5.0) as executor:
        executor.execute_many(pairs[: 4 * workers])  # warm the servers
        pids = [server.pid for server in executor._servers]
        cpu = _tree_cpu_seconds(pids)
        start = time.perf_counter()
        results = executor.execute_many(pairs)
        elapsed = time.perf_counter() - start
        cpu = _tree_cpu_seconds(pids) - cpu
    assert all(res.ok for res in results), next(res.error for res in results if not res.ok)
    return rate(len(pairs), elapsed), 1000 * cpu / len(pairs)


def before_after(before: Path, checks: int, rounds: int, workers: int) -> dict:
    """Executor checks per second of the checkout at ``before`` and of this one, interleaved."""
    script = str(Path(__file__).resolve())
    roots = {"before": before.resolve(), "after": Path(__file__).resolve().parents[1]}
    seconds = dict.fromkeys(roots, 0.0)
    cpu_ms: dict[str, list[float]] = {name: [] for name in roots}
    per_round = []
    for r in range(rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        rates = {}
        for name in order:
            done = subprocess.run(
                [sys.executable, script, "--executor-only", str(r), "--checks", str(checks)]
                + ["--rounds", str(rounds), "--workers", str(workers)],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(roots[name])},
                cwd=tempfile.gettempdir(),
                check=True,
            )
            measured, cpu = done.stdout.strip().splitlines()[-1].split()
            rates[name] = float(measured)
            cpu_ms[name].append(float(cpu))
            seconds[name] += len(make_pairs(checks)[r::rounds]) / rates[name]
        per_round.append(round(rates["after"] / rates["before"], 3))
    commit = subprocess.run(
        ["git", "-C", str(roots["before"]), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    before_rate, after_rate = rate(checks, seconds["before"]), rate(checks, seconds["after"])
    ratio = after_rate / before_rate
    cpu_median = {name: float(np.median(values)) for name, values in cpu_ms.items()}
    return {
        "before_commit": commit or None,
        "checks_per_second": {"before": round(before_rate, 1), "after": round(after_rate, 1)},
        "after_vs_before": round(ratio, 3),
        "after_vs_before_per_round": per_round,
        "after_vs_before_median_round": round(float(np.median(per_round)), 3),
        "cpu_ms_per_check_median": {k: round(v, 3) for k, v in cpu_median.items()},
        "cpu_ms_per_check_per_round": {k: [round(x, 3) for x in v] for k, v in cpu_ms.items()},
        "before_vs_after_cpu": round(cpu_median["before"] / cpu_median["after"], 3),
        "target": "after >= 0.9x before",
        "target_met": bool(ratio >= 0.9),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--before", type=Path, help="an unchanged checkout to price this one against"
    )
    parser.add_argument("--before-checks", type=int, default=3000, help="programs per side")
    parser.add_argument("--before-rounds", type=int, default=6, help="interleaved rounds")
    parser.add_argument("--executor-only", type=int, metavar="ROUND", help=argparse.SUPPRESS)
    parser.add_argument("--checks", type=int, default=2000, help="programs run by the executor")
    parser.add_argument("--anchor-checks", type=int, default=80, help="programs run by python -c")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved measurement rounds")
    parser.add_argument("--out", type=Path, default=RESULTS / "verifier.json")
    args = parser.parse_args(argv)
    if args.executor_only is not None:  # one side of --before, run in a subprocess
        print(*executor_rate(args.checks, args.executor_only, args.rounds, args.workers))
        return {}

    pairs = make_pairs(args.checks)
    anchor_pairs = make_pairs(args.anchor_checks)
    rounds = max(1, args.rounds)
    seconds = dict.fromkeys(("executor", "python_c", "python_S_c", "bare_fork"), 0.0)
    with Executor(workers=args.workers, timeout=5.0) as executor:
        intact = isolation_intact(executor)
        executor.execute_many(pairs[: 4 * args.workers])  # warm the servers
        # Interleaved rounds, so that every variant sees the same machine load.
        for r in range(rounds):
            chunk = pairs[r::rounds]
            start = time.perf_counter()
            results = executor.execute_many(chunk)
            seconds["executor"] += time.perf_counter() - start
            assert all(res.ok for res in results), next(res.error for res in results if not res.ok)
            anchor_chunk = anchor_pairs[r::rounds]
            seconds["python_c"] += len(anchor_chunk) / run_python_c(anchor_chunk, args.workers)
            seconds["python_S_c"] += len(anchor_chunk) / run_python_c(
                anchor_chunk, args.workers, ("-S",)
            )
            seconds["bare_fork"] += len(chunk) / run_bare_fork(len(chunk), args.workers)
        n_validate = max(args.checks // 20, 10)
        start = time.perf_counter()
        for i in range(n_validate):
            source, template, arg = PROGRAMS[i % len(PROGRAMS)]
            inputs = [template.format(i=arg(i + k))[2:-1] for k in range(5)]
            validate_program(source, list(dict.fromkeys(inputs)), executor)
        validate_rate = rate(n_validate, time.perf_counter() - start)
        features = executor.features
    executor_checks = rate(len(pairs), seconds["executor"])
    anchor = rate(len(anchor_pairs), seconds["python_c"])
    anchor_no_site = rate(len(anchor_pairs), seconds["python_S_c"])
    bare = rate(len(pairs), seconds["bare_fork"])

    report = {
        "benchmark": "verifier",
        "workers": args.workers,
        "cpu_count": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "isolation_intact": intact,
        "isolation_features": features,
        "checks": args.checks,
        "anchor_checks": args.anchor_checks,
        "rounds": rounds,
        "checks_per_second": {
            "python_c": round(anchor, 1),
            "python_S_c": round(anchor_no_site, 1),
            "bare_fork": round(bare, 1),
            "executor": round(executor_checks, 1),
            "validate_program_5_inputs": round(validate_rate, 1),
        },
        "ratios": {
            "executor_vs_python_c": round(executor_checks / anchor, 2),
            "executor_vs_python_S_c": round(executor_checks / anchor_no_site, 2),
            "executor_vs_bare_fork": round(executor_checks / bare, 3),
        },
        "target": "executor >= 10x python_c, isolation intact",
        "target_met": bool(intact and executor_checks >= 10 * anchor),
    }
    if args.before is not None:
        report["before_after"] = before_after(
            args.before, args.before_checks, args.before_rounds, args.workers
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
