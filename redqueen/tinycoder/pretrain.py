"""Pretrain tiny-coder from nothing: corpus, tokenizer, model, starting rates, model card.

    python -m redqueen.tinycoder.pretrain --out DIR [--device cuda] [--seed 0] [--steps N]

One seeded run (1) generates the procedural corpus with sandboxed gold outputs, (2) renders it
in the environment's prompt formats, (3) trains a byte-level BPE tokenizer, (4) trains the small
Llama model on packed documents (next-token loss, AdamW, warm-up + cosine), (5) saves a folder
that ``AutoModelForCausalLM.from_pretrained`` / ``AutoTokenizer.from_pretrained`` load offline,
(6) measures the starting rates on held-out entries and (7) writes the model card. The corpus is
kept beside the folder (``DIR-corpus.jsonl``) so that a run can be repeated with ``--corpus``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from transformers import LlamaForCausalLM

from redqueen.tinycoder.card import write_model_card
from redqueen.tinycoder.corpus import (
    build_corpus,
    load_corpus,
    render_documents,
    save_corpus,
)
from redqueen.tinycoder.model import tiny_coder_config
from redqueen.tinycoder.rates import measure_rates
from redqueen.tinycoder.tokenizer import save_tokenizer, train_tokenizer
from redqueen.verifiers import Executor

__all__ = ["main", "pack_documents", "parse_args"]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line (see the module docstring)."""
    p = argparse.ArgumentParser(
        prog="python -m redqueen.tinycoder.pretrain", description=__doc__.splitlines()[0]
    )
    p.add_argument("--out", required=True, type=Path, help="model folder to write")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=3000, help="optimizer steps")
    p.add_argument("--programs", type=int, default=12000, help="corpus programs to generate")
    p.add_argument(
        "--corpus", type=Path, default=None, help="reuse a corpus file instead of generating"
    )
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--vocab-size", type=int, default=2048)
    p.add_argument("--workers", type=int, default=None, help="sandbox workers (default: all cores)")
    p.add_argument("--eval-n", type=int, default=64, help="samples per task type for the rates")
    p.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help=(
            "training time budget: the learning-rate schedule ends at whichever of --steps and "
            "this comes first (the card records the steps actually run)"
        ),
    )
    p.add_argument("--notes", default="", help="extra paragraph for the model card")
    return p.parse_args(argv)


def pack_documents(docs: Sequence[str], tokenizer) -> torch.Tensor:
    """Tokenize documents, end each with ``</s>`` and concatenate them into one 1-D stream."""
    ids: list[int] = []
    eos = tokenizer.eos_token_id
    for start in range(0, len(docs), 2048):
        for row in tokenizer(list(docs[start : start + 2048]))["input_ids"]:
            ids.extend(row)
            ids.append(eos)
    return torch.tensor(ids, dtype=torch.long)


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


