"""The hand-written code_o set: programs as a person writes them, held out of every corpus.

The generator's programs read strings over five letters, integers from -5 to 15 and names from
a small pool, so a held-out split of its own stream cannot tell whether a model reads code or
only the generator's dialect. ``redqueen/assets/handwritten_code_o.jsonl`` holds small programs
written by hand the way people write them first (common builtins and methods, slices,
comprehensions, loops, dict counters, whole words, the whole alphabet, integers past the
generator's range, ordinary identifiers), each with one input and its gold output from the
sandbox. Nothing trains on them: :func:`~redqueen.tinycoder.corpus.build_corpus` refuses every
program whose canonical key is one of :func:`handwritten_keys`, and nothing is tuned to them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from redqueen.tinycoder.canonical import canonical_key
from redqueen.verifiers import CodeTask, ProgramRunner, make_task, validate_programs

__all__ = [
    "HANDWRITTEN_PATH",
    "HandwrittenProgram",
    "gold_outputs",
    "handwritten_keys",
    "load_handwritten",
]

#: The committed set (one JSON object a line).
HANDWRITTEN_PATH = Path(__file__).resolve().parents[1] / "assets" / "handwritten_code_o.jsonl"


@dataclass(frozen=True)
class HandwrittenProgram:
    """One hand-written code_o problem.

    Args:
        id: Stable name (``hw-001`` ...).
        idiom: What it exercises (``strings``, ``slices``, ``dicts``, ...).
        program: Source defining ``f``.
        input: Argument source as written inside ``f(...)``.
        output: ``repr`` of the result, computed in the sandbox (never written by hand).
    """

    id: str
    idiom: str
    program: str
    input: str
    output: str

    def task(self) -> CodeTask:
        """The environment's code_o task for this program."""
        return make_task("code_o", self.program, (self.input,), (self.output,))


def load_handwritten(path: str | Path = HANDWRITTEN_PATH) -> list[HandwrittenProgram]:
    """Read the set.

    Raises:
        ValueError: If a line is not a hand-written program (the file and line are named).
    """
    programs = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                programs.append(HandwrittenProgram(**json.loads(line)))
            except (ValueError, TypeError) as err:
                raise ValueError(f"{path}:{lineno}: not a hand-written program ({err})") from None
    return programs


@cache
def handwritten_keys() -> frozenset[bytes]:
    """Canonical keys of the committed set: no corpus may hold a program with one of them."""
    return frozenset(canonical_key(p.program) for p in load_handwritten())


def gold_outputs(programs: list[HandwrittenProgram], executor: ProgramRunner) -> list[str]:
    """Each program's output on its input, from the sandbox (``validate_programs``: two runs).

    Raises:
        ValueError: If a program is not a valid task with its input (its id and reason named).
    """
    verdicts = validate_programs([(p.program, [p.input]) for p in programs], executor)
    for program, verdict in zip(programs, verdicts, strict=True):
        if not verdict.ok:
            raise ValueError(f"{program.id}: not a valid task ({verdict.reason}: {verdict.detail})")
    return [verdict.outputs[0] for verdict in verdicts]
