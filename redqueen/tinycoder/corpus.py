"""The procedural tiny-coder corpus: generated programs, sandboxed gold outputs, rendered text.

Each :class:`CorpusEntry` is a generated program with :data:`N_CODE_F_INPUTS` inputs whose
outputs come from :func:`redqueen.verifiers.validate_program` (run twice in separate sandboxed
processes), so every entry is a valid task in the environment's own sense. Entries are rendered
into training documents with the functions of :mod:`redqueen.verifiers.formats`, six per entry:
a teacher proposal and a student answer for each of code_o, code_i and code_f.
"""

from __future__ import annotations

import json
import queue
import random
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from redqueen.tinycoder.programs import MAX_LEVEL, GeneratedProgram, ProgramGenerator
from redqueen.verifiers import Executor, Triplet, make_task, validate_program
from redqueen.verifiers.formats import (
    N_CODE_F_INPUTS,
    TASK_TYPES,
    Proposal,
    propose_completion,
    propose_prompt,
    solve_completion,
    solve_prompt,
)

__all__ = [
    "CorpusEntry",
    "build_corpus",
    "load_corpus",
    "reference_triplets",
    "render_documents",
    "save_corpus",
    "entry_task",
]


@dataclass(frozen=True)
class CorpusEntry:
    """One valid program with its inputs and sandbox-computed outputs.

    Args:
        program: Source defining ``f``.
        level: Generator difficulty level (1..MAX_LEVEL).
        inputs: :data:`N_CODE_F_INPUTS` argument lists.
        outputs: ``repr`` of ``f(*input)`` for each input, from the sandbox.
    """

    program: str
    level: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    def triplet(self, index: int = 0) -> Triplet:
        """The (program, input, output) triplet of pair ``index``."""
        return Triplet(self.program, self.inputs[index], self.outputs[index])


def _distinct_inputs(program: GeneratedProgram, rng: random.Random, n: int) -> tuple[str, ...]:
    seen: list[str] = []
    for _ in range(n * 6):
        candidate = program.random_input(rng)
        if candidate not in seen:
            seen.append(candidate)
        if len(seen) == n:
            break
    while len(seen) < n:  # tiny input spaces (e.g. one bool-like int range) may repeat
        seen.append(program.random_input(rng))
    return tuple(seen)


def build_corpus(
    n_programs: int,
    *,
    seed: int,
    executors: Sequence[Executor],
    levels: Sequence[int] = tuple(range(1, MAX_LEVEL + 1)),
    progress: Callable[[int], None] | None = None,
) -> list[CorpusEntry]:
    """Generate ``n_programs`` valid, non-constant programs with sandboxed outputs.

    Candidates are generated in seeded batches and checked with ``validate_program``, one
    call per executor at a time (an executor serialises its calls, so several small executors
    keep all cores busy). A candidate is kept when it is valid, its outputs are not all equal (a
    constant function teaches nothing about reading its input) and its source is new. The
    result depends only on ``seed``: batches are generated and accepted in order.

    Args:
        n_programs: How many entries to return.
        seed: Seed of the generator and of the inputs.
        executors: Sandboxes that compute outputs (one concurrent check per executor).
        levels: Difficulty levels, drawn uniformly.
        progress: Called with the number of entries accepted so far after each batch.

    Raises:
        ValueError: If no executor is given.
        RuntimeError: If far too few candidates pass (the generator or sandbox is broken).
    """
    if not executors:
        raise ValueError("build_corpus: pass at least one Executor")
    rng = random.Random(seed)
    generator = ProgramGenerator(rng=random.Random(rng.getrandbits(64)))
    idle: queue.Queue[Executor] = queue.Queue()
    for executor in executors:
        idle.put(executor)

    def check(candidate: tuple[GeneratedProgram, tuple[str, ...]]):
        executor = idle.get()
        try:
            return validate_program(candidate[0].source, list(candidate[1]), executor)
        finally:
            idle.put(executor)

    entries: list[CorpusEntry] = []
    seen: set[str] = set()
    tried = 0
    batch = max(16 * len(executors), 64)
    with ThreadPoolExecutor(max_workers=len(executors)) as pool:
        while len(entries) < n_programs:
            if tried > 8 * n_programs + 200:
                raise RuntimeError(
                    f"build_corpus: only {len(entries)} of {tried} candidate programs were valid"
                )
            candidates = []
            for _ in range(batch):
                program = generator.program(rng.choice(list(levels)))
                candidates.append((program, _distinct_inputs(program, rng, N_CODE_F_INPUTS)))
            tried += batch
            for (program, inputs), validation in zip(
                candidates, pool.map(check, candidates), strict=True
            ):
                if not validation.ok or program.source in seen:
                    continue
                outputs = tuple(validation.outputs)
                if len(set(outputs)) == 1:
                    continue
                seen.add(program.source)
                entries.append(CorpusEntry(program.source, program.level, inputs, outputs))
                if len(entries) == n_programs:
                    break
            if progress is not None:
                progress(len(entries))
    return entries


