"""The static backend with the fused per-row LoRA kernel wired in (``fused_lora=True``).

Where the kernel cannot run (no Triton, or Triton without a CUDA device and without its
interpreter, as in CI) asking for it is a clear error. Where Triton is installed, a child
process with ``TRITON_INTERPRET=1`` (which must be set before Triton is imported) decodes a
mixed batch on the CPU through the kernel, and its tokens must equal the ``hf`` backend's,
greedy and sampled, eager and with the fixed shapes a CUDA graph captures (on the 2-layer test
model: the interpreter runs each kernel program in Python).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from redqueen.engine import AdapterHost
from redqueen.engine.backends import BACKENDS
from redqueen.engine.backends._lora_kernel import available
from redqueen.engine.backends._lora_stack import StackedLoRA

_CHILD = r"""
import json
import sys
import torch
from redqueen.engine import AdapterHost, SamplingParams
from redqueen.engine.backends import BACKENDS
from redqueen.engine.backends._lora_kernel import available
from redqueen.genomes import LoRAGenome

torch.set_num_threads(1)
assert available()
host = AdapterHost(sys.argv[1], dtype=torch.float32)
for i, name in enumerate(["a", "b", "c"]):
    rank = 4 if name != "c" else 2
    rng = torch.Generator().manual_seed(i)
    host.add_adapter(name, LoRAGenome.random(host.module_shapes, rank=rank, alpha=2.0 * rank,
                                             rng=rng, init="gaussian", std=0.3))
prompts = ["def f(x):", "hello world, longer", "ab", "x = [1, 2]", "def f(x):"]
rows = ["a", "b", None, "c", "a"]
ids = [host.tokenizer(p)["input_ids"] for p in prompts]
out = {}
for fixed in (False, True):
    backend = BACKENDS["static"](host, fused_lora=True)
    backend.static_shapes = fixed
    assert backend.lora.fused
    for name, params in (
        ("greedy", SamplingParams(max_new_tokens=10, temperature=0.0)),
        ("sampled", SamplingParams(max_new_tokens=10, temperature=1.0, seed=3)),
    ):
        hf = host.backend.generate(ids, rows, [params] * len(ids))
        ours = backend.generate(ids, rows, [params] * len(ids))
        bare = backend.generate(ids[:1], [None], [params])
        out[f"{'fixed' if fixed else 'eager'}_{name}"] = {
            "same_tokens": [a.token_ids == b.token_ids for a, b in zip(ours, hf)],
            "logprob_gap": max(abs(x - y) for a, b in zip(ours, hf)
                               for x, y in zip(a.logprobs, b.logprobs)),
            "adapter_changes_row_0": ours[0].token_ids != bare[0].token_ids,
        }
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def interpreted(tiny_model_dir) -> dict[str, dict]:
    """Per case: whether each row's tokens equal hf's, decoded through the interpreted kernel."""
    pytest.importorskip("triton")
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tiny_model_dir)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TRITON_INTERPRET": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_fused_kernel_decodes_the_same_tokens_as_hf(interpreted: dict[str, dict]) -> None:
    assert set(interpreted) == {"eager_greedy", "eager_sampled", "fixed_greedy", "fixed_sampled"}
    for name, case in interpreted.items():
        assert all(case["same_tokens"]), name
        assert case["logprob_gap"] < 5e-3, name
        assert case["adapter_changes_row_0"], name


@pytest.mark.skipif(available(), reason="the kernel can run here")
def test_asking_for_the_kernel_where_it_cannot_run_is_a_clear_error(tiny_coder_dir) -> None:
    host = AdapterHost(tiny_coder_dir)
    with pytest.raises(ValueError, match="fused_lora needs triton"):
        BACKENDS["static"](host, fused_lora=True)


def test_the_kernel_reads_the_dense_layout_only() -> None:
    with pytest.raises(ValueError, match="dense layout"):
        StackedLoRA([], dtype=None, device=None, dense=False, fused=True)  # type: ignore[arg-type]
