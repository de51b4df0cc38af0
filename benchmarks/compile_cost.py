"""What compiling the static backend's decode step costs and buys: seconds per call, first and later.

On a GPU, at the Qwen2.5-0.5B shape with random bf16 weights (``rollout.build_model``), 64 rows,
8 rank-32 adapters, 256 new tokens at temperature 1: three calls each of the ``static``
backend's eager decode step and of its compiled one (``static_compiled``), without adapters and
with the 8 adapters mixed. The first call of each pays compilation (compiled only) and graph
capture. For a cold compile cache, point ``TORCHINDUCTOR_CACHE_DIR`` and ``TRITON_CACHE_DIR``
at empty folders.

Usage::

    python benchmarks/compile_cost.py benchmarks/results/compile_cost_<device>.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rollout import build_model  # noqa: E402

from redqueen.engine import BACKENDS, AdapterHost, SamplingParams  # noqa: E402
from redqueen.genomes import LoRAGenome  # noqa: E402


def main(out: Path) -> dict:
    if not torch.cuda.is_available():
        print("compile_cost.py measures a GPU's decode step; no CUDA device here", file=sys.stderr)
        raise SystemExit(2)
    device = torch.device("cuda")
    model, tokenizer, _ = build_model(device)
    host = AdapterHost(
        model, tokenizer=tokenizer, device=device, dtype=torch.bfloat16, max_batch_size=64
    )
    host.eos_token_ids = set()  # fixed-length decoding
    rng = torch.Generator().manual_seed(0)
    names = [f"a{i}" for i in range(8)]
    for name in names:
        genome = LoRAGenome.random(
            host.module_shapes, rank=32, alpha=64, rng=rng, init="gaussian", std=0.02
        )
        host.add_adapter(name, genome)
    lengths = torch.randint(32, 65, (64,), generator=rng)
    prompts = [torch.randint(3, 150000, (int(n),), generator=rng).tolist() for n in lengths]
    seconds: dict[str, list[float]] = {}
    for label, backend_name in (("eager", "static"), ("compiled", "static_compiled")):
        backend = BACKENDS[backend_name](host)
        for rows_label, rows in (
            ("no_adapter", [None] * 64),
            ("mixed_8", [names[i % 8] for i in range(64)]),
        ):
            times = []
            for _ in range(3):
                params = [SamplingParams(max_new_tokens=256, temperature=1.0, seed=0)] * 64
                torch.cuda.synchronize()
                start = time.perf_counter()
                backend.generate(prompts, rows, params)
                torch.cuda.synchronize()
                times.append(round(time.perf_counter() - start, 3))
            seconds[f"{label}_{rows_label}"] = times
            print(label, rows_label, times, flush=True)
    report = {
        "benchmark": "compile_cost",
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "batch": 64,
        "rank": 32,
        "new_tokens": 256,
        "seconds_per_call": seconds,
    }
    out.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main(Path(sys.argv[1]))
