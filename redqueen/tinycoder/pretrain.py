"""Pretrain a tiny-coder model from nothing: corpus, tokenizer, model, rates, model card.

    python -m redqueen.tinycoder.pretrain --out DIR                  # short CPU run (profile ci)
    python -m redqueen.tinycoder.pretrain --profile full --out DIR   # the full run, on a GPU

One seeded run (1) builds the three corpus splits with sandboxed gold outputs on all cores
(:mod:`redqueen.tinycoder.splits`; ``--corpus DIR`` reuses saved ones), (2) renders the training
programs in the environment's prompt formats, afresh for each epoch, (3) trains a byte-level BPE
tokenizer, (4) trains the Llama model on packed sequences, every sequence once per epoch and at
most two epochs, so that each program is seen at most twice (next-token loss, AdamW, warm-up +
cosine), (5) measures the loss on training, held-out and out-of-distribution documents, (6) saves
a folder that ``AutoModelForCausalLM.from_pretrained`` loads offline (weights stored in bf16 and
loaded as fp32), (7) measures the rates on the held-out and OOD splits and (8) writes
``training.json`` and the model card. A profile sets every default; any flag overrides it.
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
from pathlib import Path

import numpy as np
import torch
from transformers import LlamaForCausalLM

from redqueen.tinycoder.card import write_model_card
from redqueen.tinycoder.corpus import render_documents, save_corpus
from redqueen.tinycoder.model import SIZES, STORAGE_DTYPES, save_model, tiny_coder_config
from redqueen.tinycoder.rates import measure_rates
from redqueen.tinycoder.splits import SPLITS, build_with_progress, load_splits, progress_bar
from redqueen.tinycoder.tokenizer import save_tokenizer, train_tokenizer
from redqueen.verifiers import Executor

__all__ = ["PROFILES", "main", "pack_documents", "parse_args", "progress_bar"]

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
    },
}
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
    p.add_argument(
        "--cpu-threads",
        type=int,
        default=1,
        help="torch threads on the CPU (small models are fastest on one, and the sandbox needs the rest)",
    )
    p.add_argument("--eval-n", type=int, help="proposals and tasks per task type for the rates")
    p.add_argument("--samples", type=int, help="sampled answers per task (pass@k)")
    p.add_argument("--max-new-tokens", type=int, help="generation budget for the rates")
    p.add_argument("--loss-batches", type=int, help="batches per loss measurement")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default="tiny-coder", help="model name on the card")
    p.add_argument("--notes", default="", help="extra paragraph for the model card")
    args = p.parse_args(argv)
    for key, value in PROFILES[args.profile].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def pack_documents(docs: Sequence[str], tokenizer) -> torch.Tensor:
    """Tokenize documents, end each with ``</s>`` and concatenate them into one 1-D int32 stream."""
    eos = tokenizer.eos_token_id
    parts: list[np.ndarray] = []
    for start in range(0, len(docs), 2048):
        for row in tokenizer(list(docs[start : start + 2048]))["input_ids"]:
            parts.append(np.asarray(row + [eos], dtype=np.int32))
    return torch.from_numpy(np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32))


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


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the whole pretraining pipeline; returns the summary written to ``training.json``."""
    args = parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.device == "cpu":
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
    else:
        splits = build_with_progress(
            args.train, args.heldout, args.ood, seed=args.seed, workers=args.workers
        )
        splits.save(out.parent / f"{out.name}-corpus")
    summary["corpus_seconds"] = round(time.time() - t_start, 1)

    # 2-3. Documents (rendered afresh each epoch) and tokenizer.
    epoch_docs = render_documents(splits.train, seed=args.seed)
    tokenizer = train_tokenizer(
        epoch_docs[:_TOKENIZER_DOCS], vocab_size=args.vocab_size, model_max_length=args.seq_len
    )
    first = sequences(pack_documents(epoch_docs, tokenizer), args.seq_len)
    loss_sets = {
        "train": first,
        "heldout": _split_sequences(splits.heldout, tokenizer, args),
        "ood": _split_sequences(splits.ood, tokenizer, args),
    }
    levels: dict[int, int] = {}
    for entry in splits.train:
        levels[entry.level] = levels.get(entry.level, 0) + 1
    summary.update(
        programs={name: len(getattr(splits, name)) for name in SPLITS},
        levels=dict(sorted(levels.items())),
        ood_level=max((e.level for e in splits.ood), default=None),
        documents_per_epoch=len(epoch_docs),
        tokens_per_epoch=int(first.numel()),
        vocab_size=len(tokenizer),
    )

    # 4. Model and training.
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

    def epoch_sequences(epoch: int) -> torch.Tensor:
        if epoch == 0:
            return first
        docs = render_documents(splits.train, seed=args.seed + epoch)
        return sequences(pack_documents(docs, tokenizer), args.seq_len)

    train_seconds, steps_run, losses = _train(model, epoch_sequences, len(first), args)
    losses_by_split = {
        name: round(_mean_loss(model, seqs, args), 4) for name, seqs in loss_sets.items()
    }
    summary.update(
        epochs=args.epochs,
        steps=steps_run,
        batch_size=args.batch_size,
        seq_len=args.seq_len,
        lr=args.lr,
        train_seconds=round(train_seconds, 1),
        tokens_seen=steps_run * args.batch_size * args.seq_len,
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
    model.to(args.device)
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
            ).to_dict()
            for split in ("heldout", "ood")
        }
    summary["total_seconds"] = round(time.time() - t_start, 1)
    given = list(argv) if argv is not None else sys.argv[1:]
    summary["command"] = " ".join(["python -m redqueen.tinycoder.pretrain", *given])
    (out / "training.json").write_text(json.dumps(summary, indent=2) + "\n")
    write_model_card(out, summary, notes=args.notes)
    print(json.dumps(summary, indent=2))
    return summary


