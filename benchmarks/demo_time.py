"""The README's demo, timed as a new user runs it: quiet, and beside one busy core.

``redqueen run tiny`` is run end to end (start-up, model load, 15 steps, plots) from two
checkouts in one session: this one, and an anchor commit (by default the commit before
``model.cpu_threads: auto``, when the preset took two threads whatever the machine's load). "One
busy core" is a second process spinning in pure Python at the same priority for the whole run,
as any other program a researcher leaves running would. The conditions alternate (quiet this,
quiet anchor, busy this, busy anchor) so that a drift in the machine hits both sides.

Writes ``results/demo_time.json``: per run the wall time, the mean and range of the step times
from the run's ``metrics.jsonl``, the threads it chose, and the load average before it started.

Usage::

    python benchmarks/demo_time.py --anchor 1ad44dd^
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
RUN = "from redqueen.experiments.cli import main; main()"
SPIN = "while True: pass"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _steps(run_dir: Path) -> list[float]:
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    return [
        float(json.loads(line)["seconds"]) for line in path.read_text().splitlines() if line.strip()
    ]


def time_demo(tree: Path, out: Path, busy: bool) -> dict[str, object]:
    """One ``redqueen run tiny`` from ``tree`` into ``out``, with a spinning process if ``busy``."""
    env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
    spinner = subprocess.Popen([sys.executable, "-c", SPIN]) if busy else None
    load = os.getloadavg()[0]
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", RUN, "run", "tiny", "--out", str(out)],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
        )
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    wall = time.perf_counter() - start
    steps = _steps(out)
    lines = (proc.stdout + proc.stderr).splitlines()
    threads = [line for line in lines if "thread" in line.lower()]
    return {
        "returncode": proc.returncode,
        "wall_seconds": round(wall, 1),
        "steps": len(steps),
        "step_seconds_mean": round(sum(steps) / len(steps), 2) if steps else None,
        "step_seconds_min": round(min(steps), 2) if steps else None,
        "step_seconds_max": round(max(steps), 2) if steps else None,
        "load_before": round(load, 2),
        "thread_lines": threads[:3],
        "first_line": lines[0] if lines else "",
        # The run's own last line is on stdout; plot notes go to stderr before it.
        "last_line": proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anchor", default="1ad44dd^", help="the commit timed as 'before'")
    parser.add_argument("--out", type=Path, default=RESULTS / "demo_time.json")
    parser.add_argument(
        "--conditions", nargs="+", default=["quiet", "busy"], choices=["quiet", "busy"]
    )
    args = parser.parse_args()
    anchor = _git("rev-parse", "--short", args.anchor)
    head = _git("rev-parse", "--short", "HEAD")
    results: dict[str, object] = {
        "machine": f"{os.cpu_count()} cores",
        "command": "redqueen run tiny (15 steps, plots), end to end",
        "busy_core": f"a second process running `{SPIN}` at the same priority",
        "this": head,
        "anchor": anchor,
        "runs": {},
    }
    runs: dict[str, object] = results["runs"]  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(prefix="demo-time-") as scratch:
        anchor_tree = Path(scratch) / "anchor"
        _git("worktree", "add", "--detach", str(anchor_tree), anchor)
        try:
            for condition in args.conditions:
                for name, tree in (("this", ROOT), ("anchor", anchor_tree)):
                    key = f"{condition}/{name}"
                    print(f"demo_time: {key} ...", flush=True)
                    runs[key] = time_demo(
                        tree, Path(scratch) / key.replace("/", "-"), condition == "busy"
                    )
                    print(f"demo_time: {key}: {runs[key]}", flush=True)
                    args.out.write_text(json.dumps(results, indent=2) + "\n")
        finally:
            _git("worktree", "remove", "--force", str(anchor_tree))
    print(f"demo_time: wrote {args.out}")


if __name__ == "__main__":
    main()
