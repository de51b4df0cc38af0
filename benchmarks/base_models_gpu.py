"""Base models trained from nothing on natural and generated programs, on a GPU.

The plan, hypotheses, endpoints and decision rules are in ``benchmarks/BASE_MODELS_GPU.md``,
committed before any run. Three stages, each resumable:

1. the corpus ``natural`` (``redqueen.tinycoder.splits``, 60% natural programs, three quarters
   of them composed), built once (``--prepare`` builds it on the CPU, and packs it as
   ``corpus.tar.gz`` for the GPU machine);
2. each model of :data:`MODELS`, from nothing, with ``pretrain --profile full`` (a tokenizer
   fitted to the corpus, two epochs, bf16), trained in a scratch folder;
3. the endpoints of each model, and of tiny-coder and gpu-tiny-coder in the same run:
   greedy accuracy on the hand-written set, greedy code_o on the corpus's held-out programs
   (the grammar's and the natural ones apart), code_o proposals at T = 1 (valid, and valid and
   new), the training / held-out loss gap with its standard error; every per-problem value.

The result file is rewritten after each model, so a call cut short keeps what finished, and a
second call skips the models already scored. ``--smoke`` runs the whole path on the CPU at toy
size (a few hundred programs, the ``micro`` model, a few steps): a check of the script, not a
result.

Usage::

    python benchmarks/base_models_gpu.py --prepare                 # CPU: build and pack the corpus
    python benchmarks/base_models_gpu.py --results OUT.json --models-out DIR   # GPU: train, score
    python benchmarks/base_models_gpu.py --smoke --results /tmp/smoke.json    # CPU check
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tarfile
import time
from pathlib import Path

import continued_pretraining as cp
import torch
from scipy import stats
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
WORK = ROOT / "runs" / "base-models-gpu"
ANCHORS = {
    "tiny-coder": ROOT / "redqueen" / "assets" / "tiny-coder",
    "gpu-tiny-coder": RESULTS / "gpu_tiny_coder",
}
#: The plan's models, in the order they run: (name, size, --full-share).
MODELS = (
    ("natural-tiny-lean", "tiny", 0.3),
    ("natural-tiny", "tiny", 0.6),
    ("natural-base", "base", 0.6),
    ("natural-small", "small", 0.6),
)
CORPUS = {"seed": 0, "train": 100_000, "heldout": 2000, "ood": 1000, "idiom_share": 0.6,
          "composed_share": 0.75}  # fmt: skip
SMOKE_CORPUS = {**CORPUS, "train": 300, "heldout": 120, "ood": 20}
HELDOUT_PROBLEMS = 256
TARGETS = cp.TARGETS


def build_corpus(folder: Path, spec: dict, workers: int | None) -> None:
    """The corpus splits into ``folder`` (skipped when they are there)."""
    if (folder / "train.jsonl").is_file():
        return
    cmd = [
        sys.executable, "-m", "redqueen.tinycoder.splits", "--out", str(folder),
        "--train", str(spec["train"]), "--heldout", str(spec["heldout"]),
        "--ood", str(spec["ood"]), "--seed", str(spec["seed"]),
        "--idiom-share", str(spec["idiom_share"]), "--composed-share", str(spec["composed_share"]),
    ]  # fmt: skip
    if workers:
        cmd += ["--workers", str(workers)]
    cp._run(cmd)


def unpack(work: Path) -> None:
    """Unpack ``corpus.tar.gz`` (carried from the CPU) when the corpus folder is missing."""
    packed = work / "corpus.tar.gz"
    if not (work / "corpus" / "train.jsonl").is_file() and packed.is_file():
        with tarfile.open(packed) as tar:
            tar.extractall(work, filter="data")


def train(
    name: str,
    size: str,
    full_share: float,
    corpus: Path,
    scratch: Path,
    smoke: bool,
    cpu_threads: int | None = None,
) -> Path:
    """One model from nothing (resumable: the same command continues a stopped run); on the
    CPU (``cpu_threads`` given, amendment (a)) with that many torch threads."""
    folder = scratch / name
    if (folder / "training.json").is_file():
        return folder
    # Models with the same documents share the tokenizer fitted to them and the packed epochs
    # (both depend only on the corpus, --full-share and the seed): rendered once, not per size.
    checkpoint = scratch / f"{name}-checkpoint"
    for other, _, share in MODELS:
        source = scratch / f"{other}-checkpoint"
        if other != name and share == full_share and (source / "tokenizer").is_dir():
            checkpoint.mkdir(parents=True, exist_ok=True)
            if not (checkpoint / "tokenizer").exists():
                shutil.copytree(source / "tokenizer", checkpoint / "tokenizer")
            for cached in source.glob("epoch*.pt"):
                if not (checkpoint / cached.name).exists():
                    shutil.copy2(cached, checkpoint / cached.name)
            break
    cmd = [
        sys.executable, "-m", "redqueen.tinycoder.pretrain", "--out", str(folder),
        "--corpus", str(corpus), "--full-share", str(full_share), "--eval-n", "0",
        "--name", name, "--seed", "0",
    ]  # fmt: skip
    if smoke:
        cmd += ["--profile", "ci", "--size", "micro", "--max-steps", "4", "--seq-len", "256"]
    else:
        cmd += ["--profile", "full", "--size", size]
    if cpu_threads is not None:
        cmd += ["--device", "cpu", "--cpu-threads", str(cpu_threads)]
    cp._run(cmd)
    return folder


def loss_gap(
    model, tokenizer, corpus: Path, checkpoint: Path, full_share: float, smoke: bool
) -> dict:
    """Held-out minus training loss on the model's own documents (the training split's are the
    run's first epoch as trained, cached in its checkpoint folder), with its standard error
    (:func:`continued_pretraining.measure_gap`)."""
    from redqueen.tinycoder._documents import _Data
    from redqueen.tinycoder.pretrain import parse_args
    from redqueen.tinycoder.splits import load_splits

    flags = ["--out", "unused", "--full-share", str(full_share), "--seed", "0"]
    flags += ["--profile", "ci", "--seq-len", "256"] if smoke else ["--profile", "full"]
    return cp.measure_gap(
        model, _Data(load_splits(corpus), tokenizer, parse_args(flags), checkpoint)
    )


def score(model, tokenizer, parts: dict, executor, known: set[bytes] | None, references=()) -> dict:
    """Per-problem values: hand-written, greedy held-out per part, and proposals (references
    drawn from ``references``) when ``known`` (the training split's canonical keys) is given."""
    row: dict = {"handwritten": cp.handwritten(model, tokenizer, executor)}
    for part, entries in parts.items():
        row[part] = cp.greedy_heldout(model, tokenizer, entries, executor)
    if known is not None:
        row["proposals"] = cp.proposals(model, tokenizer, list(references), executor, known)
    return row


def summarise(row: dict) -> dict:
    """Counts, accuracies and Wilson intervals of one model's per-problem values."""
    out: dict = {}
    for key, values in row.items():
        if key == "proposals":
            n = len(values)
            valid = sum(p["valid"] for p in values)
            new = sum(p["valid"] and p["new"] for p in values)
            out[key] = {"n": n, "parsed": round(sum(p["parsed"] for p in values) / n, 4),
                        "valid": round(valid / n, 4), "valid_wilson95": cp.wilson(valid, n),
                        "valid_and_new": round(new / n, 4), "valid_and_new_wilson95": cp.wilson(new, n)}  # fmt: skip
            continue
        hits = list(values.values()) if isinstance(values, dict) else values
        out[key] = {"correct": sum(hits), "n": len(hits), "accuracy": round(sum(hits) / len(hits), 4),
                    "wilson95": cp.wilson(sum(hits), len(hits))}  # fmt: skip
    return out


def two_proportions(k1: int, k2: int, n1: int, n2: int) -> dict:
    """Difference of two independent proportions, its 95% Wald interval and the pooled z-test."""
    p1, p2 = k1 / n1, k2 / n2
    pooled = (k1 + k2) / (n1 + n2)
    se0 = math.sqrt(max(pooled * (1 - pooled) * (1 / n1 + 1 / n2), 1e-12))
    se = math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
    p = 2 * stats.norm.sf(abs(p1 - p2) / se0)
    return {"difference": round(p1 - p2, 4), "ci95": [round(p1 - p2 - 1.96 * se, 4),
            round(p1 - p2 + 1.96 * se, 4)], "p": round(float(p), 5)}  # fmt: skip


def decide(result: dict) -> dict:
    """The plan's decisions from the models scored so far."""
    models, anchors = result["models"], result["anchors"]
    out: dict = {}
    if "natural-tiny" in models and "tiny-coder" in anchors:
        ours = models["natural-tiny"]["per_problem"]["handwritten"]
        base = anchors["tiny-coder"]["per_problem"]["handwritten"]
        ids = sorted(ours)
        paired = cp.paired([ours[i] for i in ids], [base[i] for i in ids])
        out["G1_handwritten_vs_tiny_coder"] = paired
        out["reads_more_handwritten"] = paired["mcnemar_p"] < 0.05 and paired["difference"] > 0
    if "natural-tiny" in models and "natural-tiny-lean" in models:
        a = models["natural-tiny"]["summary"]["proposals"]
        b = models["natural-tiny-lean"]["summary"]["proposals"]
        k1, k2 = round(a["valid"] * a["n"]), round(b["valid"] * b["n"])
        out["G2_valid_full_share_0.6_minus_0.3"] = two_proportions(k1, k2, a["n"], b["n"])
    for entry in models.values():
        s, gap = entry["summary"], entry["loss_gap"]
        targets = {
            "handwritten": s["handwritten"]["accuracy"] >= TARGETS["handwritten"],
            "heldout_greedy": s["grammar_heldout"]["accuracy"] >= TARGETS["heldout_greedy"],
            "valid_and_new": s["proposals"]["valid_and_new"] >= TARGETS["valid_and_new"],
            "loss_gap": gap["gap"] + 1.96 * gap["gap_se"] < TARGETS["loss_gap"],
        }
        entry["targets"] = targets
        entry["ship_candidate"] = all(targets.values()) and entry["size"] == "tiny"
    return out


def keep(folder: Path, dest: Path, limit: int = 15 << 20) -> str:
    """Pack what re-scoring a model needs (weights, tokenizer, training.json, held-out split)
    as ``dest/<name>.tar.gz``, one file (the GPU machine returns few files, each at most 16
    MiB); a model whose archive would pass ``limit`` bytes is not kept. Returns what happened."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / f"{folder.name}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for item in sorted(folder.iterdir()):
            if item.is_file() and item.name != "ood.jsonl":
                tar.add(item, arcname=f"{folder.name}/{item.name}")
    if archive.stat().st_size > limit:
        archive.unlink()
        return "not kept (over the size that comes back)"
    return f"kept as {archive.name}"


def save(result: dict, path: Path) -> None:
    result["decisions"] = decide(result)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepare", action="store_true", help="build and pack the corpus (CPU)")
    parser.add_argument("--smoke", action="store_true", help="the whole path at toy size (CPU)")
    parser.add_argument("--workdir", type=Path, default=WORK)
    parser.add_argument("--scratch", type=Path, help="where models train (default: WORKDIR/models)")
    parser.add_argument("--results", type=Path, default=RESULTS / "base_models_gpu.json")
    parser.add_argument("--models-out", type=Path, help="copy each trained model folder here")
    parser.add_argument("--workers", type=int, help="sandbox workers (default: half the cores)")
    parser.add_argument("--only", action="append", help="train and score only these models")
    parser.add_argument(
        "--device", choices=("auto", "cpu", "cuda"), default="auto",
        help="auto: the GPU where there is one (amendment (a): natural-tiny on the CPU)",
    )  # fmt: skip
    parser.add_argument("--cpu-threads", type=int, default=1, help="torch threads on the CPU")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = args.workdir / ("smoke" if args.smoke else "")
    corpus = work / "corpus"
    workers = args.workers or max(1, (os.cpu_count() or 2) // 2)
    unpack(work)
    build_corpus(corpus, SMOKE_CORPUS if args.smoke else CORPUS, workers)
    if args.prepare:
        with tarfile.open(work / "corpus.tar.gz", "w:gz") as tar:
            tar.add(corpus, arcname="corpus")
        print(f"base_models_gpu: packed {work / 'corpus.tar.gz'}")
        return

    from redqueen.tinycoder.canonical import canonical_key
    from redqueen.tinycoder.splits import load_splits
    from redqueen.verifiers import Executor

    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"
    if args.smoke:
        cp.PROPOSALS = 8  # a check of the path, not a result
    if device == "cpu":
        torch.set_num_threads(args.cpu_threads)
    splits = load_splits(corpus)
    n_parts = 16 if args.smoke else HELDOUT_PROBLEMS
    parts = {
        "grammar_heldout": [e for e in splits.heldout if e.level > 0][:n_parts],
        "natural_heldout": [e for e in splits.heldout if e.level == 0][:n_parts],
    }
    known = {canonical_key(e.program) for e in splits.train}
    result = json.loads(args.results.read_text()) if args.results.is_file() else {}
    result.setdefault("plan", "benchmarks/BASE_MODELS_GPU.md")
    result.setdefault("corpus", {**(SMOKE_CORPUS if args.smoke else CORPUS),
                                 "natural_train": sum(e.level == 0 for e in splits.train)})  # fmt: skip
    result.setdefault("models", {})
    result.setdefault("anchors", {})
    result["smoke"] = args.smoke
    result["machine"] = (
        torch.cuda.get_device_name(0) if device == "cuda" else f"CPU, {os.cpu_count()} cores"
    )
    result["code_version"] = cp._code_version()
    # A run resumed later may run from a later commit: every commit that took part is kept.
    versions = result.setdefault("code_versions", [])
    if result["code_version"] not in versions:
        versions.append(result["code_version"])
    scratch = args.scratch or work / "models"
    with Executor(workers=workers) as executor:
        for name, folder in ANCHORS.items():
            if name in result["anchors"]:
                continue
            model = AutoModelForCausalLM.from_pretrained(folder).to(device).eval()
            row = score(model, AutoTokenizer.from_pretrained(folder), parts, executor, None)
            result["anchors"][name] = {"summary": summarise(row), "per_problem": row}
            save(result, args.results)
            print(
                f"base_models_gpu: {name}",
                json.dumps(result["anchors"][name]["summary"]),
                flush=True,
            )
        for name, size, full_share in MODELS:
            if name in result["models"] or (args.only and name not in args.only):
                continue
            t0 = time.time()
            threads = args.cpu_threads if device == "cpu" and not args.smoke else None
            folder = train(name, size, full_share, corpus, scratch, args.smoke, threads)
            model = AutoModelForCausalLM.from_pretrained(folder).to(device).eval()
            tokenizer = AutoTokenizer.from_pretrained(folder)
            row = score(model, tokenizer, parts, executor, known, splits.heldout)
            checkpoint = folder.parent / f"{folder.name}-checkpoint"
            gap = loss_gap(model, tokenizer, corpus, checkpoint, full_share, args.smoke)
            summary = json.loads((folder / "training.json").read_text())
            result["models"][name] = {
                "size": size, "full_share": full_share,
                "training": {k: summary.get(k) for k in ("parameters", "steps", "tokens_seen",
                             "train_seconds", "tokens_per_second", "vocab_size", "loss", "device")},
                "summary": summarise(row), "loss_gap": gap, "per_problem": row,
                "seconds": round(time.time() - t0, 1), "machine": result["machine"],
                "code_version": result["code_version"],
            }  # fmt: skip
            if args.models_out is not None:
                result["models"][name]["weights"] = keep(folder, args.models_out)
            save(result, args.results)
            print(
                f"base_models_gpu: {name}",
                json.dumps(result["models"][name]["summary"]),
                flush=True,
            )
    save(result, args.results)
    print(json.dumps(result["decisions"], indent=2))


if __name__ == "__main__":
    main()
