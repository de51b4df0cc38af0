"""Rollout throughput: mixed-adapter batches against the base model and PEFT's mixed batch.

Measures generated tokens per second, all in one run on one device, for:

- ``no_adapter``: the host decoding with the base model alone (the anchor for the ratios; one
  untimed full-length run of it comes first, so that no variant pays first-run allocations);
- ``one_adapter``: every row with the same adapter;
- ``mixed_8``: 8 adapters in one mixed batch (rows round-robin over adapters);
- ``sequential_8``: the same 8 adapters one after another, one batch each (rows split evenly);
- ``peft_mixed_8``: PEFT's mixed batch (``PeftModel.generate(adapter_names=...)``), the target's
  anchor, over the same adapters;
- ``hf_generate_no_adapter``: ``model.generate`` on the plain base model, for reference;
- ``static_no_adapter``, ``static_mixed_8``, ``static_one_adapter``: the same three rollouts
  through the ``static`` backend (static KV cache, segmented multi-LoRA, device sampling, and
  on CUDA the decode step replayed from CUDA graphs), on the same host and weights.

Each figure also comes as a fraction of the memory-bandwidth limit where the device's peak
bandwidth is known (``--bandwidth-gbs``, or the table below for H100/H200/A100): one decode
step must read every weight, the adapters' factors and the KV cache once, so
``batch * bandwidth / bytes_per_step`` tokens per second is the ceiling. The measured rate
includes the prefill, so the fraction slightly understates the decode loop's.

Every variant samples at temperature 1 with end-of-sequence disabled, so all decode exactly
``new_tokens`` tokens per row from the same prompts. On a GPU the model is a Qwen2.5-0.5B-shaped
``Qwen2Config`` with random bf16 weights; on CPU it is tiny-coder (or its shape, if the shipped
weights are missing). Writes ``benchmarks/results/rollout_<device>.json``.

Usage::

    python benchmarks/rollout.py                 # cuda if available, else cpu
    python benchmarks/rollout.py --device cpu --threads 1 --batch 16 --new-tokens 32
    python benchmarks/rollout.py --grid          # GPU: batch 64 and 256 x rank 32 and 64
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, models
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from redqueen.engine import (
    BACKENDS,
    DEFAULT_TARGET_MODULES,
    AdapterHost,
    Generation,
    SamplingParams,
)
from redqueen.genomes import LoRAGenome

RESULTS = Path(__file__).resolve().parent / "results"

#: Peak memory bandwidth (GB/s) of devices whose name contains the key.
PEAK_BANDWIDTH_GBS = {"H200": 4800.0, "H100": 3350.0, "A100": 2039.0}

#: The GPU grid of ``--grid``: (batch, rank).
GRID = ((64, 32), (256, 32), (64, 64), (256, 64))
GRID_VARIANTS = (
    "no_adapter",
    "mixed_8",
    "static_no_adapter",
    "static_mixed_8",
    "hf_generate_no_adapter",
)


def qwen_05b_shape() -> Qwen2Config:
    """Qwen2.5-0.5B's architecture (random weights are enough for throughput)."""
    return Qwen2Config(
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        bos_token_id=151643,
        eos_token_id=151643,
        pad_token_id=151643,
    )


