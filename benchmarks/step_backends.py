"""Whole co-evolution steps with the ``hf`` and ``static`` generation backends, same run.

Runs the ``tiny`` preset for ``--steps`` steps per backend, interleaved (hf, static, hf, static
for ``--rounds 2``) so that drift in machine load hits both alike, and reports the median
seconds per step after the first (which pays warm-up and, for ``static``, graph capture) and
the ratio hf/static. Everything else in the step (verification, learning, ratings) is shared,
so the ratio is what the backend buys end to end. Writes ``step_backends_<device>.json`` to
``--out`` (default ``benchmarks/results/``).

Usage::

    python benchmarks/step_backends.py --device cuda --steps 4
    python benchmarks/step_backends.py --device cpu --steps 4 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
CLI = "import sys; from redqueen.experiments.cli import main; sys.argv[0] = 'redqueen'; main()"


def step_seconds(out: Path, steps: int, device: str, backend: str) -> list[float]:
    cmd = [sys.executable, "-c", CLI, "run", "tiny", "--out", str(out)]
    for s in (f"steps={steps}", f"model.device={device}", f"model.backend={backend}"):
        cmd += ["--set", s]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{backend} run failed: {(proc.stdout + proc.stderr)[-2000:]}")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [float(r["seconds"]) for r in rows]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    seconds: dict[str, list[float]] = {"hf": [], "static": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for backend in seconds:
                run = step_seconds(Path(tmp) / f"{backend}{r}", args.steps, args.device, backend)
                seconds[backend] += run[1:]
    median = {b: statistics.median(s) for b, s in seconds.items()}
    report = {
        "benchmark": "step_backends",
        "device": args.device,
        "preset": "tiny",
        "steps_per_run": args.steps,
        "rounds": args.rounds,
        "seconds_per_step_after_first": seconds,
        "median_seconds": {b: round(m, 3) for b, m in median.items()},
        "hf_over_static": round(median["hf"] / median["static"], 3),
    }
    if args.device.startswith("cuda"):
        import torch

        report["device_name"] = torch.cuda.get_device_name(0)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "cuda" if args.device.startswith("cuda") else "cpu"
    (args.out / f"step_backends_{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
