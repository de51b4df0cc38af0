"""Build the frozen held-out problem set of the ``code_output`` suite.

    python -m redqueen.experiments.evaluation._held_out --training-corpus TRAIN.jsonl [--n 256]

A benchmark must not move under the model: the problems are generated once, checked against
the base model's pretraining data, and frozen in :mod:`._code_output_problems` (a Python module,
so it ships in every install). Held-out means no problem shares a canonical form (the program
with names and formatting normalised, :mod:`redqueen.tinycoder.canonical`) with any training
program: small programs collide across seeds, so a different seed alone is not enough.
``TRAIN.jsonl`` is the training split that ``python -m redqueen.tinycoder.pretrain`` saves
beside the model (``<model>-corpus/train.jsonl``).

The shipped set was frozen for tiny-coder by an earlier generator, checked against every
candidate that tiny-coder's pretraining corpus could have drawn; its ``HEADER`` records how.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

#: Seed of the held-out stream (the pretraining corpus uses ``pretrain --seed``, default 0).
HELD_OUT_SEED = 1_000_003
#: The frozen problem module, next to this file.
FROZEN_MODULE = Path(__file__).with_name("_code_output_problems.py")


def build_held_out(
    n: int,
    *,
    training_corpus: str | Path,
    seed: int = HELD_OUT_SEED,
    workers: int | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``n`` code_o problems sharing no canonical form with ``training_corpus``, and a header.

    Args:
        n: Problems to keep.
        training_corpus: The pretraining corpus (JSON lines of :mod:`redqueen.tinycoder.corpus`).
        seed: Seed of the held-out stream.
        workers: Sandbox workers for the gold outputs (default: every core).
    """
    from redqueen.tinycoder.canonical import canonical_key
    from redqueen.tinycoder.corpus import build_corpus, load_corpus
    from redqueen.verifiers import Executor

    exclude = {canonical_key(entry.program) for entry in load_corpus(training_corpus)}
    with Executor(workers=workers) as executor:
        entries = build_corpus(n, seed=seed, executor=executor, exclude=exclude)
    problems = [
        {
            "program": entry.program,
            "input": entry.inputs[0],
            "output": entry.outputs[0],
            "level": entry.level,
        }
        for entry in entries
    ]
    header = {
        "seed": seed,
        "training_corpus": Path(training_corpus).name,
        "training_forms_excluded": len(exclude),
        "n": len(problems),
    }
    return problems, header


def write_frozen(problems: list[dict[str, Any]], header: dict[str, Any], path: Path) -> Path:
    """Write ``problems`` as the frozen Python module ``path`` (one JSON object a line)."""
    lines = [json.dumps(problem, sort_keys=True) for problem in problems]
    if any('"""' in line for line in lines):
        raise ValueError("a program contains a triple quote; cannot freeze it in a string literal")
    text = (
        '"""Frozen held-out problems of the ``code_output`` suite (see ``_held_out``; regenerate,\n'
        'never edit by hand)."""\n\n'
        "HEADER = {\n"
        + "".join(f"    {json.dumps(key)}: {json.dumps(header[key])},\n" for key in sorted(header))
        + "}\n\n"
        'PROBLEMS_JSONL = r"""\n' + "\n".join(lines) + '\n"""\n'
    )
    path.write_text(text)
    return path


def main(argv: list[str] | None = None) -> Path:
    """Command-line entry: build and freeze the held-out problems."""
    parser = argparse.ArgumentParser(description="Freeze the code_output held-out problems.")
    parser.add_argument("--training-corpus", type=Path, required=True, help="pretraining corpus")
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--seed", type=int, default=HELD_OUT_SEED)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", type=Path, default=FROZEN_MODULE)
    args = parser.parse_args(argv)
    problems, header = build_held_out(
        args.n, training_corpus=args.training_corpus, seed=args.seed, workers=args.workers
    )
    path = write_frozen(problems, header, args.out)
    print(json.dumps(header))
    return path


if __name__ == "__main__":
    main()
