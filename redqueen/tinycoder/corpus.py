"""The procedural tiny-coder corpus: generated programs, sandboxed gold outputs, rendered text.

Each :class:`CorpusEntry` is a generated program with :data:`N_CODE_F_INPUTS` inputs whose
outputs come from :func:`redqueen.verifiers.validate_programs` (run twice in separate sandboxed
processes, batches spread over every worker), so every entry is a valid task in the
environment's own sense, and no two entries share a canonical form
(:mod:`redqueen.tinycoder.canonical`). Entries are rendered
into training documents with the functions of :mod:`redqueen.verifiers.formats`, six per entry:
a teacher proposal and a student answer for each of code_o, code_i and code_f.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.compose import ComposedGenerator
from redqueen.tinycoder.handwritten import handwritten_keys
from redqueen.tinycoder.idioms import IdiomGenerator, IdiomProgram
from redqueen.tinycoder.programs import TRAIN_LEVELS, GeneratedProgram, ProgramGenerator
from redqueen.tinycoder.rename import rename_identifiers
from redqueen.verifiers import ProgramRunner, Triplet, make_task, validate_programs
from redqueen.verifiers.formats import (
    N_CODE_F_INPUTS,
    TASK_TYPES,
    Proposal,
    propose_completion,
    propose_prompt,
    reference_block,
    solve_completion,
    solve_prompt,
)

#: Longest program the corpus keeps (teacher prompts carry references and must fit 1024 tokens).
MAX_SOURCE_CHARS = 1200

__all__ = [
    "MAX_SOURCE_CHARS",
    "CorpusEntry",
    "build_corpus",
    "candidates",
    "load_corpus",
    "reference_triplets",
    "render_documents",
    "render_lean_documents",
    "lean_document",
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


def _distinct_inputs(
    program: GeneratedProgram | IdiomProgram, rng: random.Random, n: int
) -> tuple[str, ...]:
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


def candidates(
    seed: int, levels: Sequence[int], *, idiom_share: float = 0.0, composed_share: float = 0.0
) -> Iterator[tuple[GeneratedProgram | IdiomProgram, tuple[str, ...]]]:
    """The endless seeded stream of ``(program, inputs)`` candidates that :func:`build_corpus` reads.

    Each candidate draws its level uniformly from ``levels``, then the program, then
    :data:`N_CODE_F_INPUTS` distinct inputs; nothing is run. With ``idiom_share`` > 0 that
    share of the candidates comes from :class:`~redqueen.tinycoder.idioms.IdiomGenerator`
    instead (level 0); at 0 the stream is exactly the grammar's, as before idioms existed.
    Of those natural programs, ``composed_share`` are written by
    :class:`~redqueen.tinycoder.compose.ComposedGenerator` (composed idioms) and the rest by
    the templates; at 0 the stream is exactly what it was before composition existed.

    Raises:
        ValueError: If ``idiom_share`` or ``composed_share`` is outside [0, 1].
    """
    for name, share in (("idiom_share", idiom_share), ("composed_share", composed_share)):
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"candidates: {name} must be in [0, 1], got {share}")
    rng = random.Random(seed)
    generator = ProgramGenerator(rng=random.Random(rng.getrandbits(64)))
    idioms = IdiomGenerator(rng=random.Random(rng.getrandbits(64))) if idiom_share else None
    composer = (
        ComposedGenerator(rng=random.Random(rng.getrandbits(64)))
        if idiom_share and composed_share
        else None
    )
    levels = list(levels)
    while True:
        program: GeneratedProgram | IdiomProgram
        if idioms is not None and rng.random() < idiom_share:
            if composer is not None and rng.random() < composed_share:
                program = composer.program()
            else:
                program = idioms.program()
        else:
            program = generator.program(rng.choice(levels))
        yield program, _distinct_inputs(program, rng, N_CODE_F_INPUTS)


def build_corpus(
    n_programs: int,
    *,
    seed: int,
    executor: ProgramRunner,
    levels: Sequence[int] = TRAIN_LEVELS,
    exclude: AbstractSet[bytes] = frozenset(),
    batch: int = 512,
    max_source_chars: int = MAX_SOURCE_CHARS,
    progress: Callable[[int], None] | None = None,
    idiom_share: float = 0.0,
    composed_share: float = 0.0,
) -> list[CorpusEntry]:
    """Generate ``n_programs`` valid, non-constant programs, distinct up to names and formatting.

    Candidates come from :func:`candidates` in seeded batches. A candidate whose canonical form
    (:func:`~redqueen.tinycoder.canonical.canonical_key`) was seen already, is in ``exclude``
    or is one of the hand-written evaluation programs
    (:func:`~redqueen.tinycoder.handwritten.handwritten_keys`, never trained on) is dropped
    before it runs; the rest are checked together by
    :func:`~redqueen.verifiers.validate_programs`, which spreads every run of the batch over all
    the executor's workers (build it with ``Executor(workers=os.cpu_count())``). A candidate is
    kept when it is valid and its outputs are not all equal (a constant function teaches
    nothing about reading its input). The result depends only on ``seed``, ``levels`` and
    ``exclude``: batches are generated and accepted in order.

    Args:
        n_programs: How many entries to return.
        seed: Seed of the generator and of the inputs.
        executor: The sandbox that computes outputs.
        levels: Difficulty levels, drawn uniformly per candidate.
        exclude: Canonical keys never to accept (e.g. the training split, for a held-out one).
        batch: Most candidates validated per call.
        max_source_chars: Longest program kept (prompts must fit the model's context).
        progress: Called with the number of entries accepted so far after each batch.
        idiom_share: Share of candidates from the idiom generator (see :func:`candidates`).
        composed_share: Share of those written by composition (see :func:`candidates`).

    Raises:
        RuntimeError: If far too few candidates pass (the generator or sandbox is broken).
    """
    stream = candidates(seed, levels, idiom_share=idiom_share, composed_share=composed_share)
    held_out = handwritten_keys()
    entries: list[CorpusEntry] = []
    seen: set[bytes] = set()
    tried = 0
    while len(entries) < n_programs:
        if tried > 20 * n_programs + 1000:
            raise RuntimeError(
                f"build_corpus: only {len(entries)} of {tried} candidate programs were new and valid"
            )
        fresh = []
        # Near the end, draw about twice what is still missing rather than a whole batch.
        size = min(batch, max(16, 2 * (n_programs - len(entries))))
        for program, inputs in itertools.islice(stream, size):
            key = canonical_key(program.source)
            if (
                key in seen
                or key in exclude
                or key in held_out
                or len(program.source) > max_source_chars
            ):
                continue
            seen.add(key)
            fresh.append((program, inputs))
        tried += size
        verdicts = validate_programs([(p.source, list(i)) for p, i in fresh], executor)
        for (program, inputs), verdict in zip(fresh, verdicts, strict=True):
            if not verdict.ok or len(set(verdict.outputs)) == 1:
                continue
            entries.append(CorpusEntry(program.source, program.level, inputs, verdict.outputs))
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
    available = len(entries) - (exclude is not None and 0 <= exclude < len(entries))
    picks: list[int] = []
    # Rejection sampling: a list of every other index would cost O(len(entries)) per document.
    while len(picks) < min(k, available):
        index = rng.randrange(len(entries))
        if index != exclude and index not in picks:
            picks.append(index)
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


def lean_document(entry: CorpusEntry) -> str:
    """The program once with every input and its output, in the reference notation.

    A teacher prompt's reference block (:func:`~redqueen.verifiers.formats.reference_block`)
    with all of the entry's pairs, without the final newline.
    """
    return reference_block(entry.program, list(zip(entry.inputs, entry.outputs, strict=True)))[:-1]


#: The six prompt roles a full-format document takes: (teacher or student, task type).
_ROLES: tuple[tuple[str, str], ...] = tuple(
    (role, t) for t in TASK_TYPES for role in ("propose", "solve")
)


def render_lean_documents(
    entries: Sequence[CorpusEntry],
    *,
    seed: int,
    full_share: float = 0.3,
    max_references: int = 3,
    rename_share: float = 0.0,
) -> list[tuple[str, str]]:
    """One training document per entry, as ``(context, target)`` pairs, shuffled.

    Only ``target`` is trained on (its tokens carry the loss); ``context`` is read, not learned.
    With probability ``1 - full_share`` an entry's document is its :func:`lean_document`
    (no context, all of it trained); otherwise it is one of the six prompt roles of
    :mod:`redqueen.verifiers.formats`, drawn uniformly: a teacher prompt with
    1..``max_references`` references from other entries (context) and the proposal (target),
    or a student prompt (context) and its answer (target). Either way each entry's program
    is a training target at most once per call, so epochs bound how often it is learned from.
    With probability ``rename_share`` a document's programs (the entry's and each reference,
    independently) carry new identifier names (:func:`~redqueen.tinycoder.rename.rename_identifiers`;
    outputs are unchanged by construction).

    Raises:
        ValueError: If ``full_share`` or ``rename_share`` is outside [0, 1].
    """
    for label, share in (("full_share", full_share), ("rename_share", rename_share)):
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"render_lean_documents: {label} must be in [0, 1], got {share}")
    rng = random.Random(seed)
    names = random.Random(seed + 1)  # renaming has its own stream: the documents stay the same

    def renamed(program: str) -> str:
        if rename_share and names.random() < rename_share:
            return rename_identifiers(program, names)
        return program

    docs: list[tuple[str, str]] = []
    for position, entry in enumerate(entries):
        entry = replace(entry, program=renamed(entry.program))
        if rng.random() >= full_share:
            docs.append(("", lean_document(entry)))
            continue
        role, task_type = _ROLES[rng.randrange(len(_ROLES))]
        index = rng.randrange(len(entry.inputs))
        if role == "propose":
            refs = [
                replace(r, program=renamed(r.program))
                for r in reference_triplets(
                    entries, rng, rng.randint(1, max_references), exclude=position
                )
            ]
            inputs = entry.inputs if task_type == "code_f" else (entry.inputs[index],)
            proposal = Proposal(task_type, entry.program, inputs)
            docs.append((propose_prompt(task_type, refs), propose_completion(task_type, proposal)))
        else:
            task = entry_task(entry, task_type, index)
            docs.append((solve_prompt(task), solve_completion(task)))
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
