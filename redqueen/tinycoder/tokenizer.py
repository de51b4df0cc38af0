"""Byte-level BPE tokenizer for tiny-coder, trained with Hugging Face ``tokenizers``.

Byte-level BPE never meets an unknown character (any text a teacher writes can be encoded)
and learns Python's indentation and common identifiers as single tokens. The format tags
(``<prog>``, ``</answer>``, ...) are added as whole tokens after training and digits are split
one by one. The result is a ``PreTrainedTokenizerFast`` with ``<s>``/``</s>``/``<pad>``, saved
so that ``AutoTokenizer.from_pretrained`` loads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from redqueen.verifiers.formats import TAGS

__all__ = ["BOS", "EOS", "PAD", "save_tokenizer", "train_tokenizer"]

PAD, BOS, EOS = "<pad>", "<s>", "</s>"


def train_tokenizer(
    texts: Iterable[str], *, vocab_size: int = 2048, model_max_length: int = 1024
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer on ``texts``.

    Args:
        texts: Training documents (the rendered corpus).
        vocab_size: Size of the BPE vocabulary, special tokens included (the format tags come
            on top).
        model_max_length: Longest sequence the model is meant to see.

    Raises:
        ValueError: If ``vocab_size`` cannot hold the 256 byte symbols and the special tokens.
    """
    if vocab_size < 259 + 16:
        raise ValueError(f"train_tokenizer: vocab_size {vocab_size} is too small (need >= 275)")
    tokenizer = Tokenizer(models.BPE())
    # Digits one by one (arithmetic generalises better), then GPT-2 style byte-level pieces.
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, BOS, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # Merges are spent on code, not on the tags, which become whole tokens afterwards (not
    # special ones: decoding keeps them, and the parsers need them).
    tokenizer.train_from_iterator((_strip_tags(text) for text in texts), trainer=trainer)
    tokenizer.add_tokens([AddedToken(tag, normalized=False, special=False) for tag in TAGS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        padding_side="left",
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
    )


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, folder: str | Path) -> None:
    """Save ``tokenizer`` so that any transformers release with fast tokenizers loads it.

    Newer releases record their own backend class name; the generic
    ``PreTrainedTokenizerFast`` is understood by old and new ones alike.
    """
    tokenizer.save_pretrained(folder)
    config_path = Path(folder) / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def _strip_tags(text: str) -> str:
    for tag in TAGS:
        text = text.replace(tag, "\n")
    return text
