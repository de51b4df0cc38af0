"""svd_merge of two LoRA adapters: the QR-core SVD on factors against PEFT's dense SVD merge.

The anchor is PEFT's ``add_weighted_adapter(combination_type="svd")``, which forms every
module's dense update and runs a full SVD of it. Ours is :func:`redqueen.genomes.weighted_svd`,
the whole body of the ``svd_merge`` crossover (called directly so that the benchmark needs only
``redqueen.genomes``), which never forms a dense update. Both merge the same two random adapters with weights (0.6, 0.4);
the relative error is ``||dW_ours - dW_peft||_F / ||dW_peft||_F``, the largest over modules.

Shapes (module shapes of the named architectures; models are built from a config with random
weights and a 1024-token vocabulary, since the vocabulary does not change any LoRA shape):

- ``tiny``: a tiny-coder-like Llama (hidden 256, intermediate 688, 4 layers, 4 heads).
- ``qwen0.5b``: Qwen2.5-0.5B (hidden 896, intermediate 4864, 24 layers, 14 heads, 2 kv heads).
- ``qwen7b``: Qwen2.5-7B (hidden 3584, intermediate 18944, 28 layers, 28 heads, 4 kv heads).

All seven linear module types of every layer are adapted. On CPU both sides run with the same
number of torch threads (``--threads``, default 1: on a shared machine more threads mostly
measure hand-offs between contended cores). PEFT's merge of a large shape takes
minutes, so ``--peft-layers`` times it on the first few layers only; ours is timed on the same
layers (the ratio compares equal work) and on the whole model. With ``--peft-layers`` below the
layer count, ``peft_s_full_extrapolated`` scales PEFT's time by layers and is labelled so.
On CUDA, ours is also checked against a dense float64 SVD of the weighted sum on a few modules.

With ``--profile``, one more call of the fastest variant per shape runs under
``torch.profiler`` (host and, on CUDA, device activity): the JSON gains each labelled stage of
the merge (``weighted_svd.stack``, ``lowrank_svd.gram``, ``lowrank_svd.small_problems`` with its
``small_problems.to_host`` / ``host_solve`` / ``to_device``, ``lowrank_svd.vectors``,
``weighted_svd.split``) with its host and device milliseconds, and the operators that take the
most host and device time.

Writes ``benchmarks/results/operators_<device>.json`` (or ``--out``) and prints the same JSON.

Usage::

    python benchmarks/operators.py --device cpu --shapes tiny,qwen0.5b --rank 16 --peft-layers 4,1
    python benchmarks/operators.py --device cuda --shapes qwen7b --rank 32 --peft-layers 1 --profile
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import warnings
from pathlib import Path

import torch

from redqueen.genomes import LoRAGenome, weighted_svd

RESULTS = Path(__file__).resolve().parent / "results"
WEIGHTS = (0.6, 0.4)
#: PEFT's svd merge of the Qwen2.5-7B shape, rank 32, on an H100, as recorded in DESIGN.md
#: (reported next to, never instead of, what this run measures).
QWEN7B_PEFT_ANCHOR_S = 318.7
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
ARCHS = {
    "tiny": dict(arch="llama", hidden=256, intermediate=688, layers=4, heads=4, kv_heads=4),
    "qwen0.5b": dict(arch="qwen2", hidden=896, intermediate=4864, layers=24, heads=14, kv_heads=2),
    "qwen7b": dict(arch="qwen2", hidden=3584, intermediate=18944, layers=28, heads=28, kv_heads=4),
}


def module_shapes(spec: dict, layers: int) -> dict[str, tuple[int, int]]:
    """``(out, in)`` of the seven adapted linear modules of the first ``layers`` layers."""
    h, i = spec["hidden"], spec["intermediate"]
    kv = spec["kv_heads"] * (h // spec["heads"])
    per_layer = {
        "self_attn.q_proj": (h, h),
        "self_attn.k_proj": (kv, h),
        "self_attn.v_proj": (kv, h),
        "self_attn.o_proj": (h, h),
        "mlp.gate_proj": (i, h),
        "mlp.up_proj": (i, h),
        "mlp.down_proj": (h, i),
    }
    return {f"model.layers.{n}.{k}": s for n in range(layers) for k, s in per_layer.items()}


def random_pair(shapes, rank: int, device: str) -> tuple[LoRAGenome, LoRAGenome]:
    rng = torch.Generator().manual_seed(0)
    return tuple(
        LoRAGenome.random(
            shapes, rank=rank, alpha=2.0 * rank, rng=rng, init="gaussian", std=0.02
        ).to(device)
        for _ in range(2)
    )


def subset(genome: LoRAGenome, layers: int) -> LoRAGenome:
    keep = {f"model.layers.{n}." for n in range(layers)}
    return genome.replace({m: f for m, f in genome.items() if any(m.startswith(k) for k in keep)})


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_ours(g1, g2, device: str, variant: str, repeats: int) -> tuple[float, LoRAGenome]:
    """Median wall time of ``svd_merge`` after two warm-up calls.

    ``variant`` is a method (``qr``, ``gram``), optionally with ``+cpu``: small core problems
    solved on the CPU (only differs for GPU genomes).
    """
    method, _, where = variant.partition("+")
    params = {"method": method, "small_on_cpu": where == "cpu"}
    child = None
    for _ in range(2):
        child = weighted_svd([g1, g2], WEIGHTS, **params)
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        child = weighted_svd([g1, g2], WEIGHTS, **params)
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times), child


#: Stages of the merge labelled with ``torch.profiler.record_function`` in ``redqueen.genomes``.
STAGES = (
    "weighted_svd.stack",
    "lowrank_svd.gram",
    "lowrank_svd.qr",
    "lowrank_svd.small_problems",
    "small_problems.to_host",
    "small_problems.host_solve",
    "small_problems.to_device",
    "lowrank_svd.vectors",
    "weighted_svd.split",
)


def _device_us(event) -> float:
    for attr in ("device_time_total", "cuda_time_total"):
        if hasattr(event, attr):
            return float(getattr(event, attr))
    return 0.0


def _self_device_us(event) -> float:
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        if hasattr(event, attr):
            return float(getattr(event, attr))
    return 0.0


def profile_ours(g1, g2, device: str, variant: str, top: int = 15) -> dict:
    """One call of ``variant`` under ``torch.profiler``: labelled stages and the costliest ops."""
    from torch.profiler import ProfilerActivity, profile

    method, _, where = variant.partition("+")
    params = {"method": method, "small_on_cpu": where == "cpu"}
    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    weighted_svd([g1, g2], WEIGHTS, **params)  # warm-up outside the profile
    sync(device)
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        weighted_svd([g1, g2], WEIGHTS, **params)
        sync(device)
        wall = time.perf_counter() - start
    events = prof.key_averages()
    stages = {
        e.key: {
            "calls": e.count,
            "host_ms": e.cpu_time_total / 1e3,
            "device_ms": _device_us(e) / 1e3,
        }
        for e in events
        if e.key in STAGES
    }
    ops = [e for e in events if e.key not in STAGES]

    def row(e) -> dict:
        return {
            "op": e.key,
            "calls": e.count,
            "self_host_ms": e.self_cpu_time_total / 1e3,
            "self_device_ms": _self_device_us(e) / 1e3,
        }

    return {
        "variant": variant,
        "wall_s_under_profiler": wall,
        "stages": {k: stages[k] for k in STAGES if k in stages},
        "device_ms_total": sum(_self_device_us(e) for e in ops) / 1e3,
        "top_self_host": [row(e) for e in sorted(ops, key=lambda e: -e.self_cpu_time_total)[:top]],
        "top_self_device": [row(e) for e in sorted(ops, key=lambda e: -_self_device_us(e))[:top]],
    }


def build_model(spec: dict, layers: int, device: str):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    config_cls, model_cls = (
        (LlamaConfig, LlamaForCausalLM)
        if spec["arch"] == "llama"
        else (Qwen2Config, Qwen2ForCausalLM)
    )
    config = config_cls(
        vocab_size=1024,
        hidden_size=spec["hidden"],
        intermediate_size=spec["intermediate"],
        num_hidden_layers=layers,
        num_attention_heads=spec["heads"],
        num_key_value_heads=spec["kv_heads"],
    )
    with torch.device(device):
        return model_cls(config).eval()


def time_peft(
    spec: dict, g1: LoRAGenome, g2: LoRAGenome, layers: int, device: str
) -> tuple[float, LoRAGenome]:
    """PEFT's svd merge of the same adapters on the first ``layers`` layers (one timed call)."""
    from peft import LoraConfig, get_peft_model

    model = build_model(spec, layers, device)
    config = LoraConfig(
        r=g1.rank, lora_alpha=g1.alpha, target_modules=list(TARGETS), lora_dropout=0.0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = get_peft_model(model, config, adapter_name="a")
    g1.load_into(model, "a")
    g2.load_into(model, "b")
    sync(device)
    start = time.perf_counter()
    model.add_weighted_adapter(["a", "b"], list(WEIGHTS), "merged", combination_type="svd")
    sync(device)
    elapsed = time.perf_counter() - start
    return elapsed, LoRAGenome.from_peft_model(model, "merged")


def rel_error(ours: LoRAGenome, ref: LoRAGenome) -> float:
    worst = 0.0
    for name in ref.modules:
        r = ref.delta_weight(name).double()
        worst = max(worst, float((ours.delta_weight(name).double() - r).norm() / r.norm()))
    return worst


def dense_references(
    g1: LoRAGenome, g2: LoRAGenome, names: list[str], rank: int
) -> dict[str, torch.Tensor]:
    """Dense float64 rank-r truncated SVDs of the weighted sum, per probed module."""
    refs = {}
    for name in names:
        total = (
            WEIGHTS[0] * g1.delta_weight(name).double()
            + WEIGHTS[1] * g2.delta_weight(name).double()
        )
        u, s, vh = torch.linalg.svd(total, full_matrices=False)
        refs[name] = (u[:, :rank] * s[:rank]) @ vh[:rank]
    return refs


def dense_reference_error(ours: LoRAGenome, refs: dict[str, torch.Tensor]) -> float:
    """Largest relative error of ours against the dense float64 references."""
    return max(
        float((ours.delta_weight(n).double() - r).norm() / r.norm()) for n, r in refs.items()
    )


def run_case(
    name: str,
    rank: int,
    peft_layers: int,
    device: str,
    repeats: int,
    methods: list[str],
    profile: bool = False,
) -> dict:
    spec = ARCHS[name]
    full_shapes = module_shapes(spec, spec["layers"])
    g1, g2 = random_pair(full_shapes, rank, device)
    row: dict = {
        "shape": name,
        **{k: v for k, v in spec.items()},
        "rank": rank,
        "modules": len(full_shapes),
        "lora_parameters_per_adapter": g1.num_parameters(),
        "weights": list(WEIGHTS),
    }
    children = {}
    for method in methods:
        row[f"ours_{method}_s"], children[method] = time_ours(g1, g2, device, method, repeats)
    print(json.dumps(row), flush=True)  # partial results survive a time limit
    if device.startswith("cuda"):
        # q, v, gate and down of the first layer: every distinct shape.
        probe = [n for n in full_shapes if n.startswith("model.layers.0.")][:7:2]
        refs = dense_references(g1, g2, probe, rank)
        row["dense_reference_modules"] = probe
        for method, child in children.items():
            row[f"ours_{method}_rel_error_vs_dense_fp64"] = dense_reference_error(child, refs)
        print(json.dumps(row), flush=True)
    best = min(methods, key=lambda m: row[f"ours_{m}_s"])
    row["ours_best_method"], row["ours_best_s"] = best, row[f"ours_{best}_s"]
    if profile:
        row["profile"] = profile_ours(g1, g2, device, best)
        print(json.dumps(row), flush=True)
    if name == "qwen7b":
        row["peft_anchor_design_s"] = QWEN7B_PEFT_ANCHOR_S
        row["speedup_vs_design_anchor"] = QWEN7B_PEFT_ANCHOR_S / row["ours_best_s"]
    if peft_layers > 0:
        s1, s2 = subset(g1, peft_layers), subset(g2, peft_layers)
        peft_s, theirs = time_peft(spec, s1, s2, peft_layers, device)
        ours_same_s, ours_same = time_ours(s1, s2, device, best, repeats)
        n_sub = len(s1.modules)
        row.update(
            {
                "peft_layers_timed": peft_layers,
                "peft_modules_timed": n_sub,
                "peft_s": peft_s,
                "peft_s_per_module": peft_s / n_sub,
                "ours_best_same_modules_s": ours_same_s,
                "speedup_same_modules": peft_s / ours_same_s,
                "rel_error_vs_peft": rel_error(ours_same, theirs),
            }
        )
        if peft_layers < spec["layers"]:
            row["peft_s_full_extrapolated"] = peft_s * spec["layers"] / peft_layers
            row["speedup_full_vs_extrapolated_peft"] = (
                row["peft_s_full_extrapolated"] / row["ours_best_s"]
            )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--shapes", default=None, help="comma list of " + ", ".join(ARCHS))
    parser.add_argument(
        "--rank", type=int, default=None, help="LoRA rank (default: 32 on CUDA, 16 on CPU)"
    )
    parser.add_argument(
        "--peft-layers", default=None, help="layers to time PEFT on, per shape (0 = skip)"
    )
    parser.add_argument(
        "--methods",
        default=None,
        help="variants to time: qr, gram, qr+cpu, gram+cpu (small problems on CPU)",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--profile", action="store_true", help="profile one call of the fastest variant per shape"
    )
    parser.add_argument("--out", type=Path, default=None, help="result file (default: results/)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads for both sides (default: 1 on CPU)",
    )
    args = parser.parse_args()
    cuda = args.device.startswith("cuda")
    shapes = (args.shapes or ("qwen7b" if cuda else "tiny,qwen0.5b")).split(",")
    rank = args.rank or (32 if cuda else 16)
    peft_layers = [int(x) for x in (args.peft_layers or ("1" if cuda else "4,1")).split(",")]
    peft_layers += [peft_layers[-1]] * (len(shapes) - len(peft_layers))
    methods = (args.methods or ("qr,gram,qr+cpu,gram+cpu" if cuda else "qr,gram")).split(",")
    if args.threads or not cuda:
        # On a shared machine one thread per side avoids measuring thread hand-offs under contention.
        torch.set_num_threads(args.threads or 1)
    torch.manual_seed(0)
    import peft
    import transformers

    report = {
        "benchmark": "operators.svd_merge",
        "anchor": "peft add_weighted_adapter(combination_type='svd')",
        "device": torch.cuda.get_device_name() if cuda else platform.processor() or "cpu",
        "torch": torch.__version__,
        "peft": peft.__version__,
        "transformers": transformers.__version__,
        "threads": torch.get_num_threads(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "cases": [
            run_case(s, rank, p, args.device, args.repeats, methods, args.profile)
            for s, p in zip(shapes, peft_layers, strict=True)
        ],
    }
    out = args.out or RESULTS / f"operators_{'cuda' if cuda else 'cpu'}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=2)
    out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
