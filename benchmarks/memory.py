"""GPU memory at the Qwen2.5-0.5B and 1.5B shapes, measured against ``docs/memory-plan.md``.

For each shape (random bf16 weights of the real configuration; memory does not depend on the
values), on one CUDA device, in one process:

- ``base_weights``: allocated after the model is on the device (plan: parameters x 2 B);
- ``adapters``: 8 rank-32 adapters added to the host (plan: float32 factors, 4 B a parameter);
- ``adamw``: one learner step of one adapter creates its AdamW moments (plan: 8 B a parameter);
- ``decode_hf`` / ``decode_static``: peak above the resting state while 64 rows decode a
  ``--prompt``-token prompt plus ``--new`` tokens, and for ``static`` what stays allocated
  after the call (its caches are kept for reuse); plan: KV bytes per token x rows x length;
- ``learner_mb<M>``: peak above the resting state of one learner step on 2 x M rollouts of
  ``--prompt + --new`` tokens at micro-batch M; per token of the micro-batch it is compared
  with the plan's saved activations (per token) plus logits (per completion token).

The measured per-token learner figure at both shapes gives the 7B projection (scaled by the
plan's own 7B/1.5B ratio) and so the largest micro-batch that fits 80 GB. Writes
``memory_cuda.json`` to ``--out`` (default ``benchmarks/results/``). Skips (exit 0, one line)
without CUDA: nothing here means anything on a CPU.

Usage::

    python benchmarks/memory.py                     # both shapes
    python benchmarks/memory.py --shapes 0.5b --prompt 256 --new 256
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from redqueen.engine import AdapterHost, Learner, LearnerConfig, SamplingParams
from redqueen.engine._rollout import Rollout
from redqueen.genomes import LoRAGenome

RESULTS = Path(__file__).resolve().parent / "results"
GB = 1e9
MB = 1e6

SHAPES = {
    "0.5b": dict(
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
    ),
    "1.5b": dict(
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
    ),
}
#: docs/memory-plan.md, "Learner activations": saved activations per token (MB) and the
#: logits' share per completion token, for the shapes measured here and for the 7B.
PLAN_ACTIVATIONS_MB = {"0.5b": 1.2, "1.5b": 2.6, "7b": 5.5}
PLAN_LOGITS_MB = 1.2


def config(shape: str) -> Qwen2Config:
    return Qwen2Config(
        vocab_size=151936,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        bos_token_id=151643,
        eos_token_id=151643,
        pad_token_id=151643,
        **SHAPES[shape],
    )


def allocated() -> int:
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated()


def peak_above(fn, rest: int) -> tuple[int, float]:
    """Peak allocated bytes above ``rest`` while ``fn`` runs, and its seconds."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - rest, time.perf_counter() - t


