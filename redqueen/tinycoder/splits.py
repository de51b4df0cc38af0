"""The three corpus splits: training, in-distribution held-out, and out-of-distribution.

    python -m redqueen.tinycoder.splits --out DIR [--train 150000] [--heldout 2000] [--ood 1000]
        [--idiom-share 0.5] [--composed-share 0.5] [--exclude OTHER/heldout.jsonl]

- ``train``: programs of :data:`~redqueen.tinycoder.programs.TRAIN_LEVELS`;
- ``heldout``: programs from the same generator and levels whose canonical form is in no
  training program (the last entries of the same deduplicated stream);
- ``ood``: programs of :data:`~redqueen.tinycoder.programs.OOD_LEVEL`, harder than anything in
  training, from a stream of their own, again sharing no canonical form with the other two.

Gold outputs are computed with a progress bar, by default in a :class:`~redqueen.tinycoder.gold.GoldPool`
(the generator's programs run in plain worker processes with time and memory limits, about
18x the sandbox's rate; ``--gold sandbox`` uses the sandbox on every run instead); the splits are
written as ``train.jsonl``, ``heldout.jsonl`` and ``ood.jsonl`` (the corpus format of
:mod:`redqueen.tinycoder.corpus`), which ``pretrain --corpus DIR`` reads back.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.corpus import CorpusEntry, build_corpus, load_corpus, save_corpus
from redqueen.tinycoder.gold import GoldPool
from redqueen.tinycoder.programs import OOD_LEVEL, TRAIN_LEVELS
from redqueen.verifiers import Executor, ProgramRunner

__all__ = [
    "GOLD_MODES",
    "SPLITS",
    "CorpusSplits",
    "build_splits",
    "load_splits",
    "main",
    "shared_forms",
]

#: How gold outputs may be computed (see :func:`build_with_progress`).
GOLD_MODES: tuple[str, ...] = ("pool", "sandbox")

#: Split names, also the file stems.
SPLITS: tuple[str, ...] = ("train", "heldout", "ood")


def progress_bar() -> Progress:
    """The progress bar of the corpus build and of training."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )


