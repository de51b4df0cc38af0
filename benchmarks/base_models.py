"""Two base models side by side on the same tasks: the shipped ``tiny-coder`` and a new one.

For each model: the rates of :func:`redqueen.tinycoder.rates.measure_rates` (valid proposals,
solve rate at T=1, pass@k, greedy pass@1, per task type) on the *new* model's held-out and OOD
splits, with the same seed, so both models answer exactly the same tasks; and greedy pass@1 on
the frozen ``code_output`` evaluation suite (``redqueen eval --model M -b code_output``). Both
models run in this one process, one after the other, on the same machine.

Usage::

    python benchmarks/base_models.py --new out/coder [--n 128] [--samples 8]

Writes ``benchmarks/results/base_models.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from redqueen.assets import tiny_coder_path
from redqueen.tinycoder.card import write_model_card
from redqueen.tinycoder.corpus import load_corpus
from redqueen.tinycoder.pretrain import PROFILES
from redqueen.tinycoder.rates import TASK_TYPES, measure_rates
from redqueen.verifiers import Executor

RESULTS = Path(__file__).resolve().parent / "results"


def suite_pass_at_1(model: Path, threads: int) -> dict:
    """Greedy pass@1 on the frozen code_output suite, from ``redqueen eval --model``."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [str(Path(sys.executable).with_name("redqueen")), "eval", "--model", str(model)]
            + ["-b", "code_output"]
            + ["--out", tmp, "--cpu-threads", str(threads)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        report = json.loads((Path(tmp) / "eval_code_output.json").read_text())
    return report


def _settings(trained: dict) -> str:
    """The pretraining command's rate settings as flags (the profile's when not given)."""
    command = trained.get("command", "")
    if "--max-new-tokens" in command:
        return command
    profile = command.split("--profile", 1)[1].split()[0] if "--profile" in command else "ci"
    return f"--max-new-tokens {PROFILES[profile].get('max_new_tokens', 0)}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--new", type=Path, required=True, help="the new model folder")
    p.add_argument("--old", type=Path, default=None, help="default: the shipped tiny-coder")
    p.add_argument("--n", type=int, default=128)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--task-types",
        nargs="+",
        default=list(TASK_TYPES),
        help="measure these task types only (a leading subset draws the same tasks)",
    )
    p.add_argument("--splits", nargs="+", default=["heldout", "ood"], choices=("heldout", "ood"))
    p.add_argument("--no-suite", action="store_true", help="skip the code_output suite")
    p.add_argument("--out", type=Path, default=RESULTS / "base_models.json")
    p.add_argument(
        "--write",
        action="store_true",
        help="record both models' rates (this run's) in the new model's training.json and card",
    )
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(args.threads)
    models = {"tiny-coder": args.old or tiny_coder_path(), "new": args.new}
    splits = {s: load_corpus(args.new / f"{s}.jsonl") for s in args.splits}
    result: dict = {
        "setup": {
            "splits": f"{args.new}/{{heldout,ood}}.jsonl (the new model's held-out programs)",
            "n": args.n,
            "samples": args.samples,
            "max_new_tokens": args.max_new_tokens,
            "task_types": args.task_types,
            "seed": 0,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
        },
        "models": {},
    }
    trained = json.loads((args.new / "training.json").read_text())
    own = trained.get("rates") or {}
    with Executor(workers=2) as executor:
        for name, folder in models.items():
            t0 = time.time()
            model = AutoModelForCausalLM.from_pretrained(folder)
            tokenizer = AutoTokenizer.from_pretrained(folder)
            row: dict = {
                "path": str(folder),
                "parameters": sum(x.numel() for x in model.parameters()),
            }
            for split, entries in splits.items():
                mine = own.get(split) or {}
                if (
                    name == "new"
                    and mine.get("n_tasks") == args.n
                    and mine.get("samples") == args.samples
                    and trained.get("seed", 0) == 0
                    and f"--max-new-tokens {args.max_new_tokens}" in _settings(trained)
                ):
                    # pretrain measured exactly these tasks with this seed: not measured twice
                    row[split] = {**mine, "from": "training.json"}
                    continue
                row[split] = measure_rates(
                    model,
                    tokenizer,
                    entries,
                    executor=executor,
                    n=args.n,
                    samples=args.samples,
                    seed=0,
                    max_new_tokens=args.max_new_tokens,
                    task_types=args.task_types,
                ).to_dict()
            if not args.no_suite:
                row["code_output_suite"] = suite_pass_at_1(Path(folder), args.threads)
            row["seconds"] = round(time.time() - t0, 1)
            result["models"][name] = row
            args.out.write_text(json.dumps(result, indent=2) + "\n")
    if args.write:
        old_name = "tiny-coder" if args.old is None else args.old.name
        trained["side_by_side"] = {
            "model": old_name,
            **{s: result["models"]["tiny-coder"][s] for s in splits},
        }
        if not args.no_suite:
            trained["side_by_side"]["code_output_suite"] = {
                n: result["models"][n]["code_output_suite"] for n in ("tiny-coder", "new")
            }
        (args.new / "training.json").write_text(json.dumps(trained, indent=2) + "\n")
        write_model_card(args.new, trained)
    print(
        json.dumps(
            {
                n: {s: r[s]["greedy_solve_rate"] for s in splits}
                for n, r in result["models"].items()
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
