"""How the base models' tokenizers cut whole words, the whole alphabet and longer numbers.

Both tokenizers (the shipped ``tiny-coder``'s and ``gpu-tiny-coder``'s, 2,066 tokens each) were
trained on the generator's corpus, whose strings are drawn from five letters and whose integers
run from -5 to 15. A word a person writes may then cost a token a letter, which a 3M model has
to read and copy letter by letter. This counts tokens for:

- common English words and identifiers, as a name after a space (`` total``, the space
  included) and as a string literal (``'total'``, the quotes included);
- random strings of six letters over the generator's five letters and over the whole alphabet;
- integers by number of digits.

No model runs; the word list below is general vocabulary, written for this count.

Usage::

    python benchmarks/tokenizer_words.py [--corpus runs/base-models-gpu/corpus]

With ``--corpus`` the tokenizer that ``pretrain --profile full`` would fit to those splits
(same documents, seed and 2,048-token vocabulary) is measured beside the two shipped ones.

Writes ``benchmarks/results/tokenizer_words.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import tempfile
from pathlib import Path

from transformers import AutoTokenizer

from redqueen.assets import tiny_coder_path

RESULTS = Path(__file__).resolve().parent / "results"

#: Everyday English words and the identifiers people give variables (general vocabulary).
WORDS = """
apple orange lemon grape mango tomato potato carrot bread butter cheese coffee water juice
house garden window door table chair kitchen street city country river mountain forest ocean
red green blue yellow black white purple brown
one two three four five six seven eight nine ten hundred thousand
monday tuesday friday january march july october summer winter
hello world python program function answer question message letter number
dog cat horse bird fish mouse tiger rabbit
happy quick slow small large short long first last
count total result index value name items words text numbers values scores prices key
keys data line lines word char chars letters digits string list length size amount average
maximum minimum sum product matrix row column grid left right start end step limit target
user email password age score grade price quantity balance name_list first_name last_name
""".split()


def tokens(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def measure(folder: Path) -> dict:
    tokenizer = AutoTokenizer.from_pretrained(folder)
    rng = random.Random(0)
    as_name = [tokens(tokenizer, f" {w}") for w in WORDS]
    as_literal = [tokens(tokenizer, f"'{w}'") for w in WORDS]
    letters = {
        label: [
            tokens(tokenizer, "".join(rng.choice(alphabet) for _ in range(6))) for _ in range(200)
        ]
        for label, alphabet in (("abcde", "abcde"), ("a-z", string.ascii_lowercase))
    }
    numbers = {
        digits: sum(
            tokens(tokenizer, str(rng.randrange(10 ** (digits - 1), 10**digits)))
            for _ in range(100)
        )
        / 100
        for digits in range(1, 8)
    }
    return {
        "vocab_size": len(tokenizer),
        "words": len(WORDS),
        "mean_chars_per_word": sum(map(len, WORDS)) / len(WORDS),
        "tokens_per_word_as_name": sum(as_name) / len(WORDS),
        "words_one_token_as_name": sum(t == 1 for t in as_name) / len(WORDS),
        "tokens_per_word_as_literal": sum(as_literal) / len(WORDS),
        "tokens_per_6_letters": {k: sum(v) / len(v) for k, v in letters.items()},
        "tokens_per_integer_by_digits": numbers,
        "examples": {
            w: tokenizer.convert_ids_to_tokens(
                tokenizer(f"'{w}'", add_special_tokens=False)["input_ids"]
            )
            for w in ("banana", "total", "hello", "python", "password")
        },
    }


def fitted(corpus: Path, full_share: float, folder: Path) -> Path:
    """The tokenizer ``pretrain --profile full --corpus CORPUS --full-share F`` fits (the same
    documents, seed and vocabulary), saved in ``folder``."""
    from redqueen.tinycoder._documents import _Data
    from redqueen.tinycoder.pretrain import _tokenizer, parse_args
    from redqueen.tinycoder.splits import load_splits

    flags = ["--out", "unused", "--profile", "full", "--full-share", str(full_share)]
    _tokenizer(_Data(load_splits(corpus), None, parse_args(flags), folder), folder)
    return folder / "tokenizer"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus",
        type=Path,
        help="also fit the tokenizer pretraining would fit to these splits, and measure it",
    )
    parser.add_argument("--full-share", type=float, default=0.6, help="for --corpus")
    args = parser.parse_args()
    models = {
        "tiny-coder": tiny_coder_path(),
        "gpu-tiny-coder": RESULTS / "gpu_tiny_coder",
    }
    with tempfile.TemporaryDirectory() as tmp:
        if args.corpus is not None:
            name = f"fitted to {args.corpus} (full-share {args.full_share})"
            models[name] = fitted(args.corpus, args.full_share, Path(tmp))
        result = {name: measure(folder) for name, folder in models.items()}
    out = RESULTS / "tokenizer_words.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
