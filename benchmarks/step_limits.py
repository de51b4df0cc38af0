"""What bounds a ``tiny`` step on this CPU: the learner's matrix products against the machine's
own rate, attention kernels against each other, and the cost of one decode step.

Builds the ``tiny`` preset's environment, plays a warm-up step and one recorded step (its
``generate`` calls and learner calls kept), then, on those same inputs:

* **learner:** one recorded step's learner calls run again under ``torch.profiler`` with FLOP
  counts; the matrix products' achieved GFLOP/s against the machine's fp32 rate at the
  learner's own shapes (measured here, same threads), and the time in attention and in
  everything else;
* **attention:** ``scaled_dot_product_attention`` (causal and masked) against eager and
  ``baddbmm`` forms, forward and backward, at the learner's longest shape;
* **decode:** each recorded ``generate`` call timed whole and with a budget of one token (the
  prefill), so ``(whole - prefill) / (tokens - 1)`` is the mean cost of one decode step,
  beside the time to read the model's weights once at the machine's measured read rate;
* ``--compiled``: the decode step compiled with ``torch.compile(dynamic=True)``, the first
  call (compile) and the next ones timed against eager on the same recorded call.

Usage::

    python benchmarks/step_limits.py [--threads 2] [--rounds 3] [--compiled]

Writes ``benchmarks/results/step_limits.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from redqueen.experiments.build import build_environment  # noqa: E402
from redqueen.experiments.config import load_config  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addmm_")


def _best(fn: Any, repeats: int) -> float:
    """Fastest of ``repeats`` timed calls (seconds), after one untimed call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def gemm_rate(shapes: list[tuple[int, int, int]], repeats: int) -> dict[str, float]:
    """The machine's fp32 GFLOP/s for ``(m, k, n)`` products, best of ``repeats``."""
    out = {}
    for m, k, n in shapes:
        a, b = torch.randn(m, k), torch.randn(k, n)
        seconds = _best(lambda a=a, b=b: [a @ b for _ in range(10)], repeats) / 10
        out[f"{m}x{k}x{n}"] = 2 * m * k * n / seconds / 1e9
    return out


def read_rate(repeats: int) -> float:
    """GB/s of summing a 200 MB tensor (main memory, not cache)."""
    big = torch.randn(50_000_000)
    return 0.2 / _best(lambda: big.sum(), repeats)


def attention_forms(batch: int, heads: int, length: int, dim: int, repeats: int) -> dict[str, Any]:
    """Forward (no grad) and forward+backward seconds of four causal attention forms."""
    q, k, v = (torch.randn(batch, heads, length, dim, requires_grad=True) for _ in range(3))
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    additive = torch.zeros(length, length).masked_fill(~causal, float("-inf"))
    scale = dim**-0.5

    def sdpa_causal() -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def sdpa_mask() -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=causal)

    def eager() -> torch.Tensor:
        s = (q @ k.transpose(-1, -2)) * scale
        return torch.softmax(s.masked_fill(~causal, float("-inf")), -1) @ v

    def baddbmm() -> torch.Tensor:
        flat = batch * heads
        s = torch.baddbmm(
            additive.expand(flat, length, length),
            q.reshape(flat, length, dim),
            k.reshape(flat, length, dim).transpose(1, 2),
            alpha=scale,
        )
        return (torch.softmax(s, -1) @ v.reshape(flat, length, dim)).view_as(q)

    forms = {"sdpa_causal": sdpa_causal, "sdpa_mask": sdpa_mask, "eager": eager, "baddbmm": baddbmm}
    result: dict[str, Any] = {"shape": [batch, heads, length, dim]}
    for name, fn in forms.items():
        with torch.no_grad():
            forward = _best(fn, repeats)
        both = _best(lambda fn=fn: fn().sum().backward(), repeats)
        result[name] = {"forward_ms": forward * 1e3, "forward_backward_ms": both * 1e3}
    return result


def profile_learner(env: Any, calls: list[tuple[str, list]]) -> dict[str, Any]:
    """One recorded step's learner calls under the profiler: where their time goes."""
    for adapter_id, rollouts in calls:  # untimed pass: allocator and thread pool warm
        env.learner.step(adapter_id, rollouts)
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        for adapter_id, rollouts in calls:
            env.learner.step(adapter_id, rollouts)
    wall = time.perf_counter() - start
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events) / 1e6
    gemm_s = sum(e.self_cpu_time_total for e in events if e.key in GEMMS) / 1e6
    gemm_flops = sum(e.flops for e in events if e.key in GEMMS)
    attention_s = (
        sum(
            e.self_cpu_time_total
            for e in events
            if "scaled_dot_product" in e.key and "backward" not in e.key
        )
        / 1e6
    )
    attention_back_s = (
        sum(
            e.self_cpu_time_total
            for e in events
            if "scaled_dot_product" in e.key and "backward" in e.key
        )
        / 1e6
    )
    return {
        "adapters": len(calls),
        "rollouts": sum(len(r) for _, r in calls),
        "profiled_wall_s": wall,
        "self_cpu_s": total,
        "gemm_s": gemm_s,
        "gemm_gflop": gemm_flops / 1e9,
        "gemm_gflops_per_s": gemm_flops / gemm_s / 1e9 if gemm_s else 0.0,
        "attention_forward_s": attention_s,
        "attention_backward_s": attention_back_s,
        "other_s": total - gemm_s - attention_s - attention_back_s,
        "gemm_calls": sum(e.count for e in events if e.key in GEMMS),
    }


