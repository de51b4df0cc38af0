"""The training documents of one pretraining run, tokenized and packed into sequences.

Every epoch renders the training programs afresh (:mod:`redqueen.tinycoder.corpus`), packs the
``(context, target)`` documents into one token stream with a loss mask that covers only the
targets, cuts it into whole sequences and caches them, so a resumed run reads what it packed.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from redqueen.tinycoder.corpus import render_documents, render_lean_documents

__all__ = ["pack_documents", "pack_pairs", "sequences"]


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


def _atomic_save(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)
