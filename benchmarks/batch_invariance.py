"""Does a row's sampled completion on CUDA depend on the batch it decodes in? (tiny-coder)

16 prompts, 4 adapters round-robin, 48 sampled tokens at temperature 1: the 16 rows decoded
together, as two batches of 8, and the first 8 one at a time, with both backends in float32
and bf16. Writes ``batch_invariance_cuda.json`` to ``$OUT`` or ``benchmarks/results/``.
Skips without CUDA. Usage: ``python benchmarks/batch_invariance.py``.
"""

import json
import os
from pathlib import Path

import torch

from redqueen.assets import tiny_coder_path
from redqueen.engine import AdapterHost, SamplingParams
from redqueen.genomes import LoRAGenome

if not torch.cuda.is_available():
    raise SystemExit("batch_invariance.py: skipped, needs CUDA")
out = {}
prompts = [f"def f{i}(x):\n    return x" for i in range(16)]
for dtype in (torch.float32, torch.bfloat16):
    for backend in ("hf", "static"):
        h = AdapterHost(tiny_coder_path(), device="cuda", dtype=dtype, backend=backend)
        for i in range(4):
            h.add_adapter(
                f"a{i}",
                LoRAGenome.random(
                    h.module_shapes,
                    rank=8,
                    alpha=16.0,
                    rng=torch.Generator().manual_seed(i),
                    init="gaussian",
                    std=0.05,
                ),
            )
        rows = [f"a{i % 4}" for i in range(16)]
        p = SamplingParams(max_new_tokens=48, temperature=1.0, seed=3)
        full = [g.token_ids for g in h.generate(prompts, rows, p)]
        half = [g.token_ids for g in h.generate(prompts[:8], rows[:8], p)] + [
            g.token_ids for g in h.generate(prompts[8:], rows[8:], p)
        ]
        alone = [h.generate([q], [r], p)[0].token_ids for q, r in zip(prompts[:8], rows[:8], strict=True)]
        key = f"{backend}_{str(dtype)[6:]}"
        out[key] = {
            "rows_same_16_vs_2x8": sum(a == b for a, b in zip(full, half, strict=True)),
            "rows_same_alone_vs_batch_of_16": sum(a == b for a, b in zip(alone, full[:8], strict=True)),
            "of": [16, 8],
        }
        print(key, out[key], flush=True)
dest = Path(os.environ.get("OUT", Path(__file__).resolve().parent / "results"))
(dest / "batch_invariance_cuda.json").write_text(json.dumps(out, indent=2) + "\n")