def numbered_tokenizer(vocab_size: int, pad_id: int) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over ``t0 .. t<vocab-1>`` (decoding only needs the ids to exist)."""
    vocab = {f"t{i}": i for i in range(vocab_size)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="t0"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=f"t{pad_id}", unk_token="t0")


def build_model(
    device: torch.device, dtype: torch.dtype = torch.bfloat16
) -> tuple[torch.nn.Module, object, str]:
    if device.type == "cuda":
        config = qwen_05b_shape()
        torch.manual_seed(0)
        with torch.device(device):
            model = Qwen2ForCausalLM(config).to(dtype)
        return (
            model,
            numbered_tokenizer(config.vocab_size, config.pad_token_id),
            f"qwen2.5-0.5b-shape (random, {str(dtype).removeprefix('torch.')})",
        )
    try:
        from redqueen.assets import tiny_coder_path

        path = tiny_coder_path()
        model = AutoModelForCausalLM.from_pretrained(path)
        return model, AutoTokenizer.from_pretrained(path), "tiny-coder"
    except (ImportError, FileNotFoundError):
        config = LlamaConfig(
            vocab_size=2048,
            hidden_size=192,
            intermediate_size=512,
            num_hidden_layers=6,
            num_attention_heads=6,
            num_key_value_heads=6,
            tie_word_embeddings=True,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
        )
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config)
        return model, numbered_tokenizer(config.vocab_size, 0), "tiny-coder-shape (random, fp32)"


def timed(device: torch.device, fn: Callable[[], int]) -> tuple[int, float]:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    tokens = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return tokens, time.perf_counter() - start


def count(generations: list[Generation]) -> int:
    return sum(len(g.token_ids) for g in generations)


def bytes_per_step(
    model: torch.nn.Module, *, batch: int, rank: int, adapters: int, context: float
) -> dict[str, float]:
    """Bytes one decode step must read: weights, the adapters' factors, the KV cache.

    ``context`` is the mean number of cached tokens per row over the decode.
    """
    config = model.config
    size = next(model.parameters()).element_size()
    weights = sum(p.numel() for p in model.parameters()) * size
    if not getattr(config, "tie_word_embeddings", False):
        # An untied input embedding is looked up (a few rows), not read whole; a tied one is
        # read whole as the output head, so it stays in.
        weights -= model.get_input_embeddings().weight.numel() * size
    shapes = [
        (m.in_features, m.out_features)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Linear) and name.rsplit(".", 1)[-1] in DEFAULT_TARGET_MODULES
    ]
    factors = sum((i + o) * rank for i, o in shapes) * size * adapters
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    kv_per_token = 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * size
    return {"weights": weights, "adapters": factors, "kv_cache": kv_per_token * context * batch}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument(
        "--batch", type=int, default=None, help="rows (default 64 on GPU, 32 on CPU)"
    )
    parser.add_argument(
        "--new-tokens", type=int, default=None, help="default 256 on GPU, 64 on CPU"
    )
    parser.add_argument(
        "--prompt-tokens", type=int, default=64, help="longest prompt; others 50-100%% of it"
    )
    parser.add_argument(
        "--rank", type=int, default=None, help="LoRA rank (default 32 on GPU, 8 on CPU)"
    )
    parser.add_argument("--adapters", type=int, default=8)
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed rounds over all variants, best kept (default 1 on GPU, 3 on CPU)",
    )
    parser.add_argument(
        "--variants", nargs="*", default=None, help="subset to run (no_adapter always)"
    )
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument(
        "--bandwidth-gbs", type=float, default=None, help="peak memory bandwidth (default: table)"
    )
    parser.add_argument(
        "--grid",
        action="store_true",
        help="run batch 64/256 x rank 32/64 (GPU grid), each to rollout_<device>_b<B>_r<R>.json",
    )
    parser.add_argument(
        "--dtype",
        choices=("bfloat16", "float32"),
        default="bfloat16",
        help="GPU model dtype (float32 separates numerics from logic in the greedy check)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.grid:
        rest = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--grid"]
        if "--variants" not in rest:  # PEFT and the sequential variant would take most of it
            rest += ["--variants", *GRID_VARIANTS]
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        reports = []
        for batch, rank in GRID:
            out = RESULTS / f"rollout_{dev}_b{batch}_r{rank}.json"
            reports.append(
                main(rest + ["--batch", str(batch), "--rank", str(rank), "--out", str(out)])
            )
        return {"grid": reports}

    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    gpu = device.type == "cuda"
    batch = args.batch or (64 if gpu else 32)
    new_tokens = args.new_tokens or (256 if gpu else 64)
    rank = args.rank or (32 if gpu else 8)
    repeats = args.repeats or (1 if gpu else 3)
    n_adapters = args.adapters
    if batch % n_adapters:
        raise SystemExit(f"--batch {batch} must be a multiple of --adapters {n_adapters}")

    model, tokenizer, model_name = build_model(device, getattr(torch, args.dtype))
    reference = copy.deepcopy(model).to(device)  # left without our layers, for PEFT and HF generate
    host = AdapterHost(
        model,
        tokenizer=tokenizer,
        device=device,
        dtype=next(model.parameters()).dtype,
        max_batch_size=batch,  # every row in one decode batch, at 256 rows too
    )
    host.eos_token_ids = set()  # fixed-length decoding: every variant makes the same tokens
    static = BACKENDS["static"](host)  # the compiled path, over the same model and adapters
    segmented = compiled = static
    if "dense_lora" in inspect.signature(BACKENDS["static"]).parameters:  # older code: neither
        segmented = BACKENDS["static"](host, dense_lora=False)
        compiled = BACKENDS["static"](host, compile_step=True)
    # The per-row Triton kernel (Punica's BGMV) over the dense layout, where it can run.
    fused = fused_compiled = None
    if "fused_lora" in inspect.signature(BACKENDS["static"]).parameters:
        from redqueen.engine.backends._lora_kernel import available as kernel_available

        if kernel_available():
            fused = BACKENDS["static"](host, fused_lora=True)
            fused_compiled = BACKENDS["static"](host, fused_lora=True, compile_step=True)
    rng = torch.Generator().manual_seed(0)
    names = [f"a{i}" for i in range(n_adapters)]
    genomes = {
        name: LoRAGenome.random(
            host.module_shapes, rank=rank, alpha=2 * rank, rng=rng, init="gaussian", std=0.02
        )
        for name in names
    }
    for name, genome in genomes.items():
        host.add_adapter(name, genome)

    vocab = model.config.vocab_size
    lengths = torch.randint(
        args.prompt_tokens // 2, args.prompt_tokens + 1, (batch,), generator=rng
    )
    prompts = [torch.randint(3, vocab, (int(n),), generator=rng).tolist() for n in lengths]
    mixed_rows = [names[i % n_adapters] for i in range(batch)]
    per_adapter = batch // n_adapters

    def ours(
        rows: list[str | None], ids: list[list[int]], tokens: int, backend: object = None
    ) -> int:
        params = [SamplingParams(max_new_tokens=tokens, temperature=1.0, seed=0)] * len(ids)
        return count((backend or host.backend).generate(ids, rows, params))

    def sequential(tokens: int) -> int:
        total = 0
        for k, name in enumerate(names):
            chunk = prompts[k * per_adapter : (k + 1) * per_adapter]
            total += ours([name] * per_adapter, chunk, tokens)
        return total

    # PEFT anchor over the same adapters, on an untouched copy of the base model.
    from peft import LoraConfig, get_peft_model

    peft_config = LoraConfig(
        r=rank, lora_alpha=2 * rank, target_modules=list(DEFAULT_TARGET_MODULES)
    )
    peft_model = get_peft_model(copy.deepcopy(reference), peft_config, adapter_name=names[0])
    for name in names[1:]:
        peft_model.add_adapter(name, peft_config)
    for name, genome in genomes.items():
        genome.to(device=device, dtype=host.dtype).load_into(peft_model, name)
    peft_model.eval()
    tokenizer.padding_side = "left"
    width = max(len(p) for p in prompts)
    input_ids = torch.full((batch, width), host.pad_token_id, dtype=torch.long)
    attention = torch.zeros((batch, width), dtype=torch.long)
    for i, p in enumerate(prompts):
        input_ids[i, width - len(p) :] = torch.tensor(p)
        attention[i, width - len(p) :] = 1
    input_ids, attention = input_ids.to(device), attention.to(device)

    def hf_generate(model: torch.nn.Module, tokens: int, **extra: object) -> int:
        with torch.inference_mode():
            out = model.generate(
                input_ids=input_ids,
                attention_mask=attention,
                max_new_tokens=tokens,
                min_new_tokens=tokens,
                do_sample=True,
                temperature=1.0,
                top_k=0,
                top_p=1.0,
                pad_token_id=host.pad_token_id,
                **extra,
            )
        return int((out.shape[1] - width) * batch)

    # Most important first, so that a run cut short still has the anchor and the target's ratio.
    variants: dict[str, Callable[[int], int]] = {
        "no_adapter": lambda t: ours([None] * batch, prompts, t),
        f"mixed_{n_adapters}": lambda t: ours(mixed_rows, prompts, t),
        "static_no_adapter": lambda t: ours([None] * batch, prompts, t, static),
        f"static_mixed_{n_adapters}": lambda t: ours(mixed_rows, prompts, t, static),
        "hf_generate_no_adapter": lambda t: hf_generate(reference, t),
        "one_adapter": lambda t: ours([names[0]] * batch, prompts, t),
        f"peft_mixed_{n_adapters}": lambda t: hf_generate(peft_model, t, adapter_names=mixed_rows),
        f"sequential_{n_adapters}": sequential,
        "static_one_adapter": lambda t: ours([names[0]] * batch, prompts, t, static),
        f"static_segmented_mixed_{n_adapters}": lambda t: ours(mixed_rows, prompts, t, segmented),
        "static_compiled_no_adapter": lambda t: ours([None] * batch, prompts, t, compiled),
        f"static_compiled_mixed_{n_adapters}": lambda t: ours(mixed_rows, prompts, t, compiled),
    }
    if fused is not None:  # ahead of the long anchors: the kernel's question comes first
        variants = {
            **{k: variants[k] for k in list(variants)[:4]},
            f"static_fused_mixed_{n_adapters}": lambda t: ours(mixed_rows, prompts, t, fused),
            f"static_compiled_fused_mixed_{n_adapters}": (
                lambda t: ours(mixed_rows, prompts, t, fused_compiled)
            ),
            **{k: variants[k] for k in list(variants)[4:]},
        }
    if args.variants:
        unknown = set(args.variants) - set(variants)
        if unknown or "no_adapter" not in args.variants:
            raise SystemExit(f"--variants must include no_adapter and name only {sorted(variants)}")
        variants = {k: v for k, v in variants.items() if k in args.variants}
    # The two backends must agree before their speeds mean anything: greedy, mixed adapters.
    check = [SamplingParams(max_new_tokens=16, temperature=0.0)] * batch
    greedy_hf = [g.token_ids for g in host.backend.generate(prompts, mixed_rows, check)]
    greedy_static = [g.token_ids for g in static.generate(prompts, mixed_rows, check)]
    same_greedy = greedy_hf == greedy_static
    fused_greedy: dict | None = None
    greedy_fused: list | None = None
    if fused is not None:
        try:
            greedy_fused = [g.token_ids for g in fused.generate(prompts, mixed_rows, check)]
        except Exception as error:  # reported, and the other variants still run
            fused_greedy = {"error": f"{type(error).__name__}: {error}"[:500]}
            greedy_fused = None
    if greedy_fused is not None:
        fused_greedy = {
            "rows_identical_to_hf": sum(
                a == b for a, b in zip(greedy_hf, greedy_fused, strict=True)
            ),
            "rows_identical_to_dense": sum(
                a == b for a, b in zip(greedy_static, greedy_fused, strict=True)
            ),
            "rows": batch,
        }
        print(f"fused kernel greedy agreement (mixed batch): {fused_greedy}", flush=True)
    # Where they part: the first differing position per row (16 = the whole row agrees).
    # Random weights give near-flat logits, where bf16 rounding alone can flip an argmax.
    agree_to = [
        next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))
        for a, b in zip(greedy_hf, greedy_static, strict=True)
    ]
    greedy_agreement = {
        "rows_identical": sum(a == b for a, b in zip(greedy_hf, greedy_static, strict=True)),
        "rows": batch,
        "mean_tokens_before_first_difference": round(sum(agree_to) / batch, 2),
        "tokens": 16,
    }
    print(
        f"static backend greedy tokens identical to hf (mixed batch): {same_greedy} "
        f"{greedy_agreement}"
    )
    bandwidth = args.bandwidth_gbs or next(
        (
            v
            for k, v in PEAK_BANDWIDTH_GBS.items()
            if gpu and k in torch.cuda.get_device_name(device)
        ),
        None,
    )
    context = sum(len(p) for p in prompts) / batch + new_tokens / 2
    step_bytes = bytes_per_step(model, batch=batch, rank=rank, adapters=n_adapters, context=context)

    def limit(label: str) -> float | None:
        """Tokens per second at the bandwidth limit for this variant (None: unknown peak)."""
        if bandwidth is None:
            return None
        read = step_bytes["weights"] + step_bytes["kv_cache"]
        if "mixed" in label or "sequential" in label:
            read += step_bytes["adapters"]
        elif "one_adapter" in label:
            read += step_bytes["adapters"] / n_adapters
        return batch * bandwidth * 1e9 / read

    # One untimed full-length run first: the caching allocator meets every KV-cache size once,
    # so no variant pays for device allocations that only the first run makes.
    timed(device, lambda: variants["no_adapter"](new_tokens))
    if "static_no_adapter" in variants:
        timed(device, lambda: variants["static_no_adapter"](new_tokens))
    device_name = (
        torch.cuda.get_device_name(device) if gpu else platform.processor() or platform.machine()
    )
    out = args.out or RESULTS / f"rollout_{'cuda' if gpu else 'cpu'}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, float]] = {}
    best_cpu: dict[str, float] = {}
    report: dict = {}
    # Rounds over all variants (best of each kept), so that a drift in machine load hits every
    # variant alike rather than the ones that happened to run during it.
    rounds = [(r, label) for r in range(repeats) for label in variants]
    failed: dict[str, str] = {}
    for round_index, label in rounds:
        fn = variants[label]
        if label in failed:
            continue
        if round_index == 0:  # warm-up: kernels, allocator, caches (compilation: full length)
            warm = new_tokens if "compiled" in label else 4
            try:
                timed(device, lambda fn=fn, warm=warm: fn(warm))
            except Exception as error:  # a new kernel path must not cost the others' figures
                if "fused" not in label:
                    raise
                failed[label] = f"{type(error).__name__}: {error}"[:500]
                print(f"{label:>24}: failed: {failed[label]}", flush=True)
                continue
        cpu_start = time.process_time()
        tokens, seconds = timed(device, lambda fn=fn: fn(new_tokens))
        # Process CPU time leaves out the time other processes on a shared machine took the
        # cores away; with one thread it is the decode's own compute (CPU runs only).
        cpu_seconds = time.process_time() - cpu_start
        best_cpu[label] = min(best_cpu.get(label, cpu_seconds), cpu_seconds)
        if label not in results or seconds < results[label]["seconds"]:
            ceiling = limit(label)
            results[label] = {
                "tokens": tokens,
                "seconds": round(seconds, 4),
                "tokens_per_s": round(tokens / seconds, 1),
                "bandwidth_limit_tokens_per_s": None if ceiling is None else round(ceiling),
                "fraction_of_bandwidth_limit": (
                    None if ceiling is None else round(tokens / seconds / ceiling, 4)
                ),
            }
        results[label]["tokens_per_cpu_s"] = round(tokens / best_cpu[label], 1)
        print(
            f"{label:>24}: {tokens} tokens in {seconds:.2f} s = {tokens / seconds:,.0f} tok/s "
            f"({tokens / cpu_seconds:,.0f} per CPU second)",
            flush=True,
        )
        anchor = results["no_adapter"]["tokens_per_s"]
        for row in results.values():
            row["ratio_vs_no_adapter"] = round(row["tokens_per_s"] / anchor, 3)
        mixed = results.get(f"mixed_{n_adapters}")
        peft = results.get(f"peft_mixed_{n_adapters}")
        hf = results.get("hf_generate_no_adapter")
        s_none = results.get("static_no_adapter")
        s_mixed = results.get(f"static_mixed_{n_adapters}")
        s_fused = results.get(f"static_fused_mixed_{n_adapters}")
        c_fused = results.get(f"static_compiled_fused_mixed_{n_adapters}")
        c_none = results.get("static_compiled_no_adapter")
        report = {
            "benchmark": "rollout",
            "device": device_name,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "model": model_name,
            "dtype": str(host.dtype),
            "batch": batch,
            "new_tokens": new_tokens,
            "prompt_tokens": args.prompt_tokens,
            "rank": rank,
            "adapters": n_adapters,
            "threads": torch.get_num_threads(),
            "repeats": repeats,
            "results": results,
            "mixed_vs_no_adapter": mixed["ratio_vs_no_adapter"] if mixed else None,
            "peft_mixed_vs_no_adapter": peft["ratio_vs_no_adapter"] if peft else None,
            "mixed_vs_hf_generate_no_adapter": (
                round(mixed["tokens_per_s"] / hf["tokens_per_s"], 3) if mixed and hf else None
            ),
            "mixed_speedup_over_peft_mixed": (
                round(mixed["tokens_per_s"] / peft["tokens_per_s"], 2) if mixed and peft else None
            ),
            "target_mixed_vs_no_adapter": 0.7,
            "static_greedy_identical_to_hf": same_greedy,
            "static_greedy_agreement": greedy_agreement,
            "peak_bandwidth_gbs": bandwidth,
            "bytes_per_decode_step": {k: round(v) for k, v in step_bytes.items()},
            "static_no_adapter_vs_no_adapter": (
                round(s_none["tokens_per_s"] / results["no_adapter"]["tokens_per_s"], 3)
                if s_none
                else None
            ),
            "static_mixed_vs_mixed": (
                round(s_mixed["tokens_per_s"] / mixed["tokens_per_s"], 3)
                if s_mixed and mixed
                else None
            ),
            "static_vs_hf_on_cpu_time": (
                {
                    k: round(
                        results[f"static_{k}"]["tokens_per_cpu_s"] / results[k]["tokens_per_cpu_s"],
                        3,
                    )
                    for k in ("no_adapter", f"mixed_{n_adapters}", "one_adapter")
                    if k in results and f"static_{k}" in results
                }
                if not gpu
                else None
            ),
            "static_mixed_vs_static_no_adapter": (
                round(s_mixed["tokens_per_s"] / s_none["tokens_per_s"], 3)
                if s_mixed and s_none
                else None
            ),
            "fused_kernel": None
            if fused is None
            else {
                "greedy": fused_greedy,
                "failed": failed,
                "static_fused_mixed_vs_static_no_adapter": (
                    round(s_fused["tokens_per_s"] / s_none["tokens_per_s"], 3)
                    if s_fused and s_none
                    else None
                ),
                "static_fused_mixed_vs_static_mixed": (
                    round(s_fused["tokens_per_s"] / s_mixed["tokens_per_s"], 3)
                    if s_fused and s_mixed
                    else None
                ),
                "static_compiled_fused_mixed_vs_static_compiled_no_adapter": (
                    round(c_fused["tokens_per_s"] / c_none["tokens_per_s"], 3)
                    if c_fused and c_none
                    else None
                ),
            },
            "targets": {
                "cuda_static_no_adapter_tokens_per_s": 30000,
                "cuda_static_mixed_vs_static_no_adapter": 0.9,
                "cpu_static_vs_hf": 1.5,
            },
        }
        out.write_text(json.dumps(report, indent=2) + "\n")
    if failed and report.get("fused_kernel"):  # failures after the last timed variant too
        report["fused_kernel"]["failed"] = failed
        out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "results"}, indent=2))
    return report


if __name__ == "__main__":
    main()