def entry_task(entry: CorpusEntry, task_type: str, index: int = 0):
    """The environment's ``CodeTask`` for ``entry`` (pair ``index`` for code_o/code_i)."""
    if task_type == "code_f":
        return make_task(
            "code_f", entry.program, entry.inputs, entry.outputs, n_visible=N_CODE_F_INPUTS // 2
        )
    return make_task(task_type, entry.program, (entry.inputs[index],), (entry.outputs[index],))


def reference_triplets(
    entries: Sequence[CorpusEntry], rng: random.Random, k: int, *, exclude: int | None = None
) -> list[Triplet]:
    """``k`` random reference triplets drawn from ``entries`` (a random pair of each).

    Args:
        entries: Where to draw from.
        rng: Source of randomness.
        k: How many references.
        exclude: Index of an entry never to draw (the one being proposed: a teacher should
            learn to write a new program, not to copy its reference).
    """
    pool = [i for i in range(len(entries)) if i != exclude]
    picks = rng.sample(pool, min(k, len(pool)))
    return [entries[i].triplet(rng.randrange(len(entries[i].inputs))) for i in picks]


def render_documents(
    entries: Sequence[CorpusEntry], *, seed: int, max_references: int = 3
) -> list[str]:
    """Six training documents per entry (teacher and student, each task type), shuffled.

    Teacher documents are conditioned on 1..``max_references`` reference triplets from other
    entries, so the model learns to write a new program after any short list of examples.
    """
    rng = random.Random(seed)
    docs: list[str] = []
    for position, entry in enumerate(entries):
        for task_type in TASK_TYPES:
            index = rng.randrange(len(entry.inputs))
            refs = reference_triplets(
                entries, rng, rng.randint(1, max_references), exclude=position
            )
            inputs = entry.inputs if task_type == "code_f" else (entry.inputs[index],)
            proposal = Proposal(task_type, entry.program, inputs)
            docs.append(propose_prompt(task_type, refs) + propose_completion(task_type, proposal))
            task = entry_task(entry, task_type, index)
            docs.append(solve_prompt(task) + solve_completion(task))
    rng.shuffle(docs)
    return docs


def save_corpus(entries: Iterable[CorpusEntry], path: str | Path) -> None:
    """Write entries as JSON lines."""
    with open(path, "w", encoding="utf-8") as fh:
        for entry in entries:
            fh.write(json.dumps(asdict(entry)) + "\n")


def load_corpus(path: str | Path) -> list[CorpusEntry]:
    """Read entries written by :func:`save_corpus`.

    Raises:
        ValueError: If a line is not a corpus entry (the file and line are named).
    """
    entries = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                row = json.loads(line)
                entries.append(
                    CorpusEntry(
                        program=row["program"],
                        level=int(row["level"]),
                        inputs=tuple(row["inputs"]),
                        outputs=tuple(row["outputs"]),
                    )
                )
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{path}:{lineno}: not a corpus entry ({err})") from None
    return entries