def _split_sequences(entries, tokenizer, args: argparse.Namespace) -> torch.Tensor:
    docs = render_documents(entries, seed=args.seed + 100)
    return sequences(pack_documents(docs, tokenizer), args.seq_len)


def _train(model: LlamaForCausalLM, epoch_sequences, per_epoch: int, args: argparse.Namespace):
    """Every sequence of every epoch once, in a seeded order; (seconds, steps, logged losses)."""
    device = torch.device(args.device)
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
        fused=device.type == "cuda",
    )
    total = max(1, args.epochs * (per_epoch // args.batch_size))
    if args.max_steps is not None:
        total = min(total, args.max_steps)
    budget = None if args.max_minutes is None else 60.0 * args.max_minutes
    gen = torch.Generator().manual_seed(args.seed)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    model.train()
    losses: list[float] = []
    t0 = time.time()
    step = 0
    with progress_bar() as bar:
        task = bar.add_task("train", total=total, info="")
        for epoch in range(args.epochs):
            seqs = epoch_sequences(epoch)
            order = torch.randperm(len(seqs), generator=gen)
            for start in range(0, len(order) - args.batch_size + 1, args.batch_size):
                elapsed = time.time() - t0
                if step >= total or (budget is not None and elapsed > budget):
                    break
                fraction = elapsed / budget if budget else 0.0
                for group in optimizer.param_groups:
                    group["lr"] = _lr_at(step, total, args.lr, fraction)
                batch = (
                    seqs[order[start : start + args.batch_size]].long().to(device)
                )  # (batch, seq)
                with autocast:
                    loss = model(input_ids=batch, labels=batch).loss
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                if step % 10 == 0:
                    losses.append(loss.item())
                    bar.update(
                        task, completed=step + 1, info=f"epoch {epoch + 1} loss {losses[-1]:.3f}"
                    )
                step += 1
        bar.update(task, completed=step)
    model.eval()
    return time.time() - t0, step, losses


@torch.no_grad()
def _mean_loss(model: LlamaForCausalLM, seqs: torch.Tensor, args: argparse.Namespace) -> float:
    """Mean next-token loss over the first ``loss_batches`` batches (same for every split)."""
    device = torch.device(args.device)
    model.eval()
    total, count = 0.0, 0
    for b in range(args.loss_batches):
        batch = seqs[b * args.batch_size : (b + 1) * args.batch_size]
        if len(batch) == 0:
            break
        total += model(
            input_ids=batch.long().to(device), labels=batch.long().to(device)
        ).loss.item()
        count += 1
    return total / max(count, 1)


if __name__ == "__main__":
    main()
