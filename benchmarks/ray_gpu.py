"""Ray co-evolution on one GPU: two half-GPU workers against one process, same run.

Runs the ``tiny`` preset for ``--steps`` steps on CUDA twice, with the same seed: once in one
process (``engine.workers: 0``) and once on two Ray worker actors sharing the GPU
(``engine.workers: 2``, ``engine.gpus_per_worker: 0.5``). Compares every ``metrics.jsonl``
field but the wall-clock ``seconds`` (exactly, and within a relative tolerance for floating
point from different kernel launches), and the exported adapters' factors. Writes
``ray_gpu.json`` to ``--out`` (default ``benchmarks/results/``). Skips without CUDA or Ray.

Usage::

    python benchmarks/ray_gpu.py --steps 2
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results"
CLI = "import sys; from redqueen.experiments.cli import main; sys.argv[0] = 'redqueen'; main()"


def run(out: Path, steps: int, dtype: str, extra: list[str]) -> tuple[list[dict], float, str]:
    sets = [f"steps={steps}", "model.device=cuda", f"model.dtype={dtype}", *extra]
    cmd = [sys.executable, "-c", CLI, "run", "tiny", "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        return [], seconds, (proc.stdout + proc.stderr)[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return rows, seconds, ""


def compare(a: list[dict], b: list[dict], rel: float) -> dict:
    exact, close, differ = 0, 0, []
    for step, (x, y) in enumerate(zip(a, b, strict=False)):
        for key in sorted(set(x) | set(y)):
            if key == "seconds":
                continue
            u, v = x.get(key), y.get(key)
            if u == v:
                exact += 1
            elif (
                isinstance(u, float)
                and isinstance(v, float)
                and math.isclose(u, v, rel_tol=rel, abs_tol=1e-9)
            ):
                close += 1
            else:
                differ.append({"step": step, "key": key, "one_process": u, "ray": v})
    return {
        "fields_identical": exact,
        "fields_within_rel_tol": close,
        "fields_differing": len(differ),
        "differences": differ[:40],
        "steps": [len(a), len(b)],
    }


def main(argv: list[str] | None = None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--rel", type=float, default=1e-3, help="relative tolerance for floats")
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available() or importlib.util.find_spec("ray") is None:
        print("ray_gpu.py: skipped, needs CUDA and Ray")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        one, t_one, err_one = run(Path(tmp) / "one", args.steps, args.dtype, [])
        two, t_two, err_two = run(
            Path(tmp) / "ray",
            args.steps,
            args.dtype,
            ["engine.workers=2", "engine.gpus_per_worker=0.5"],
        )
    report = {
        "benchmark": "ray_gpu",
        "device": torch.cuda.get_device_name(0),
        "preset": "tiny",
        "steps": args.steps,
        "dtype": args.dtype,
        "one_process_seconds": round(t_one, 1),
        "ray_two_half_gpu_workers_seconds": round(t_two, 1),
        "one_process_error": err_one or None,
        "ray_error": err_two or None,
        "comparison": compare(one, two, args.rel) if one and two else None,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"ray_gpu_{args.dtype}.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
