"""The per-row LoRA kernel against the static backend's dense stack product, on a GPU.

At the Qwen2.5-0.5B shape (hidden 896, 2 of 14 heads for keys and values, intermediate 4864),
rank 32, 64 rows, 8 adapters (each row's slot ``1 + row % 8``), bf16, for each projection group
of a decoder layer (``qkv``, ``o``, ``gate_up``, ``down``), the LoRA part of one decode step:

* ``stack_dense``: the static backend's product today, ``StackedLoRA`` in the dense form
  (``t = x @ A_all; t *= mask; y += t @ B_all``, as ``StaticDecoder._project`` runs it);
* ``fused_stack_views``: :func:`fused_lora` on views of that same stack (``A`` strided);
* ``fused_contiguous``: :func:`fused_lora` on the factors copied to ``(slots, R, in)`` and
  ``(slots, out, R)``, the layout the stack would keep if the kernel were wired in, over a few
  block sizes;
* ``reference``: :func:`lora_reference`, each row's factors gathered, two batched products.

Each is timed eager (CUDA events around 200 calls) and replayed from a CUDA graph of 20 calls
(as the backend's decode step runs), in the same run; each output's largest error relative to
the largest delta, against a float32 product, is recorded. Writes ``lora_kernel.json`` to
``$OUT`` or ``benchmarks/results/``. Exits with one line without CUDA; ``--dry`` checks the
script on the CPU at tiny shapes in Triton's interpreter (no timings worth reading, no file).

Usage::

    python benchmarks/lora_kernel.py          # on a GPU
    python benchmarks/lora_kernel.py --dry    # anywhere with triton
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

# (name, members' output sizes, input size) of a decoder layer's projection groups.
GROUPS_05B = [
    ("qkv", [896, 128, 128], 896),
    ("o", [896], 896),
    ("gate_up", [4864, 4864], 896),
    ("down", [896], 4864),
]
GROUPS_DRY = [("qkv", [40, 8, 8], 40), ("gate_up", [72, 72], 40), ("down", [40], 72)]
BLOCKS = [(64, 32), (128, 64), (256, 64), (128, 128), (256, 128)]  # (block_k, block_n)


def seconds_per_call(fn: Callable[[], object], *, device: str, calls: int, graph: bool) -> float:
    """Median seconds per call over 5 repeats (CUDA events on a GPU, wall clock on the CPU)."""
    for _ in range(3):  # compile, warm caches
        fn()
    if device != "cuda":
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls
    run: Callable[[], object] = fn
    per_replay = 1
    if graph:
        per_replay = 20
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        captured = torch.cuda.CUDAGraph()
        with torch.cuda.graph(captured):
            for _ in range(per_replay):
                fn()
        run = captured.replay
    times = []
    for _ in range(5):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        begin.record()
        for _ in range(calls // per_replay):
            run()
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end) / 1e3 / (calls // per_replay * per_replay))
    return statistics.median(times)


def group_products(
    sizes: list[int],
    size_in: int,
    *,
    rank: int,
    rows: int,
    adapters: int,
    dtype: torch.dtype,
    device: str,
    g: torch.Generator,
) -> tuple[dict[str, Callable[[], Tensor]], Tensor, Tensor]:
    """One projection group's LoRA products to time, the float32 delta they should give, and
    the output the in-place ones add into (the base product's place; zero it to read a delta)."""
    from redqueen.engine._lora_layer import MultiLoRALinear
    from redqueen.engine.backends._lora_kernel import fused_lora, lora_reference
    from redqueen.engine.backends._lora_stack import StackedLoRA

    layers = [
        MultiLoRALinear(nn.Linear(size_in, out, bias=False, device=device, dtype=dtype))
        for out in sizes
    ]
    for i in range(adapters):
        for layer in layers:
            a = torch.randn(rank, size_in, generator=g) / size_in**0.5
            b = torch.randn(layer.out_features, rank, generator=g) * 0.05
            layer.set_factors(f"a{i}", a.to(device, dtype), b.to(device, dtype), 2.0)
    stack = StackedLoRA([layers], dtype=dtype, device=torch.device(device), dense=True)
    slot_of = stack.load([f"a{i}" for i in range(adapters)])
    row_slots = [slot_of[f"a{r % adapters}"] for r in range(rows)]
    route = stack.routing(row_slots)
    assert route.masks is not None
    a_all, b_all = stack.dense_factors(0, route.slots)  # (in, S*R), (S*R, out)
    width = b_all.shape[0] // route.slots
    mask = route.masks[width]  # (rows, S*R)
    a_views = a_all.view(size_in, route.slots, width).permute(1, 2, 0)  # (S, R, in)
    b_views = b_all.view(route.slots, width, -1).transpose(1, 2)  # (S, out, R)
    a_stack, b_stack = a_views.contiguous(), b_views.contiguous()
    scaling = torch.ones(route.slots, device=device)  # folded into the stack's B
    index = torch.tensor(row_slots, device=device)
    x = torch.randn(rows, size_in, generator=g).to(device, dtype)  # (rows, in)
    y = torch.zeros(rows, b_all.shape[1], device=device, dtype=dtype)  # (rows, out)

    def stack_dense() -> Tensor:
        t = x @ a_all
        t.mul_(mask)
        return y.addmm_(t, b_all)

    def fused(a: Tensor, b: Tensor, block_k: int = 128, block_n: int = 64) -> Callable[[], Tensor]:
        return lambda: fused_lora(x, a, b, scaling, index, out=y, block_k=block_k, block_n=block_n)

    candidates: dict[str, Callable[[], Tensor]] = {
        "stack_dense": stack_dense,
        "fused_stack_views": fused(a_views, b_views),
        "reference": lambda: lora_reference(x, a_stack, b_stack, scaling, index),
    }
    for block_k, block_n in BLOCKS if device == "cuda" else BLOCKS[:2]:
        label = f"fused_contiguous_k{block_k}_n{block_n}"
        candidates[label] = fused(a_stack, b_stack, block_k, block_n)
    exact = lora_reference(x.float(), a_stack.float(), b_stack.float(), scaling, index)
    return candidates, exact, y


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry", action="store_true", help="tiny shapes on the CPU, interpreted")
    args = parser.parse_args(argv)
    cuda = torch.cuda.is_available() and not args.dry
    if not cuda and not args.dry:
        raise SystemExit(
            "lora_kernel.py: skipped, needs a CUDA device (--dry checks the script on the CPU)"
        )
    if args.dry:
        # triton.jit reads this when the kernel module is imported, so before that import.
        os.environ["TRITON_INTERPRET"] = "1"
    from redqueen.engine.backends._lora_kernel import available

    if not available():
        raise SystemExit("lora_kernel.py: skipped, triton is not importable (pip install triton)")
    import triton  # type: ignore[import-untyped, import-not-found, unused-ignore]

    device = "cuda" if cuda else "cpu"
    dtype = torch.bfloat16 if cuda else torch.float32
    groups = GROUPS_05B if cuda else GROUPS_DRY
    rank, rows, adapters = (32, 64, 8) if cuda else (4, 6, 3)
    calls = 200 if cuda else 2
    g = torch.Generator().manual_seed(0)

    report: dict = {
        "device": torch.cuda.get_device_name() if cuda else "cpu (dry, interpreted)",
        "torch": torch.__version__,
        "triton": triton.__version__,
        "shape": {"rank": rank, "rows": rows, "adapters": adapters, "dtype": str(dtype)[6:]},
        "groups": {},
    }
    for name, sizes, size_in in groups:
        result: dict = {"in": size_in, "out": sum(sizes)}
        candidates, exact, base = group_products(
            sizes, size_in, rank=rank, rows=rows, adapters=adapters, dtype=dtype, device=device, g=g
        )
        for label, fn in candidates.items():
            base.zero_()
            delta = fn().float()
            error = ((delta - exact).abs().max() / exact.abs().max()).item()
            eager = seconds_per_call(fn, device=device, calls=calls, graph=False)
            graphed = seconds_per_call(fn, device=device, calls=calls, graph=True) if cuda else None
            result[label] = {
                "error": error,
                "eager_us": eager * 1e6,
                "graph_us": None if graphed is None else graphed * 1e6,
            }
            print(
                f"{name:8s} {label:34s} error {error:.1e}  eager {eager * 1e6:9.1f} us"
                + ("" if graphed is None else f"  graph {graphed * 1e6:7.1f} us"),
                flush=True,
            )
        report["groups"][name] = result

    if cuda:
        layer_us = {
            label: sum(report["groups"][n][label]["graph_us"] for n, _, _ in groups)
            for label in report["groups"][groups[0][0]]
            if isinstance(report["groups"][groups[0][0]][label], dict)
        }
        report["per_layer_graph_us"] = layer_us
        print("per decoder layer, graph replay:", json.dumps(layer_us, indent=1))
        dest = Path(os.environ.get("OUT", Path(__file__).resolve().parent / "results"))
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "lora_kernel.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
