"""Pretrain a tiny-coder model from nothing: corpus, tokenizer, model, rates, model card.

    python -m redqueen.tinycoder.pretrain --out DIR                  # short CPU run (profile ci)
    python -m redqueen.tinycoder.pretrain --profile cpu --out DIR    # the shipped model, 2 cores
    python -m redqueen.tinycoder.pretrain --profile full --out DIR   # a larger run, on a GPU

One seeded run (1) builds the three corpus splits with gold outputs
(:mod:`redqueen.tinycoder.splits`; ``--corpus DIR`` reuses saved ones), (2) renders the training
programs afresh for each epoch: with ``--documents lean`` (the default) each program is the
subject of one document per epoch, mostly the program once with all its calls and outputs and,
for a ``--full-share`` of them, one of the environment's prompt formats (only the completion
is trained on; the prompt is context), with a ``--rename-share`` of them under new identifier
names (:mod:`redqueen.tinycoder.rename`), (3) trains a byte-level BPE tokenizer, (4) trains the
Llama model on packed sequences, every sequence once per epoch and at most two epochs, so each
program is learned from at most twice (next-token loss, AdamW, warm-up + cosine), (5) measures
the loss on training, held-out and out-of-distribution documents, (6) saves a folder that
``AutoModelForCausalLM.from_pretrained`` loads offline (weights stored in bf16 and loaded as
fp32), (7) measures the rates on the held-out and OOD splits (valid proposals, and those new
to the training split), and greedy accuracy on the hand-written code_o set, and (8) writes
``training.json`` and the model card. A profile sets every default; any flag overrides it.

Training checkpoints into ``DIR-checkpoint`` (beside ``DIR``) every ``--checkpoint-minutes`` (model, optimizer,
step, data position) and running the same command again resumes exactly where it stopped;
``--stop-after-minutes`` ends a run early at a checkpoint, so one training can be split into
chunks (e.g. of <= 10 minutes) across jobs; creating the file ``DIR-checkpoint/STOP`` does the
same from outside, at the next step. On the CPU, bf16 autocast is used only where a
quick matmul probe finds it faster than float32 (``--autocast auto``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import torch
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.card import write_model_card
from redqueen.tinycoder.corpus import render_documents, render_lean_documents, save_corpus
from redqueen.tinycoder.model import SIZES, STORAGE_DTYPES, save_model, tiny_coder_config
from redqueen.tinycoder.rates import measure_handwritten, measure_rates
from redqueen.tinycoder.splits import (
    GOLD_MODES,
    SPLITS,
    build_with_progress,
    load_splits,
    progress_bar,
)
from redqueen.tinycoder.tokenizer import save_tokenizer, train_tokenizer
from redqueen.verifiers import Executor

__all__ = [
    "AUTOCAST_MODES",
    "DOCUMENT_STYLES",
    "PROFILES",
    "bf16_is_faster",
    "main",
    "pack_documents",
    "pack_pairs",
    "parse_args",
    "progress_bar",
]

#: Defaults per profile: ``ci`` is a short CPU run on a few hundred programs (what the test
#: suite runs); ``full`` is the GPU run the shipped models are meant to come from.
PROFILES: dict[str, dict] = {
    "ci": {
        "train": 120,
        "heldout": 60,
        "ood": 12,
        "size": "micro",
        "device": "cpu",
        "epochs": 2,
        "max_steps": 40,
        "batch_size": 8,
        "seq_len": 128,
        "lr": 3e-3,
        "vocab_size": 320,
        "eval_n": 2,
        "samples": 2,
        "max_new_tokens": 16,
        "loss_batches": 2,
        "cpu_threads": 1,
        "rates_batch_size": 64,
    },
    "cpu": {
        "train": 150_000,
        "heldout": 2000,
        "ood": 1000,
        # Chosen by benchmarks/pretrain_scaling.py (plan: benchmarks/PRETRAIN_SCALING.md): at
        # equal training time on 2 cores `mini` had the lowest held-out loss at 3 and 8 minutes.
        "size": "mini",
        # About 120 minutes of training at mini's ~5,000 tokens/s on 2 cores (0.93 epochs).
        "tokens": 36_000_000,
        "device": "cpu",
        "epochs": 2,
        "batch_size": 8,
        "seq_len": 1024,
        "lr": 2e-3,
        "vocab_size": 2048,
        "eval_n": 128,
        "samples": 8,
        "max_steps": None,
        "max_new_tokens": 256,
        "loss_batches": 32,
        "cpu_threads": 2,
        "rates_batch_size": 64,
    },
    "full": {
        "train": 150_000,
        "heldout": 2000,
        "ood": 1000,
        "size": "small",
        "device": "cuda",
        "epochs": 2,
        "batch_size": 64,
        "seq_len": 1024,
        "lr": 1e-3,
        "vocab_size": 2048,
        "eval_n": 128,
        "samples": 8,
        "max_steps": None,
        "max_new_tokens": 320,
        "loss_batches": 32,
        "cpu_threads": 1,
        # The rates' generation runs 1,024 prompts a batch on a GPU: both splits of `small`
        # took 85 s on an H100 (benchmarks/README.md, "The base model sizes on a GPU").
        "rates_batch_size": 1024,
    },
}
#: How documents are rendered (see the module docstring).
DOCUMENT_STYLES: tuple[str, ...] = ("lean", "full")
#: Autocast choices: ``auto`` (bf16 on CUDA; on the CPU only where measured faster), on, off.
AUTOCAST_MODES: tuple[str, ...] = ("auto", "bf16", "off")
_TOKENIZER_DOCS = 60_000  # documents the BPE merges are learned from (plenty for this grammar)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line (see the module docstring); unset flags take the profile's value."""
    p = argparse.ArgumentParser(
        prog="python -m redqueen.tinycoder.pretrain", description=__doc__.splitlines()[0]
    )
    p.add_argument("--out", required=True, type=Path, help="model folder to write")
    p.add_argument(
        "--profile", choices=sorted(PROFILES), default="ci", help="defaults to start from"
    )
    p.add_argument("--corpus", type=Path, help="reuse splits saved by redqueen.tinycoder.splits")
    p.add_argument("--train", type=int, help="training programs")
    p.add_argument("--heldout", type=int, help="in-distribution held-out programs")
    p.add_argument("--ood", type=int, help="out-of-distribution programs")
    p.add_argument("--size", choices=sorted(SIZES), help="model size")
    p.add_argument("--device", help="cpu or cuda")
    p.add_argument("--epochs", type=int, choices=(1, 2), help="passes over the corpus (at most 2)")
    p.add_argument("--max-steps", type=int, help="stop after this many optimizer steps")
    p.add_argument("--max-minutes", type=float, help="training time budget")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--seq-len", type=int)
    p.add_argument("--lr", type=float, help="peak learning rate")
    p.add_argument("--vocab-size", type=int)
    p.add_argument("--storage-dtype", choices=STORAGE_DTYPES, default="bfloat16")
    p.add_argument("--workers", type=int, help="sandbox workers (default: all cores)")
    p.add_argument("--cpu-threads", type=int, help="torch threads on the CPU")
    p.add_argument("--documents", choices=DOCUMENT_STYLES, default="lean", help="document style")
    p.add_argument(
        "--full-share", type=float, default=0.3, help="lean style: share in prompt formats"
    )
    p.add_argument(
        "--rename-share",
        type=float,
        default=0.5,
        help="lean style: share of documents whose programs carry new identifier names",
    )
    p.add_argument("--autocast", choices=AUTOCAST_MODES, default="auto")
    p.add_argument("--tokens", type=float, help="training token budget (sets the step count)")
    p.add_argument(
        "--gold", choices=GOLD_MODES, default="pool", help="how gold outputs are computed"
    )
    p.add_argument(
        "--checkpoint-minutes", type=float, default=5.0, help="checkpoint interval in training"
    )
    p.add_argument(
        "--stop-after-minutes",
        type=float,
        help="checkpoint and stop after this many minutes of training (run again to resume)",
    )
    p.add_argument(
        "--stop-at-step", type=int, help="checkpoint and stop at this step (run again to resume)"
    )
    p.add_argument(
        "--eval-n",
        type=int,
        help="proposals and tasks per task type for the rates (0: no rates and no card)",
    )
    p.add_argument("--samples", type=int, help="sampled answers per task (pass@k)")
    p.add_argument("--max-new-tokens", type=int, help="generation budget for the rates")
    p.add_argument("--loss-batches", type=int, help="batches per loss measurement")
    p.add_argument("--rates-batch-size", type=int, help="prompts per generation batch (rates)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default="tiny-coder", help="model name on the card")
    p.add_argument("--notes", default="", help="extra paragraph for the model card")
    args = p.parse_args(argv)
    for key, value in PROFILES[args.profile].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    for flag in ("full_share", "rename_share"):
        if not 0.0 <= getattr(args, flag) <= 1.0:
            p.error(f"--{flag.replace('_', '-')} must be in [0, 1], got {getattr(args, flag)}")
    if args.rates_batch_size < 1:
        p.error(f"--rates-batch-size must be >= 1, got {args.rates_batch_size}")
    return args


def pack_documents(docs: Sequence[str], tokenizer) -> torch.Tensor:
    """Tokenize documents, end each with ``</s>`` and concatenate them into one 1-D int32 stream."""
    return pack_pairs([("", d) for d in docs], tokenizer)[0]


def pack_pairs(docs: Sequence[tuple[str, str]], tokenizer) -> tuple[torch.Tensor, torch.Tensor]:
    """Pack ``(context, target)`` documents into a token stream and its loss mask.

    Context and target are tokenized separately (as a prompt and its completion are at
    inference), then joined and ended with ``</s>``; the mask is 1 on the target and ``</s>``
    (trained on) and 0 on the context. Returns two 1-D tensors: int32 tokens, uint8 mask.
    """
    eos = tokenizer.eos_token_id
    ids: list[np.ndarray] = []
    mask: list[np.ndarray] = []
    for start in range(0, len(docs), 2048):
        chunk = docs[start : start + 2048]
        contexts = tokenizer([c for c, _ in chunk])["input_ids"]
        targets = tokenizer([t for _, t in chunk])["input_ids"]
        for context, target in zip(contexts, targets, strict=True):
            ids.append(np.asarray(context + target + [eos], dtype=np.int32))
            mask.append(
                np.concatenate(
                    [np.zeros(len(context), np.uint8), np.ones(len(target) + 1, np.uint8)]
                )
            )
    if not ids:
        return torch.zeros(0, dtype=torch.int32), torch.zeros(0, dtype=torch.uint8)
    return torch.from_numpy(np.concatenate(ids)), torch.from_numpy(np.concatenate(mask))


def sequences(stream: torch.Tensor, seq_len: int) -> torch.Tensor:
    """The stream cut into whole sequences of ``seq_len`` tokens (the ragged tail dropped)."""
    n = stream.numel() // seq_len
    return stream[: n * seq_len].view(n, seq_len)  # (sequences, seq_len)


def _lr_at(step: int, total: int, peak: float, time_fraction: float = 0.0) -> float:
    """Linear warm-up over 5% of the steps, then cosine decay to 10% of ``peak``.

    ``time_fraction`` (elapsed / time budget) moves the decay along when the time budget,
    not the step count, is what ends the run.
    """
    warmup = max(total // 20, 1)
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = max((step - warmup) / max(total - warmup, 1), min(time_fraction, 1.0))
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def bf16_is_faster(threads: int, size: int = 512, repeats: int = 5) -> bool:
    """Whether a bf16 matmul beats float32 on this CPU (many CPUs without bf16 units run it
    at a small fraction of the float32 rate)."""
    torch.set_num_threads(threads)
    a = torch.randn(size, size)
    timings = {}
    for dtype in (torch.float32, torch.bfloat16):
        x = a.to(dtype)
        x @ x
        t0 = time.perf_counter()
        for _ in range(repeats):
            x @ x
        timings[dtype] = time.perf_counter() - t0
    return timings[torch.bfloat16] < timings[torch.float32]


@dataclass
class _TrainState:
    """Where training stands: what a checkpoint holds, and how the run ended."""

    step: int = 0
    seconds: float = 0.0  # training time, all chunks
    losses: list[float] = field(default_factory=list)
    earlier_seconds: float = 0.0  # wall time of earlier chunks
    total: int = 0
    paused: bool = False
    per_epoch: int = 0


class _Data:
    """The training data of one run: documents per epoch, packed and cached under ``work``."""

    def __init__(self, splits, tokenizer, args: argparse.Namespace, work: Path) -> None:
        self.splits, self.tokenizer, self.args, self.work = splits, tokenizer, args, work

    def render(self, entries, seed: int) -> list[tuple[str, str]]:
        if self.args.documents == "full":
            return [("", d) for d in render_documents(entries, seed=seed)]
        return render_lean_documents(
            entries,
            seed=seed,
            full_share=self.args.full_share,
            rename_share=self.args.rename_share,
        )

    def epoch(self, epoch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(sequences, mask), each (n, seq_len): epoch ``epoch``'s documents, packed."""
        path = self.work / f"epoch{epoch}.pt"
        if path.is_file():
            ids, mask = torch.load(path, weights_only=True)
        else:
            ids, mask = pack_pairs(
                self.render(self.splits.train, self.args.seed + epoch), self.tokenizer
            )
            _atomic_save((ids, mask), path)
        return sequences(ids, self.args.seq_len), sequences(mask, self.args.seq_len)

    def held(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        ids, mask = pack_pairs(
            self.render(getattr(self.splits, name), self.args.seed + 100), self.tokenizer
        )
        return sequences(ids, self.args.seq_len), sequences(mask, self.args.seq_len)


#: What a training checkpoint (``state.pt``) holds.
_STATE_KEYS = ("model", "optimizer", "total", "size", "rng", "step", "seconds", "losses")


def _load_state(path: Path) -> dict:
    """A training checkpoint, read with torch's restricted unpickler (``weights_only=True``):
    it builds tensors and plain containers only and refuses any other global before calling
    it, so a crafted ``state.pt`` cannot run code. A refused or damaged file ends the command
    with one line and status 2, naming it.
    """
    import pickle

    problem = None
    try:
        saved = torch.load(path, weights_only=True)
    except pickle.UnpicklingError:
        problem = "holds more than tensors and plain data; refused, since loading it could run code"
    except Exception as error:  # torch raises many types for a damaged file
        problem = f"cannot be loaded ({type(error).__name__})"
    else:
        if not isinstance(saved, dict) or any(key not in saved for key in _STATE_KEYS):
            problem = "is not a training checkpoint of this script"
    if problem is not None:
        print(f"error: {path} {problem}; remove it to start afresh", file=sys.stderr)
        raise SystemExit(2)
    return saved


def _atomic_save(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the whole pretraining pipeline; returns the summary written to ``training.json``.

    A run stopped by ``--stop-after-minutes`` returns ``{"paused": True, ...}`` instead, with
    the step it reached; the same command resumes it.
    """
    args = parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    work = out.parent / f"{out.name}-checkpoint"
    work.mkdir(exist_ok=True)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(args.cpu_threads)
    t_start = time.time()
    summary: dict = {"name": args.name, "profile": args.profile, "seed": args.seed}
    summary["device"] = args.device

    # 1. Corpus splits.
    if args.corpus is not None:
        try:
            splits = load_splits(args.corpus)
        except (OSError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(2) from None
        summary["corpus_seconds"] = 0.0
    else:
        corpus_dir = out.parent / f"{out.name}-corpus"
        try:
            splits = load_splits(corpus_dir)  # built by an earlier, interrupted run
            summary["corpus_seconds"] = 0.0
        except (OSError, ValueError):
            splits = build_with_progress(
                args.train,
                args.heldout,
                args.ood,
                seed=args.seed,
                workers=args.workers,
                gold=args.gold,
            )
            splits.save(corpus_dir)
            summary["corpus_seconds"] = round(time.time() - t_start, 1)
    summary["gold"] = args.gold if args.corpus is None else "saved corpus"

    # 2-3. Tokenizer (trained once, kept in the checkpoint folder) and documents.
    data = _Data(splits, None, args, work)
    tokenizer_dir = work / "tokenizer"
    if (tokenizer_dir / "tokenizer.json").is_file():
        from transformers import AutoTokenizer

        tokenizer = cast(PreTrainedTokenizerFast, AutoTokenizer.from_pretrained(tokenizer_dir))
    else:
        sample = data.render(splits.train[:_TOKENIZER_DOCS], args.seed)
        tokenizer = train_tokenizer(
            [c + t for c, t in sample], vocab_size=args.vocab_size, model_max_length=args.seq_len
        )
        save_tokenizer(tokenizer, tokenizer_dir)
    data.tokenizer = tokenizer
    first, first_mask = data.epoch(0)
    levels: dict[int, int] = {}
    for entry in splits.train:
        levels[entry.level] = levels.get(entry.level, 0) + 1
    n_train = max(len(splits.train), 1)
    summary.update(
        programs={name: len(getattr(splits, name)) for name in SPLITS},
        levels=dict(sorted(levels.items())),
        ood_level=max((e.level for e in splits.ood), default=None),
        documents=args.documents,
        full_share=args.full_share if args.documents == "lean" else 1.0,
        rename_share=args.rename_share if args.documents == "lean" else 0.0,
        tokens_per_epoch=int(first.numel()),
        tokens_per_program=round(first.numel() / n_train, 1),
        trained_tokens_per_program=round(int(first_mask.sum()) / n_train, 1),
        vocab_size=len(tokenizer),
    )

    # 4. Model and training (resumed from the checkpoint when there is one).
    config = tiny_coder_config(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        max_position_embeddings=args.seq_len,
        **SIZES[args.size],
    )
    model = LlamaForCausalLM(config).to(args.device)
    summary.update(size=args.size, parameters=sum(p.numel() for p in model.parameters()))
    if args.autocast == "auto":
        bf16 = device.type == "cuda" or bf16_is_faster(args.cpu_threads)
    else:
        bf16 = args.autocast == "bf16"
    summary["autocast"] = "bf16" if bf16 else "off"
    state = _train(model, data, len(first), args, bf16=bf16, work=work)
    if state.paused:
        print(
            f"paused at step {state.step} of {state.total} "
            f"(checkpoint in {work}); run the same command again to resume",
            file=sys.stderr,
        )
        return {"paused": True, "step": state.step, "total": state.total}
    loss_sets = {
        "train": (first, first_mask),
        "heldout": data.held("heldout"),
        "ood": data.held("ood"),
    }
    losses_by_split = {
        name: round(_mean_loss(model, *pair, args), 4) for name, pair in loss_sets.items()
    }
    losses = state.losses
    summary.update(
        epochs=args.epochs,
        steps=state.step,
        batch_size=args.batch_size,
        seq_len=args.seq_len,
        lr=args.lr,
        cpu_threads=args.cpu_threads if device.type == "cpu" else None,
        train_seconds=round(state.seconds, 1),
        tokens_seen=state.step * args.batch_size * args.seq_len,
        tokens_per_second=round(
            state.step * args.batch_size * args.seq_len / max(state.seconds, 1e-9)
        ),
        max_times_learned_from=min(args.epochs, math.ceil(state.step / max(state.per_epoch, 1))),
        # Every program has one document per epoch; short of a whole epoch, the share of the
        # epoch's sequences trained (in a random order) estimates the share of programs.
        programs_learned_from=round(
            len(splits.train) * min(1.0, state.step / max(state.per_epoch, 1))
        ),
        final_loss=round(sum(losses[-50:]) / max(len(losses[-50:]), 1), 4),
        loss=losses_by_split,
        loss_gap=round(losses_by_split["heldout"] - losses_by_split["train"], 4),
        ood_loss_gap=round(losses_by_split["ood"] - losses_by_split["train"], 4),
    )

    # 5. Save (weights in the storage dtype, loading as float32), held-out splits beside them.
    save_model(model, out, storage_dtype=args.storage_dtype)
    save_tokenizer(tokenizer, out)
    save_corpus(splits.heldout, out / "heldout.jsonl")
    save_corpus(splits.ood, out / "ood.jsonl")
    summary["storage_dtype"] = args.storage_dtype
    summary["weights_bytes"] = (out / "model.safetensors").stat().st_size

    # 6. Rates with the environment's sampling, in distribution and out of it.
    model.to(device)
    t_rates = time.time()
    if args.eval_n == 0:  # a probe reads the losses only: no rates, no card
        summary["rates"] = None
        summary["total_seconds"] = round(time.time() - t_start + state.earlier_seconds, 1)
        (out / "training.json").write_text(json.dumps(summary, indent=2) + "\n")
        return summary
    # A proposal is new when no training program shares its canonical form.
    known = {canonical_key(e.program) for e in splits.train}
    with Executor(workers=args.workers or os.cpu_count() or 1) as executor:
        summary["rates"] = {
            split: measure_rates(
                model,
                tokenizer,
                getattr(splits, split),
                executor=executor,
                n=args.eval_n,
                samples=args.samples,
                seed=args.seed,
                max_new_tokens=args.max_new_tokens,
                batch_size=args.rates_batch_size,
                known_keys=known,
            ).to_dict()
            for split in ("heldout", "ood")
        }
        summary["handwritten"] = measure_handwritten(
            model, tokenizer, executor, batch_size=args.rates_batch_size
        ).summary()
    summary["rates_seconds"] = round(time.time() - t_rates, 1)
    summary["total_seconds"] = round(time.time() - t_start + state.earlier_seconds, 1)
    given = list(argv) if argv is not None else sys.argv[1:]
    summary["command"] = " ".join(["python -m redqueen.tinycoder.pretrain", *given])
    if args.notes:
        summary["notes"] = args.notes  # a card rewritten from training.json keeps them
    (out / "training.json").write_text(json.dumps(summary, indent=2) + "\n")
    write_model_card(out, summary, notes=args.notes)
    print(json.dumps(summary, indent=2))
    return summary


def _train(
    model: LlamaForCausalLM,
    data: _Data,
    per_epoch: int,
    args: argparse.Namespace,
    *,
    bf16: bool,
    work: Path,
) -> _TrainState:
    """Every sequence of every epoch once, in a seeded order, checkpointed and resumable.

    The order of epoch ``e`` is a permutation seeded by ``(seed, e)`` and the documents of an
    epoch are a function of the seed too, so a checkpoint needs only the model, the optimizer,
    the step and the logged losses to continue exactly. Returns where training stands.
    """
    device = torch.device(args.device)
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
        fused=device.type == "cuda",
    )
    steps_per_epoch = per_epoch // args.batch_size
    total = max(1, args.epochs * steps_per_epoch)
    if args.tokens is not None:
        total = min(total, max(1, int(args.tokens) // (args.batch_size * args.seq_len)))
    if args.max_steps is not None:
        total = min(total, args.max_steps)
    budget = None if args.max_minutes is None else 60.0 * args.max_minutes
    state = _TrainState()
    path = work / "state.pt"
    stop_file = work / "STOP"
    if path.is_file():
        saved = _load_state(path)
        if saved["total"] != total or saved["size"] != args.size:
            print(
                f"error: {path} is from a run with {saved['total']} steps of size "
                f"{saved['size']}, not {total} of {args.size}; remove it to start afresh",
                file=sys.stderr,
            )
            raise SystemExit(2)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        state.step, state.seconds, state.losses = saved["step"], saved["seconds"], saved["losses"]
        state.earlier_seconds = saved.get("wall_seconds", 0.0)
        torch.set_rng_state(saved["rng"])

    def save() -> None:
        _atomic_save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "total": total,
                "size": args.size,
                "wall_seconds": state.earlier_seconds + time.time() - t_wall,
                "rng": torch.get_rng_state(),
                "step": state.step,
                "seconds": state.seconds,
                "losses": state.losses,
            },
            path,
        )

    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)
    model.train()
    t_wall = t_chunk = last_save = time.time()
    seconds_before = state.seconds
    paused = False
    with progress_bar() as bar:
        task = bar.add_task("train", total=total, completed=state.step, info="")
        while state.step < total and not paused:
            epoch, position = divmod(state.step, max(steps_per_epoch, 1))
            if epoch >= args.epochs:
                break
            seqs, masks = data.epoch(epoch)
            order = torch.randperm(
                len(seqs), generator=torch.Generator().manual_seed(args.seed * 1000 + epoch)
            )
            for b in range(position, steps_per_epoch):
                now = time.time()
                elapsed = seconds_before + now - t_chunk
                if state.step >= total or (budget is not None and elapsed > budget):
                    total = state.step
                    break
                if (
                    args.stop_after_minutes is not None
                    and now - t_wall > 60 * args.stop_after_minutes
                ) or (args.stop_at_step is not None and state.step >= args.stop_at_step):
                    paused = True
                    break
                if stop_file.exists():  # someone asked this run to checkpoint and stop
                    stop_file.unlink(missing_ok=True)
                    paused = True
                    break
                fraction = elapsed / budget if budget else 0.0
                for group in optimizer.param_groups:
                    group["lr"] = _lr_at(state.step, total, args.lr, fraction)
                rows = order[b * args.batch_size : (b + 1) * args.batch_size]
                batch = seqs[rows].long().to(device)  # (batch, seq)
                labels = batch.masked_fill(masks[rows].to(device) == 0, -100)
                with autocast:
                    loss = model(input_ids=batch, labels=labels).loss
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                if state.step % 10 == 0:
                    state.losses.append(round(loss.item(), 4))
                    bar.update(
                        task,
                        completed=state.step + 1,
                        info=f"epoch {epoch + 1} loss {state.losses[-1]:.3f}",
                    )
                state.step += 1
                state.seconds = seconds_before + time.time() - t_chunk
                if time.time() - last_save > 60 * args.checkpoint_minutes:
                    save()
                    last_save = time.time()
            else:
                continue
            break
        bar.update(task, completed=state.step)
    save()
    model.eval()
    state.total, state.paused, state.per_epoch = total, paused, steps_per_epoch
    return state


@torch.no_grad()
def _mean_loss(
    model: LlamaForCausalLM, seqs: torch.Tensor, masks: torch.Tensor, args: argparse.Namespace
) -> float:
    """Mean next-token loss on trained-on tokens over the first ``loss_batches`` batches."""
    device = torch.device(args.device)
    model.eval()
    total, count = 0.0, 0
    for b in range(args.loss_batches):
        batch = seqs[b * args.batch_size : (b + 1) * args.batch_size].long().to(device)
        if len(batch) == 0:
            break
        mask = masks[b * args.batch_size : (b + 1) * args.batch_size].to(device)
        total += model(input_ids=batch, labels=batch.masked_fill(mask == 0, -100)).loss.item()
        count += 1
    return total / max(count, 1)


if __name__ == "__main__":
    main()