def measure(
    shape: str, prompt: int, new: int, rows: int, micro: list[int], device: str = "cuda"
) -> dict:
    from rollout import numbered_tokenizer  # benchmarks/ is on sys.path (see main)

    cfg = config(shape)
    torch.cuda.empty_cache()
    start = allocated()
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
    n_params = sum(p.numel() for p in model.parameters())
    weights = allocated() - start
    host = AdapterHost(
        model,
        tokenizer=numbered_tokenizer(cfg.vocab_size, cfg.pad_token_id),
        device=device,
        dtype=torch.bfloat16,
        max_batch_size=rows,
    )
    host.eos_token_ids = set()
    before = allocated()
    rng = torch.Generator().manual_seed(0)
    rank, names = 32, [f"a{i}" for i in range(8)]
    for name in names:
        host.add_adapter(
            name,
            LoRAGenome.random(
                host.module_shapes, rank=rank, alpha=2.0 * rank, rng=rng, init="gaussian", std=0.02
            ),
        )
    adapters = allocated() - before
    adapter_params = sum((i + o) * rank for i, o in host.module_shapes.values())
    kv_per_token = (
        2
        * cfg.num_hidden_layers
        * cfg.num_key_value_heads
        * (cfg.hidden_size // cfg.num_attention_heads)
        * 2
    )

    prompts = [
        torch.randint(3, cfg.vocab_size, (prompt,), generator=rng).tolist() for _ in range(rows)
    ]
    mixed = [names[i % 8] for i in range(rows)]
    params = [SamplingParams(max_new_tokens=new, temperature=1.0, seed=0)] * rows
    report: dict = {
        "shape": shape,
        "parameters": n_params,
        "prompt_tokens": prompt,
        "new_tokens": new,
        "rows": rows,
        "rank": rank,
        "adapters": len(names),
        "base_weights_gb": {
            "measured": round(weights / GB, 3),
            "plan": round(n_params * 2 / GB, 3),
        },
        "adapters_8_gb": {
            "measured": round(adapters / GB, 3),
            "plan": round(8 * adapter_params * 4 / GB, 3),
        },
    }

    # The learner first (its AdamW moments are part of the resting state of every later figure).
    learner = Learner(host, LearnerConfig(lr=1e-6, micro_batch_size=max(micro)))
    gens = host.backend.generate(
        [prompts[0]], [names[0]], [SamplingParams(max_new_tokens=8, seed=1)]
    )
    tiny = [
        Rollout(gens[0].prompt_ids, gens[0].token_ids, gens[0].logprobs, 1.0),
        Rollout(gens[0].prompt_ids, gens[0].token_ids, gens[0].logprobs, -1.0),
    ]
    before = allocated()
    learner.step(names[0], tiny)
    report["adamw_one_adapter_gb"] = {
        "measured": round((allocated() - before) / GB, 3),
        "plan": round(adapter_params * 8 / GB, 3),
    }

    rest = allocated()
    length = prompt + new
    plan_kv = kv_per_token * rows * length
    peak, secs = peak_above(lambda: host.backend.generate(prompts, mixed, params), rest)
    report["decode_hf"] = {
        "peak_above_rest_gb": round(peak / GB, 3),
        "plan_kv_cache_gb": round(plan_kv / GB, 3),
        "ratio_to_plan": round(peak / plan_kv, 3),
        "seconds": round(secs, 2),
        "left_after_call_gb": round((allocated() - rest) / GB, 3),
    }
    torch.cuda.empty_cache()
    try:
        from redqueen.engine import BACKENDS

        static = BACKENDS["static"](host)
        peak, secs = peak_above(lambda: static.generate(prompts, mixed, params), rest)
        report["decode_static"] = {
            "peak_above_rest_gb": round(peak / GB, 3),
            "plan_kv_cache_gb": round(plan_kv / GB, 3),
            "ratio_to_plan": round(peak / plan_kv, 3),
            "seconds": round(secs, 2),
            "left_after_call_gb": round((allocated() - rest) / GB, 3),
        }
    except Exception as exc:  # a figure missing is reported, not hidden
        report["decode_static"] = {"error": f"{type(exc).__name__}: {exc}"}
    torch.cuda.empty_cache()

    # Learner activations: 2 x M rollouts of prompt + new tokens, micro-batch M.
    rest = allocated()
    plan_per = {}
    for m in micro:
        learner.config = LearnerConfig(lr=1e-6, micro_batch_size=m)
        rolls = [
            Rollout(
                tuple(prompts[i]), tuple(range(3, 3 + new)), (-1.0,) * new, 1.0 if i % 2 else -1.0
            )
            for i in range(2 * m)
        ]
        peak, secs = peak_above(lambda rolls=rolls: learner.step(names[0], rolls), rest)
        per_token = peak / (m * length)
        plan = (PLAN_ACTIVATIONS_MB[shape] * MB * length + PLAN_LOGITS_MB * MB * new) * m
        plan_per[m] = peak / plan
        report[f"learner_mb{m}"] = {
            "peak_above_rest_gb": round(peak / GB, 3),
            "per_token_mb": round(per_token / MB, 3),
            "plan_gb": round(plan / GB, 3),
            "ratio_to_plan": round(peak / plan, 3),
            "seconds": round(secs, 2),
        }
        torch.cuda.empty_cache()
    report["peak_allocated_gb"] = round(torch.cuda.max_memory_allocated() / GB, 3)
    report["learner_ratio_to_plan"] = round(max(plan_per.values()), 3)
    torch.cuda.empty_cache()
    return report


def main(argv: list[str] | None = None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="*", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--prompt", type=int, default=1024, help="prompt tokens per row")
    parser.add_argument("--new", type=int, default=1024, help="new tokens per row")
    parser.add_argument("--rows", type=int, default=64, help="rows decoded together")
    parser.add_argument("--micro", type=int, nargs="*", default=[1, 2, 4])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("memory.py: skipped, no CUDA device (the figures are GPU memory)")
        return None
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    report = {
        "benchmark": "memory",
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "shapes": {},
    }
    out = args.out / "memory_cuda.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    for shape in args.shapes:
        report["shapes"][shape] = measure(shape, args.prompt, args.new, args.rows, args.micro)
        print(json.dumps(report["shapes"][shape], indent=1), flush=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
    # 7B: the plan's per-token activations, corrected by the worst measured/plan ratio.
    ratios = [r["learner_ratio_to_plan"] for r in report["shapes"].values()]
    if ratios:
        worst = max(ratios)
        length = 2048
        per_rollout = worst * (PLAN_ACTIVATIONS_MB["7b"] * length + PLAN_LOGITS_MB * 1024) * MB
        fixed = (15.23 + 8.1 + 7.5 + 3.0) * GB  # weights, 8 adapters + AdamW, KV (64 x 2048), slack
        fits = int((80 * GB - fixed) // per_rollout)
        report["projection_7b"] = {
            "learner_ratio_to_plan_used": worst,
            "rollout_length": length,
            "learner_gb_per_rollout": round(per_rollout / GB, 2),
            "fixed_gb": round(fixed / GB, 2),
            "largest_micro_batch_on_80gb": fits,
        }
        print(json.dumps(report["projection_7b"], indent=1))
    out.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
