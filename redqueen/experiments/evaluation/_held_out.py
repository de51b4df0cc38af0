"""Build the frozen held-out problem set of the ``code_output`` suite.

    python -m redqueen.experiments.evaluation._held_out [--n 256] [--pretrain-programs 12000]

A benchmark must not move under the model: the problems are generated once, checked against
tiny-coder's pretraining data, and frozen in :mod:`._code_output_problems` (a Python module, so it
ships in every install). Held-out means the program text never appeared in pretraining. Small
programs collide across seeds (one-line expressions over a few parameter names: about 84% of
level-1 and half of level-2 programs of a fresh seed also occur in seed 0's first 40,000
candidates), so a different seed alone is not enough: every candidate the pretraining corpus
could have drawn is regenerated and excluded.

:func:`redqueen.tinycoder.corpus.build_corpus` draws candidates from one seeded stream
and stops once ``n_programs`` are valid, giving up after ``8 * n_programs + 200`` tries plus one
batch; so the first that many candidates of the pretraining seed's stream are a superset of the
pretraining programs, whatever the validity rate.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Seed of the held-out stream (the pretraining corpus uses ``pretrain --seed``, default 0).
HELD_OUT_SEED = 1_000_003
#: The frozen problem module, next to this file.
FROZEN_MODULE = Path(__file__).with_name("_code_output_problems.py")


def candidate_sources(seed: int, n_candidates: int) -> Iterator[str]:
    """Program sources of the first ``n_candidates`` candidates ``build_corpus(seed=seed)`` draws.

    Mirrors ``build_corpus``'s use of its random stream (level choice, program, then the inputs
    of each candidate), without running anything.
    """
    from redqueen.tinycoder.corpus import _distinct_inputs
    from redqueen.tinycoder.programs import MAX_LEVEL, ProgramGenerator
    from redqueen.verifiers.formats import N_CODE_F_INPUTS

    rng = random.Random(seed)
    generator = ProgramGenerator(rng=random.Random(rng.getrandbits(64)))
    levels = list(range(1, MAX_LEVEL + 1))
    for _ in range(n_candidates):
        program = generator.program(rng.choice(levels))
        _distinct_inputs(program, rng, N_CODE_F_INPUTS)
        yield program.source


def pretraining_candidates(pretrain_programs: int, executors: int = 1) -> int:
    """Most candidates ``build_corpus`` can draw for ``pretrain_programs`` programs."""
    batch = max(16 * executors, 64)
    return 8 * pretrain_programs + 200 + batch


def build_held_out(
    n: int,
    *,
    seed: int = HELD_OUT_SEED,
    pretrain_seed: int = 0,
    pretrain_programs: int = 12000,
    pretrain_executors: int = 64,
    workers: int = 2,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``n`` held-out code_o problems and a header describing how they were made.

    Args:
        n: Problems to keep.
        seed: Seed of the held-out stream.
        pretrain_seed: The pretraining corpus seed (tiny-coder's model card records it).
        pretrain_programs: The pretraining corpus size (also on the card).
        pretrain_executors: An upper bound on the executors pretraining used (it sets the
            batch size and so the last batch drawn).
        workers: Sandbox workers for the gold outputs.
    """
    from redqueen.tinycoder.corpus import build_corpus
    from redqueen.verifiers import Executor

    bound = pretraining_candidates(pretrain_programs, pretrain_executors)
    seen = set(candidate_sources(pretrain_seed, bound))
    problems: list[dict[str, Any]] = []
    dropped = 0
    size = n
    with Executor(workers=workers) as executor:
        while len(problems) < n:
            size *= 2
            entries = build_corpus(size, seed=seed, executors=[executor])
            problems, dropped = [], 0
            for entry in entries:
                if entry.program in seen:
                    dropped += 1
                    continue
                problems.append(
                    {
                        "program": entry.program,
                        "input": entry.inputs[0],
                        "output": entry.outputs[0],
                        "level": entry.level,
                    }
                )
                if len(problems) == n:
                    break
    header = {
        "seed": seed,
        "pretrain_seed": pretrain_seed,
        "pretrain_programs": pretrain_programs,
        "pretrain_candidates_excluded": bound,
        "dropped_as_seen_in_pretraining": dropped,
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
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--seed", type=int, default=HELD_OUT_SEED)
    parser.add_argument("--pretrain-seed", type=int, default=0)
    parser.add_argument("--pretrain-programs", type=int, default=12000)
    parser.add_argument("--out", type=Path, default=FROZEN_MODULE)
    args = parser.parse_args(argv)
    problems, header = build_held_out(
        args.n,
        seed=args.seed,
        pretrain_seed=args.pretrain_seed,
        pretrain_programs=args.pretrain_programs,
    )
    path = write_frozen(problems, header, args.out)
    print(json.dumps(header))
    return path


if __name__ == "__main__":
    main()