@dataclass(frozen=True)
class CorpusSplits:
    """Training, in-distribution held-out and out-of-distribution corpus entries."""

    train: list[CorpusEntry]
    heldout: list[CorpusEntry]
    ood: list[CorpusEntry]

    def save(self, folder: str | Path) -> None:
        """Write ``train.jsonl``, ``heldout.jsonl`` and ``ood.jsonl`` into ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name in SPLITS:
            save_corpus(getattr(self, name), folder / f"{name}.jsonl")


def load_splits(folder: str | Path) -> CorpusSplits:
    """Read the splits written by :meth:`CorpusSplits.save`.

    Raises:
        FileNotFoundError: If a split file is missing (its path is named).
        ValueError: If a line is not a corpus entry.
    """
    folder = Path(folder)
    return CorpusSplits(*(load_corpus(folder / f"{name}.jsonl") for name in SPLITS))


def shared_forms(a: Sequence[CorpusEntry], b: Sequence[CorpusEntry]) -> set[bytes]:
    """Canonical keys that occur in both ``a`` and ``b`` (empty for properly held-out sets)."""
    return {canonical_key(e.program) for e in a} & {canonical_key(e.program) for e in b}


def build_splits(
    *,
    n_train: int,
    n_heldout: int,
    n_ood: int,
    seed: int,
    executor: ProgramRunner,
    progress: Callable[[str, int], None] | None = None,
    idiom_share: float = 0.0,
    exclude: AbstractSet[bytes] = frozenset(),
    composed_share: float = 0.0,
) -> CorpusSplits:
    """Build the three splits (see the module docstring); all depend only on ``seed`` (and
    ``exclude``).

    Args:
        n_train: Training programs.
        n_heldout: In-distribution held-out programs.
        n_ood: Out-of-distribution programs (level ``OOD_LEVEL``).
        seed: Corpus seed (the OOD stream uses ``seed + 1``).
        executor: Sandbox (or :class:`~redqueen.tinycoder.gold.GoldPool`) for the gold outputs.
        progress: Called with a split name and its entries accepted so far.
        idiom_share: Share of the training and held-out candidates drawn from the idiom
            generator (:mod:`redqueen.tinycoder.idioms`, level 0); OOD stays the grammar's.
        composed_share: Share of those idiom programs written by composition
            (:mod:`redqueen.tinycoder.compose`) rather than by the templates.
        exclude: Canonical keys no split may hold (for instance another model's held-out
            programs, so that a model trained on these splits can be scored on them).
    """

    def report(name: str) -> Callable[[int], None] | None:
        return None if progress is None else (lambda done: progress(name, done))

    both = build_corpus(
        n_train + n_heldout,
        seed=seed,
        executor=executor,
        levels=TRAIN_LEVELS,
        progress=report("train"),
        idiom_share=idiom_share,
        composed_share=composed_share,
        exclude=exclude,
    )
    train, heldout = both[:n_train], both[n_train:]
    ood = build_corpus(
        n_ood,
        seed=seed + 1,
        executor=executor,
        levels=(OOD_LEVEL,),
        exclude={canonical_key(e.program) for e in both} | set(exclude),
        progress=report("ood"),
    )
    return CorpusSplits(train, heldout, ood)


def build_with_progress(
    n_train: int,
    n_heldout: int,
    n_ood: int,
    *,
    seed: int,
    workers: int | None,
    gold: str = "pool",
    idiom_share: float = 0.0,
    exclude: AbstractSet[bytes] = frozenset(),
    composed_share: float = 0.0,
) -> CorpusSplits:
    """:func:`build_splits` with a progress bar.

    Args:
        gold: ``"pool"``: a :class:`~redqueen.tinycoder.gold.GoldPool` (``workers`` processes
            per hash seed, default half the cores) with a one-worker sandbox for batches that
            wedge a worker; ``"sandbox"``: an ``Executor`` with ``workers`` (default every core).

    Raises:
        ValueError: On an unknown ``gold``.
    """
    if gold not in GOLD_MODES:
        raise ValueError(f"build_with_progress: gold must be one of {GOLD_MODES}, got {gold!r}")
    totals = {"train": n_train + n_heldout, "ood": n_ood}
    cores = os.cpu_count() or 1
    with contextlib.ExitStack() as stack:
        executor: ProgramRunner
        if gold == "pool":
            fallback = stack.enter_context(Executor(workers=1))
            executor = stack.enter_context(
                GoldPool(workers=workers or max(1, cores // 2), fallback=fallback)
            )
        else:
            executor = stack.enter_context(Executor(workers=workers or cores))
        bar = stack.enter_context(progress_bar())
        tasks = {
            name: bar.add_task(f"corpus {name}", total=t, info="") for name, t in totals.items()
        }
        return build_splits(
            n_train=n_train,
            n_heldout=n_heldout,
            n_ood=n_ood,
            seed=seed,
            executor=executor,
            progress=lambda name, done: bar.update(tasks[name], completed=done),
            idiom_share=idiom_share,
            composed_share=composed_share,
            exclude=exclude,
        )


def main(argv: Sequence[str] | None = None) -> CorpusSplits:
    """Command line: build the splits into ``--out``."""
    parser = argparse.ArgumentParser(
        prog="python -m redqueen.tinycoder.splits", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", required=True, type=Path, help="folder for the three .jsonl")
    parser.add_argument("--train", type=int, default=150_000, help="training programs")
    parser.add_argument("--heldout", type=int, default=2000, help="in-distribution held-out")
    parser.add_argument("--ood", type=int, default=1000, help="out-of-distribution programs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="worker processes")
    parser.add_argument(
        "--gold", choices=GOLD_MODES, default="pool", help="how gold outputs are computed"
    )
    parser.add_argument(
        "--idiom-share",
        type=float,
        default=0.0,
        help="share of training and held-out candidates from the idiom generator (level 0)",
    )
    parser.add_argument(
        "--composed-share",
        type=float,
        default=0.0,
        help="share of the idiom programs written by composition rather than by the templates",
    )
    parser.add_argument(
        "--exclude",
        type=Path,
        action="append",
        default=[],
        help="a corpus .jsonl whose programs' canonical forms no split may hold (repeatable)",
    )
    args = parser.parse_args(argv)
    for flag, share in (("--idiom-share", args.idiom_share), ("--composed-share", args.composed_share)):
        if not 0.0 <= share <= 1.0:
            parser.exit(2, f"error: {flag} must be in [0, 1], got {share}\n")
    start = time.time()
    excluded: set[bytes] = set()
    for path in args.exclude:
        try:
            excluded |= {canonical_key(e.program) for e in load_corpus(path)}
        except (OSError, ValueError) as err:
            parser.exit(2, f"error: --exclude {path}: {err}\n")
    splits = build_with_progress(
        args.train,
        args.heldout,
        args.ood,
        seed=args.seed,
        workers=args.workers,
        gold=args.gold,
        idiom_share=args.idiom_share,
        composed_share=args.composed_share,
        exclude=frozenset(excluded),
    )
    splits.save(args.out)
    sizes = ", ".join(f"{name} {len(getattr(splits, name))}" for name in SPLITS)
    print(f"wrote {args.out}: {sizes} ({time.time() - start:.0f} s)")
    return splits


if __name__ == "__main__":
    main()
