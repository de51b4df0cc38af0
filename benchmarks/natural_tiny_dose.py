"""natural-tiny along its training: hand-written and held-out greedy answers at kept checkpoints.

Exploratory, not in ``BASE_MODELS_GPU.md``: the plan decides on the final model only. Training
on the CPU runs for hours, so its checkpoint's weights were kept as training passed each 48th
step (``runs/natural-tiny-snapshots/step-NNNN.pt``, each holding the step it was taken at);
this script scores each kept model, and the final one, with the plan's greedy endpoints:
the 94 hand-written programs, the first 256 natural and the first 256 grammar programs of the
corpus's held-out split (code_o, 96 new tokens). The curve says what more tokens at this size
would buy; it decides nothing. The snapshots lived outside git and were lost with the CPU run
at step 610 (amendment (c) of the plan); the five points scored before that are what
``results/natural_tiny_dose.json`` holds, and this script adds any snapshot it is given.

Writes ``results/natural_tiny_dose.json`` (every per-problem value).

Usage::

    python benchmarks/natural_tiny_dose.py [--snapshots runs/natural-tiny-snapshots] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import base_models_gpu as bm  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "natural_tiny_dose.json"
MODELS = ROOT / "runs" / "base-models-gpu" / "models"
TOKENS_PER_STEP = 64 * 1024


def snapshot_model(path: Path, tokenizer):
    """The model of a kept snapshot, and the step it was taken at."""
    from transformers import LlamaForCausalLM

    from redqueen.tinycoder.model import SIZES, tiny_coder_config

    saved = torch.load(path, weights_only=True)
    config = tiny_coder_config(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        max_position_embeddings=1024,
        **SIZES["tiny"],
    )
    model = LlamaForCausalLM(config)
    model.load_state_dict(saved["model"])
    return model.eval(), int(saved["step"])


def main() -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from redqueen.tinycoder.splits import load_splits
    from redqueen.verifiers import Executor

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", type=Path, default=ROOT / "runs" / "natural-tiny-snapshots")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(MODELS / "natural-tiny-checkpoint" / "tokenizer")
    held = load_splits(bm.WORK / "corpus").heldout
    parts = {
        "natural_heldout": [e for e in held if e.level == 0][: bm.HELDOUT_PROBLEMS],
        "grammar_heldout": [e for e in held if e.level > 0][: bm.HELDOUT_PROBLEMS],
    }
    result = json.loads(args.out.read_text()) if args.out.is_file() else {}
    result["note"] = (
        "Exploratory, not in the plan: natural-tiny's kept checkpoints scored with the plan's"
        " greedy endpoints; the plan decides on the final model only."
    )
    points = result.setdefault("points", {})
    candidates = [(p.stem, p) for p in sorted(args.snapshots.glob("step-*.pt"))]
    final = MODELS / "natural-tiny"
    if (final / "training.json").is_file():
        candidates.append(("final", final))
    with Executor(workers=1) as executor:
        for name, path in candidates:
            t0 = time.time()
            if name == "final":
                model = AutoModelForCausalLM.from_pretrained(path).eval()
                step = json.loads((path / "training.json").read_text())["steps"]
            else:
                model, step = snapshot_model(path, tokenizer)
            if str(step) in points:
                continue
            row = bm.score(model, tokenizer, parts, executor, None)
            points[str(step)] = {
                "step": step,
                "tokens": step * TOKENS_PER_STEP,
                "summary": bm.summarise(row),
                "per_problem": row,
                "seconds": round(time.time() - t0, 1),
            }
            summary = points[str(step)]["summary"]
            print(
                f"natural_tiny_dose: step {step}: "
                + ", ".join(f"{k} {v['correct']}/{v['n']}" for k, v in summary.items()),
                flush=True,
            )
            result["points"] = dict(sorted(points.items(), key=lambda kv: int(kv[0])))
            args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
