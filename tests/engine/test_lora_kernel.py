"""The per-row LoRA kernel against its PyTorch reference.

The kernel runs in Triton's CPU interpreter, in a child process: ``triton.jit`` decides at
decoration time (when the module is imported) whether it builds an interpreted function, so
``TRITON_INTERPRET=1`` has to be set before the import, and setting it in this process would
leak into every later test. Without Triton (as in CI) the kernel tests are skipped; the
reference is tested against a plain loop either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from redqueen.engine.backends._lora_kernel import available, fused_lora, lora_reference

# Run in the child: each case's largest error relative to the largest delta, against the
# reference in float64 on the same (rounded) inputs.
_CHILD = r"""
import json, sys
import torch
from redqueen.engine.backends._lora_kernel import available, fused_lora, lora_reference

assert available(), "the kernels were not built for the interpreter"
g = torch.Generator().manual_seed(7)
# (rows, in, out, rank, adapters, dtype); sizes are not multiples of the blocks (128, 64).
cases = [
    (1, 37, 50, 8, 1, "float32"),
    (5, 200, 130, 16, 3, "float32"),
    (17, 301, 97, 32, 4, "float32"),
    (9, 129, 65, 24, 5, "float32"),
    (12, 96, 257, 8, 2, "float32"),
    (16, 150, 70, 32, 8, "float32"),
    (7, 200, 130, 16, 3, "bfloat16"),
    (17, 301, 97, 32, 4, "bfloat16"),
]
out = {}
for n, (rows, size_in, size_out, rank, adapters, name) in enumerate(cases):
    dtype = getattr(torch, name)
    x = torch.randn(rows, size_in, generator=g).to(dtype)
    a = (torch.randn(adapters, rank, size_in, generator=g) / size_in**0.5).to(dtype)
    b = torch.randn(adapters, size_out, rank, generator=g).to(dtype)
    scaling = torch.rand(adapters, generator=g) + 0.5
    index = torch.randint(-1, adapters, (rows,), generator=g)
    index[0] = -1 if n % 2 else adapters - 1  # both kinds of row in every case of 2+ rows
    if rows > 1:
        index[1] = adapters - 1 if n % 2 else -1
    got = fused_lora(x, a, b, scaling, index)
    ref = lora_reference(x.double(), a.double(), b.double(), scaling.double(), index)
    out[f"{name}_{n}"] = {
        "error": ((got.double() - ref).abs().max() / ref.abs().max()).item(),
        "without_adapter_zero": bool((got[index < 0] == 0).all()),
        "dtype": str(got.dtype)[6:],
    }

# The stack's dense layout: A (in, slots, R) and B (slots, R, out), read through views, added
# in place into a base product; int32 indices, block sizes that loop several times.
rows, size_in, size_out, slots, width = 11, 203, 150, 4, 48
a_dense = torch.randn(size_in, slots, width, generator=g) / size_in**0.5
b_stack = torch.randn(slots, width, size_out, generator=g)
a, b = a_dense.permute(1, 2, 0), b_stack.transpose(1, 2)  # (slots, R, in), (slots, out, R)
x = torch.randn(rows, size_in, generator=g)
index = torch.tensor([0, 1, -1, 3, 2, 1, -1, 0, 3, 3, 2], dtype=torch.int32)
base = torch.randn(rows, size_out, generator=g)
ones = torch.ones(slots)
got = fused_lora(x, a, b, ones, index, out=base.clone(), block_k=32, block_n=32)
ref = base.double() + lora_reference(x.double(), a.double(), b.double(), ones.double(), index)
out["strided_inplace"] = {
    "error": ((got.double() - ref).abs().max() / ref.abs().max()).item(),
    "without_adapter_zero": bool((got[index < 0] == base[index < 0]).all()),
    "dtype": "float32",
}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def interpreted() -> dict[str, dict]:
    """The child's errors per case, the kernels run by Triton's interpreter on the CPU."""
    pytest.importorskip("triton")
    result = subprocess.run(
        [sys.executable, "-c", _CHILD],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TRITON_INTERPRET": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_float32_equals_reference(interpreted: dict[str, dict]) -> None:
    cases = {k: v for k, v in interpreted.items() if v["dtype"] == "float32"}
    assert len(cases) == 7
    for name, case in cases.items():
        assert case["error"] <= 1e-5, (name, case)


def test_bfloat16_close_to_reference(interpreted: dict[str, dict]) -> None:
    cases = {k: v for k, v in interpreted.items() if v["dtype"] == "bfloat16"}
    assert len(cases) == 2
    for name, case in cases.items():
        # One rounding of the float32 sum to bf16 (8 bits): at most 2**-7 of the largest delta.
        assert case["error"] <= 1e-2, (name, case)


def test_rows_without_adapter_are_left_unchanged(interpreted: dict[str, dict]) -> None:
    for name, case in interpreted.items():
        assert case["without_adapter_zero"], name


def test_reference_is_the_per_row_product() -> None:
    g = torch.Generator().manual_seed(0)
    x, a, b = (
        torch.randn(6, 10, generator=g),
        torch.randn(3, 4, 10, generator=g),
        torch.randn(3, 7, 4, generator=g),
    )
    scaling, index = torch.tensor([0.5, 2.0, 1.5]), torch.tensor([2, -1, 0, 1, 2, -1])
    got = lora_reference(x, a, b, scaling, index)
    for r, i in enumerate(index.tolist()):
        want = torch.zeros(7) if i < 0 else scaling[i] * (x[r] @ a[i].T) @ b[i].T
        torch.testing.assert_close(got[r], want)


def test_shapes_are_checked_at_the_boundary() -> None:
    x, a, b = torch.randn(2, 10), torch.randn(3, 4, 10), torch.randn(3, 7, 4)
    with pytest.raises(ValueError, match="do not fit"):
        lora_reference(x, a, b.transpose(1, 2), torch.ones(3), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="index"):
        lora_reference(x, a, b, torch.ones(3), torch.zeros(3, dtype=torch.long))


@pytest.mark.skipif(
    torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"),
    reason="the kernel can run here",
)
def test_unavailable_without_cuda_or_interpreter() -> None:
    assert not available()
    x, a, b = torch.randn(2, 10), torch.randn(3, 4, 10), torch.randn(3, 7, 4)
    with pytest.raises(RuntimeError, match="CUDA"):
        fused_lora(x, a, b, torch.ones(3), torch.zeros(2, dtype=torch.long))
