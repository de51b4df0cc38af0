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

``--init-from DIR`` continues pretraining an existing model folder instead of starting from
nothing: its weights (in float32) and its tokenizer are the starting point, steps (1)-(2) and
(4)-(8) are as above (for instance on splits built with ``--idiom-share`` and ``--exclude``
the model's own held-out programs, so its held-out rates stay comparable).
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
from typing import cast

import torch
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

from redqueen.tinycoder._documents import _Data, pack_documents, pack_pairs, sequences
from redqueen.tinycoder._profiles import AUTOCAST_MODES, DOCUMENT_STYLES, PROFILES
from redqueen.tinycoder._training import _mean_loss, _train, bf16_is_faster
from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.card import write_model_card
from redqueen.tinycoder.corpus import save_corpus
from redqueen.tinycoder.model import SIZES, STORAGE_DTYPES, save_model, tiny_coder_config
from redqueen.tinycoder.rates import measure_handwritten, measure_rates
from redqueen.tinycoder.splits import (
    GOLD_MODES,
    SPLITS,
    CorpusSplits,
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
    "sequences",
]

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
    p.add_argument(
        "--init-from",
        type=Path,
        help="continue pretraining this model folder (its weights, tokenizer and size)",
    )
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
    if args.init_from is not None:
        if not (args.init_from / "config.json").is_file():
            p.exit(2, f"error: --init-from {args.init_from}: no config.json, not a model folder\n")
        # The model and its tokenizer come from the folder; the size names where it came from.
        args.size = f"from {args.init_from.name}"
    return args


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
    splits, summary["corpus_seconds"] = _corpus_splits(args, t_start)
    summary["gold"] = args.gold if args.corpus is None else "saved corpus"

    # 2-3. Tokenizer (trained once, kept in the checkpoint folder) and documents.
    data = _Data(splits, None, args, work)
    tokenizer = _tokenizer(data, work)
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
    model = _initial_model(args, tokenizer).to(args.device)
    summary.update(size=args.size, parameters=sum(p.numel() for p in model.parameters()))
    if args.init_from is not None:
        summary["init_from"] = str(args.init_from)
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
    summary.update(_rates(model, tokenizer, splits, args))
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


def _corpus_splits(args: argparse.Namespace, t_start: float) -> tuple[CorpusSplits, float]:
    """The corpus splits (``--corpus``, or those an interrupted run saved, or built now) and
    the seconds building them took."""
    if args.corpus is not None:
        try:
            return load_splits(args.corpus), 0.0
        except (OSError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(2) from None
    corpus_dir = args.out.parent / f"{args.out.name}-corpus"
    try:
        return load_splits(corpus_dir), 0.0  # built by an earlier, interrupted run
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
        return splits, round(time.time() - t_start, 1)


def _initial_model(
    args: argparse.Namespace, tokenizer: PreTrainedTokenizerFast
) -> LlamaForCausalLM:
    """A fresh model of ``--size``, or the ``--init-from`` model in float32 (continued
    pretraining; a checkpoint of this run replaces its weights when training resumes)."""
    if args.init_from is None:
        config = tiny_coder_config(
            vocab_size=len(tokenizer),
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            max_position_embeddings=args.seq_len,
            **SIZES[args.size],
        )
        return LlamaForCausalLM(config)
    model = LlamaForCausalLM.from_pretrained(args.init_from).float()
    context = model.config.max_position_embeddings
    if context < args.seq_len:
        print(
            f"error: --init-from {args.init_from} reads {context} positions, "
            f"shorter than --seq-len {args.seq_len}",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return model


def _tokenizer(data: _Data, work: Path) -> PreTrainedTokenizerFast:
    """The run's tokenizer: trained once on the first documents (or, with ``--init-from``,
    that model's own), kept in the checkpoint folder."""
    from transformers import AutoTokenizer

    args = data.args
    tokenizer_dir = work / "tokenizer"
    if (tokenizer_dir / "tokenizer.json").is_file():
        return cast(PreTrainedTokenizerFast, AutoTokenizer.from_pretrained(tokenizer_dir))
    if args.init_from is not None:
        tokenizer = cast(PreTrainedTokenizerFast, AutoTokenizer.from_pretrained(args.init_from))
        save_tokenizer(tokenizer, tokenizer_dir)
        return tokenizer
    sample = data.render(data.splits.train[:_TOKENIZER_DOCS], args.seed)
    tokenizer = train_tokenizer(
        [c + t for c, t in sample], vocab_size=args.vocab_size, model_max_length=args.seq_len
    )
    save_tokenizer(tokenizer, tokenizer_dir)
    return tokenizer


def _rates(
    model: LlamaForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    splits: CorpusSplits,
    args: argparse.Namespace,
) -> dict[str, object]:
    """The rates on the held-out and OOD splits and the hand-written code_o accuracy."""
    # A proposal is new when no training program shares its canonical form.
    known = {canonical_key(e.program) for e in splits.train}
    with Executor(workers=args.workers or os.cpu_count() or 1) as executor:
        rates = {
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
        handwritten = measure_handwritten(
            model, tokenizer, executor, batch_size=args.rates_batch_size
        ).summary()
    return {"rates": rates, "handwritten": handwritten}


if __name__ == "__main__":
    main()
