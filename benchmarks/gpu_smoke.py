"""GPU smoke: a few co-evolution steps on a Qwen2.5-0.5B-shaped model (random weights, bf16).

Throughput and memory, not quality: with random weights no proposal is valid. Usage:
``python benchmarks/gpu_smoke.py [STEPS]`` on a CUDA machine (``SMOKE_DRY=1`` rehearses the same
script on the CPU with a tiny model). Writes ``gpu_smoke.json`` to ``$OUT`` or
``benchmarks/results/``.
"""

import json
import os
import string
import sys
import time
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

out = Path(os.environ.get("OUT", Path(__file__).resolve().parent / "results"))
DRY = os.environ.get("SMOKE_DRY") == "1"  # a tiny CPU rehearsal of the same script
DEV = "cpu" if DRY else "cuda"
model_dir = Path("/tmp/qwen05b-shape")
t0 = time.time()
specials = ["<pad>", "<s>", "</s>", "<unk>"]
chars = sorted(set(string.printable))
vocab = {tok: i for i, tok in enumerate(specials + chars)}
for i in range(len(vocab), 151936):
    vocab[f"<t{i}>"] = i
tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
tok.decoder = decoders.Fuse()
tokenizer = PreTrainedTokenizerFast(
    tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
)
config = Qwen2Config(
    vocab_size=151936, hidden_size=64 if DRY else 896, intermediate_size=128 if DRY else 4864,
    num_hidden_layers=2 if DRY else 24, num_attention_heads=14 if not DRY else 4, num_key_value_heads=2, max_position_embeddings=32768,
    tie_word_embeddings=True, rope_theta=1000000.0, pad_token_id=0, bos_token_id=1, eos_token_id=2,
)
with torch.device(DEV):
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
model.save_pretrained(model_dir)
tokenizer.save_pretrained(model_dir)
del model
if not DRY:
    torch.cuda.empty_cache()
build_s = time.time() - t0


def sync():
    if not DRY:
        torch.cuda.synchronize()

from redqueen.engine import AdapterHost, SamplingParams  # noqa: E402
from redqueen.environments.coevolution import CoevolutionEnv  # noqa: E402
from redqueen.genomes import LoRAGenome  # noqa: E402
from redqueen.settings import (  # noqa: E402
    EngineSettings,
    ExecutorSettings,
    GameSettings,
    PopulationSettings,
    ReplacementConfig,
)

report = {"model": "Qwen2.5-0.5B shape, random weights, bf16", "build_s": build_s}

# 1. Per-row sampling on CUDA bf16: a row sampled alone vs inside a mixed batch.
host = AdapterHost(model_dir, device=DEV, dtype=torch.bfloat16)
for i in range(8):
    host.add_adapter(f"a{i}", LoRAGenome.random(host.module_shapes, rank=32, alpha=64.0,
                     rng=torch.Generator().manual_seed(i), init="gaussian", std=0.02))
prompts = [f"def f{i}(x):\n    return x" for i in range(16)]
rows = [f"a{i % 8}" for i in range(16)]
params = SamplingParams(max_new_tokens=8 if DRY else 64, temperature=1.0, seed=7)
sync()
t = time.time()
batched = host.generate(prompts, rows, params)
sync()
gen_s = time.time() - t
alone = [host.generate([p], [r], params)[0] for p, r in zip(prompts[:6], rows[:6], strict=True)]
same = [a.token_ids == b.token_ids for a, b in zip(alone, batched[:6], strict=True)]
prefix = [next((k for k, (x, y) in enumerate(zip(a.token_ids, b.token_ids, strict=False)) if x != y), len(a.token_ids))
          for a, b in zip(alone, batched[:6], strict=True)]
report["row_alone_vs_batched_identical"] = same
report["row_alone_vs_batched_common_prefix"] = prefix
report["mixed_batch_16x64_tokens_per_s"] = sum(len(g.token_ids) for g in batched) / gen_s
del host
if not DRY:
    torch.cuda.empty_cache()

# 2. Co-evolution steps, paper population shape (4 + 4, rank 32).
if not DRY:
    torch.cuda.reset_peak_memory_stats()
env = CoevolutionEnv(
    engine=EngineSettings(name=str(model_dir), device=DEV, dtype="bfloat16"),
    population=PopulationSettings(teachers=4, students=4, rank=32, alpha=64.0),
    game=GameSettings(tasks_per_teacher=8, answers_per_task=4, propose_max_new_tokens=16 if DRY else 256,
                      solve_max_new_tokens=8 if DRY else 128, executor=ExecutorSettings(workers=8)),
    replacement=ReplacementConfig(replace_every=2, cull_fraction=0.25, selection="tournament",
                                  operators={"svd_merge": 0.5, "gaussian": 0.5}, elitism=1),
    seed=0,
)
steps = []
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    sync()
    t = time.time()
    record = env.step()
    sync()
    steps.append({"seconds": time.time() - t, "valid_share": record.metrics.get("valid_share"),
                  "births": len(record.births), "tasks": len(record.tasks),
                  "generated_tokens": record.metrics.get("generated_tokens"),
                  "learner_skipped": record.metrics.get("learner_skipped")})
    print(steps[-1], flush=True)
env.close()
report["steps"] = steps
report["seconds_per_step_after_first"] = sum(s["seconds"] for s in steps[1:]) / max(1, len(steps) - 1)
report["peak_gpu_memory_gib"] = 0.0 if DRY else torch.cuda.max_memory_allocated() / 2**30
report["device"] = "cpu" if DRY else torch.cuda.get_device_name()
out.mkdir(parents=True, exist_ok=True)
(out / "gpu_smoke.json").write_text(json.dumps(report, indent=1))
print(json.dumps(report, indent=1))