def _batch(stream: torch.Tensor, size: int, seq_len: int, gen: torch.Generator) -> torch.Tensor:
    starts = torch.randint(0, stream.numel() - seq_len - 1, (size,), generator=gen)
    return torch.stack([stream[s : s + seq_len] for s in starts.tolist()])


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the whole pretraining pipeline; returns the training summary written to the card."""
    args = parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    t_start = time.time()
    summary: dict = {"seed": args.seed, "device": args.device}

    total_workers = args.workers or os.cpu_count() or 1
    with contextlib.ExitStack() as stack:
        # Pairs of sandbox workers: an executor serialises its calls, several keep cores busy.
        executors = [
            stack.enter_context(Executor(workers=min(2, total_workers)))
            for _ in range(max(1, total_workers // 2))
        ]
        executor = executors[0]
        # 1. Corpus: programs with sandboxed outputs.
        if args.corpus is not None:
            entries = load_corpus(args.corpus)
        else:
            with _progress() as bar:
                task = bar.add_task("corpus", total=args.programs, info="")
                entries = build_corpus(
                    args.programs,
                    seed=args.seed,
                    executors=executors,
                    progress=lambda done: bar.update(task, completed=done),
                )
            save_corpus(entries, out.parent / f"{out.name}-corpus.jsonl")
        n_eval = max(64, len(entries) // 20)
        train_entries, eval_entries = entries[:-n_eval], entries[-n_eval:]
        summary["corpus_seconds"] = round(time.time() - t_start, 1)

        # 2-3. Documents and tokenizer.
        docs = render_documents(train_entries, seed=args.seed)
        eval_docs = render_documents(eval_entries, seed=args.seed + 1)
        tokenizer = train_tokenizer(docs, vocab_size=args.vocab_size, model_max_length=args.seq_len)
        stream = pack_documents(docs, tokenizer)
        eval_stream = pack_documents(eval_docs, tokenizer)
        levels: dict[int, int] = {}
        for entry in entries:
            levels[entry.level] = levels.get(entry.level, 0) + 1
        summary.update(
            programs=len(entries),
            train_programs=len(train_entries),
            eval_programs=len(eval_entries),
            documents=len(docs),
            train_tokens=int(stream.numel()),
            levels=dict(sorted(levels.items())),
            vocab_size=len(tokenizer),
        )

        # 4. Model and training loop.
        config = tiny_coder_config(
            vocab_size=len(tokenizer),
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            max_position_embeddings=args.seq_len,
        )
        model = LlamaForCausalLM(config).to(args.device)
        summary["parameters"] = sum(p.numel() for p in model.parameters())
        train_seconds, steps_run, losses = _train(model, stream, args)
        summary.update(
            steps=steps_run,
            steps_requested=args.steps,
            batch_size=args.batch_size,
            seq_len=args.seq_len,
            lr=args.lr,
            train_seconds=round(train_seconds, 1),
            tokens_seen=steps_run * args.batch_size * args.seq_len,
            final_loss=round(sum(losses[-50:]) / max(len(losses[-50:]), 1), 4),
            eval_loss=round(_eval_loss(model, eval_stream, args), 4),
        )

        # 5. Save (fp32 safetensors; tied embeddings stored once).
        model.save_pretrained(out, safe_serialization=True)
        save_tokenizer(tokenizer, out)
        # Held-out entries travel with the model: rates and benchmarks re-use them.
        save_corpus(eval_entries, out / "heldout.jsonl")

        # 6. Starting rates with the environment's sampling.
        rates = measure_rates(
            model, tokenizer, eval_entries, executor=executor, n=args.eval_n, seed=args.seed
        )
    summary["rates"] = rates.to_dict()
    summary["total_seconds"] = round(time.time() - t_start, 1)
    (out / "training.json").write_text(json.dumps(summary, indent=2) + "\n")
    write_model_card(out, summary, notes=args.notes)
    print(json.dumps(summary, indent=2))
    return summary


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )


def _train(
    model: LlamaForCausalLM, stream: torch.Tensor, args: argparse.Namespace
) -> tuple[float, int, list[float]]:
    device = torch.device(args.device)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
        fused=device.type == "cuda",
    )
    gen = torch.Generator().manual_seed(args.seed)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    model.train()
    losses: list[float] = []
    t0 = time.time()
    step = 0
    with _progress() as bar:
        task = bar.add_task("train", total=args.steps, info="")
        for step in range(args.steps):
            budget = None if args.max_minutes is None else 60.0 * args.max_minutes
            elapsed = time.time() - t0
            if budget is not None and elapsed > budget:
                break
            for group in optimizer.param_groups:
                group["lr"] = _lr_at(step, args.steps, args.lr, elapsed / budget if budget else 0.0)
            batch = _batch(stream, args.batch_size, args.seq_len, gen).to(device)  # (batch, seq)
            with autocast:
                loss = model(input_ids=batch, labels=batch).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            if step % 10 == 0 or step == args.steps - 1:
                losses.append(loss.item())
                bar.update(task, completed=step + 1, info=f"loss {losses[-1]:.3f}")
        else:
            step = args.steps
    model.eval()
    return time.time() - t0, step, losses


@torch.no_grad()
def _eval_loss(model: LlamaForCausalLM, stream: torch.Tensor, args: argparse.Namespace) -> float:
    device = torch.device(args.device)
    gen = torch.Generator().manual_seed(args.seed + 1)
    seq_len = min(args.seq_len, stream.numel() - 2)
    total = 0.0
    for _ in range(8):
        batch = _batch(stream, args.batch_size, seq_len, gen).to(device)
        total += model(input_ids=batch, labels=batch).loss.item()
    return total / 8


if __name__ == "__main__":
    main()