def time_decode(env: Any, call: tuple, repeats: int) -> dict[str, Any]:
    """Whole and prefill-only times of one recorded ``generate`` call, best of ``repeats``."""
    prompts, adapters, sampling = call
    host = env.host
    gens = host.generate(prompts, adapters, sampling)
    tokens = max(len(g.token_ids) for g in gens)
    seq = sampling if isinstance(sampling, (list, tuple)) else [sampling] * len(prompts)
    one = [dataclasses.replace(p, max_new_tokens=1) for p in seq]
    whole = _best(lambda: host.generate(prompts, adapters, sampling), repeats)
    prefill = _best(lambda: host.generate(prompts, adapters, one), repeats)
    n = max(getattr(p, "n", 1) for p in seq)
    return {
        "rows": len(prompts) * n,
        "longest_prompt_tokens": max(len(host.tokenizer(p)["input_ids"]) for p in prompts),
        "generated_tokens_longest": tokens,
        "whole_s": whole,
        "prefill_s": prefill,
        "decode_step_ms": (whole - prefill) / max(tokens - 1, 1) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="Repeats; the best is kept.")
    parser.add_argument("--compiled", action="store_true", help="Also time a compiled decode step.")
    parser.add_argument("--out", type=Path, default=RESULTS / "step_limits.json")
    args = parser.parse_args()
    cfg = load_config("tiny", [f"model.cpu_threads={args.threads}", "checkpoint_every=0"])
    env = build_environment(cfg)
    generate, learn = env.host.generate, env.learner.step
    generated: list[tuple] = []
    learned: list[tuple[str, list]] = []

    def record_generate(prompts, adapter_ids, sampling=None):  # type: ignore[no-untyped-def]
        generated.append((list(prompts), list(adapter_ids), sampling))
        return generate(prompts, adapter_ids, sampling)

    def record_learn(adapter_id, rollouts):  # type: ignore[no-untyped-def]
        learned.append((adapter_id, list(rollouts)))
        return learn(adapter_id, rollouts)

    result: dict[str, Any] = {"preset": "tiny", "threads": args.threads}
    try:
        env.step()  # warm-up
        env.host.generate, env.learner.step = record_generate, record_learn
        metrics = env.step().metrics
        env.host.generate, env.learner.step = generate, learn
        result["recorded_step_seconds"] = {
            k.removeprefix("seconds_"): float(v)
            for k, v in metrics.items()
            if k.startswith("seconds")
        }
        torch.set_num_threads(args.threads)
        longest = max(len(r.prompt_ids) + len(r.token_ids) for _, rs in learned for r in rs)
        config = env.host.model.config
        hidden, inner = config.hidden_size, config.intermediate_size
        # The learner's largest products: its longest row through the MLP and attention.
        result["machine_gemm_gflops"] = gemm_rate(
            [(longest, hidden, inner), (longest, hidden, hidden), (1024, 1024, 1024)], args.rounds
        )
        result["machine_read_gb_s"] = read_rate(args.rounds)
        result["attention"] = attention_forms(
            1,
            config.num_attention_heads,
            longest,
            config.hidden_size // config.num_attention_heads,
            args.rounds,
        )
        names = ["propose", "solve"] + [f"generate_{i}" for i in range(2, len(generated))]
        result["decode"] = {
            name: time_decode(env, call, args.rounds)
            for name, call in zip(names, generated, strict=False)
        }
        # After the decode timings: the learner's steps change the adapters.
        result["learner"] = profile_learner(env, learned)
        weights = sum(p.numel() * p.element_size() for p in env.host.model.parameters())
        result["model_weight_mb"] = weights / 1e6
        result["weights_read_ms_at_measured_rate"] = (
            weights / 1e9 / result["machine_read_gb_s"] * 1e3
        )
        if args.compiled:
            backend = env.host.backend
            eager = time_decode(env, generated[0], args.rounds)
            backend.decoder.step = torch.compile(backend.decoder.step, dynamic=True)
            start = time.perf_counter()
            env.host.generate(*generated[0])
            first = time.perf_counter() - start
            compiled = time_decode(env, generated[0], args.rounds)
            result["compiled_decode"] = {
                "first_call_s": first,
                "eager_whole_s": eager["whole_s"],
                "compiled_whole_s": compiled["whole_s"],
                "speedup": eager["whole_s"] / compiled["whole_s"],
            }
    finally:
        env.close()
    result["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}"
    result["load_average_after"] = list(os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
