"""A ``tiny`` co-evolution step, this code against an anchor checkout, measured in one run.

Runs ``benchmarks/step_profile.py`` of each tree in its own process (``PYTHONPATH`` set to the
tree), the configurations interleaved round by round so that a change in the machine's load
hits all of them alike:

* ``anchor, preset``: the anchor's code at its own ``tiny`` preset (for ``968eb87``: the
  ``hf`` backend, one torch thread);
* ``anchor, 2 threads``: the same with two threads;
* ``anchor, 2 threads, static``: the same with the ``static`` backend as it was;
* ``this code, preset``: this tree at its ``tiny`` preset.

Each run builds the preset's environment, plays one warm-up step and ``--steps`` timed steps
(see ``step_profile.py`` for the phases). The anchor is any checkout of the repository, e.g.
``git worktree add --detach ../anchor 968eb87``.

Usage::

    python benchmarks/step_time.py --anchor ../anchor [--rounds 2] [--steps 4] [--configs presets]

Writes ``benchmarks/results/step_time.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
PHASES = ("propose", "verify", "solve", "grade", "learn", "other", "checkpoint", "step")


def configurations(anchor: Path, which: str = "all") -> list[tuple[str, Path, int, list[str]]]:
    """(name, tree, torch threads, overrides) of every measured configuration.

    ``which="presets"`` measures the two trees at their own presets only (an anchor that
    already runs the preset's backend and threads).
    """
    if which == "presets":
        return [("anchor, preset", anchor, 2, []), ("this code, preset", ROOT, 2, [])]
    return [
        ("anchor, preset", anchor, 1, []),
        ("anchor, 2 threads", anchor, 2, []),
        ("anchor, 2 threads, static", anchor, 2, ["model.backend=static"]),
        ("this code, preset", ROOT, 2, []),
    ]


def run_one(tree: Path, threads: int, overrides: list[str], steps: int) -> dict[str, float]:
    """Mean seconds per phase of one ``step_profile.py`` run of ``tree``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "profile.json"
        command = [
            sys.executable,
            str(tree / "benchmarks" / "step_profile.py"),
            "--steps",
            str(steps),
            "--threads",
            str(threads),
            "--out",
            str(out),
        ]
        for item in overrides:
            command += ["--set", item]
        env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
        subprocess.run(command, check=True, env=env, cwd=tree, capture_output=True)
        seconds = json.loads(out.read_text())["seconds"]
    return {phase: float(seconds[phase]["mean"]) for phase in PHASES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--anchor", type=Path, required=True, help="A checkout of the anchor.")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--out", type=Path, default=RESULTS / "step_time.json")
    parser.add_argument(
        "--configs",
        choices=("all", "presets"),
        default="all",
        help="all: the anchor at one and two threads and with static, and this code; "
        "presets: each tree at its own preset",
    )
    args = parser.parse_args()
    anchor = args.anchor.resolve()
    commit = subprocess.run(
        ["git", "-C", str(anchor), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    configs = configurations(anchor, args.configs)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in configs}
    for round_ in range(args.rounds):
        for name, tree, threads, overrides in configs:
            runs[name].append(run_one(tree, threads, overrides, args.steps))
            step = runs[name][-1]["step"]
            print(f"round {round_ + 1}/{args.rounds}  {name:28s} {step:6.2f} s/step", flush=True)
    table = {
        name: {p: float(np.mean([r[p] for r in rs])) for p in PHASES} for name, rs in runs.items()
    }
    ours = "this code, preset"
    ratios = {}
    for name in runs:
        if name == ours:
            continue
        per_round = [a["step"] / b["step"] for a, b in zip(runs[name], runs[ours], strict=True)]
        ratios[name] = {
            "speedup": float(np.mean(per_round)),
            "per_round": per_round,
            "t95": _t_interval(per_round),
        }
    result = {
        "preset": "tiny",
        "anchor": commit or str(anchor),
        "rounds": args.rounds,
        "steps_per_run": args.steps,
        "configs": args.configs,
        "seconds_mean": table,
        "runs": runs,
        "speedup_of_this_code": ratios,
        "target_seconds": 4.0,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_after": list(os.getloadavg()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    for name, row in table.items():
        cells = "  ".join(f"{p} {row[p]:.2f}" for p in PHASES)
        print(f"{name:28s} {cells}")
    for name, r in ratios.items():
        print(f"this code is {r['speedup']:.2f}x {name}")


def _t_interval(values: list[float]) -> list[float] | None:
    """95% t interval of the mean (``None`` with fewer than two values)."""
    if len(values) < 2:
        return None
    mean, sem = float(np.mean(values)), float(stats.sem(values))
    half = float(stats.t.ppf(0.975, len(values) - 1)) * sem
    return [mean - half, mean + half]


if __name__ == "__main__":
    main()
