"""The hand-written code_o set: well formed, in the environment's task format, never in a corpus."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from redqueen.tinycoder import corpus as corpus_module
from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.corpus import build_corpus
from redqueen.tinycoder.handwritten import handwritten_keys, load_handwritten
from redqueen.tinycoder.programs import GeneratedProgram, ProgramGenerator
from redqueen.verifiers import ExecResult
from redqueen.verifiers.formats import parse_solution, solve_completion, solve_prompt


def test_the_set_is_large_varied_and_in_the_code_o_format() -> None:
    programs = load_handwritten()
    assert len(programs) >= 60
    assert len({p.id for p in programs}) == len(programs)
    # Distinct up to names and formatting: no program counts twice.
    assert len(handwritten_keys()) == len(programs)
    assert len({p.idiom for p in programs}) >= 8
    for p in programs:
        task = p.task()
        assert solve_prompt(task).startswith("<solve code_o>\n<prog>\n")
        # The gold output is what the environment's parser accepts as an answer.
        assert parse_solution("code_o", solve_completion(task)) == p.output


class _RecordingRunner:
    """Accepts every program it is asked to run (outputs differ per input) and records them."""

    def __init__(self) -> None:
        self.sources: set[str] = set()

    def execute_many(
        self, pairs: Iterable[tuple[str, str]], *, heap_jitter: Sequence[int] | None = None
    ) -> list[ExecResult]:
        out = []
        for source, expr in pairs:
            self.sources.add(source)
            out.append(ExecResult(ok=True, value=repr(expr), error=None))
        return out


def test_the_corpus_builder_never_takes_a_hand_written_program(monkeypatch) -> None:
    generator = ProgramGenerator(rng=random.Random(3))
    handwritten = load_handwritten()

    def stream(
        seed: int, levels: Sequence[int], *, idiom_share: float = 0.0, composed_share: float = 0.0
    ):
        rng = random.Random(seed)
        # Every hand-written program between generated ones, then generated ones only (the
        # recording runner never runs anything, so any two distinct inputs do).
        for p in handwritten:
            yield GeneratedProgram(p.program, ("int",), 1), ("1", "2")
            yield generator.program(rng.choice(list(levels))), ("1", "2")
        while True:
            yield generator.program(rng.choice(list(levels))), ("1", "2")

    monkeypatch.setattr(corpus_module, "candidates", stream)
    runner = _RecordingRunner()
    entries = build_corpus(2 * len(handwritten), seed=0, executor=runner, levels=(3, 4))
    held_out = handwritten_keys()
    assert len(entries) == 2 * len(handwritten)
    assert not {canonical_key(e.program) for e in entries} & held_out
    # Dropped before they run, not after.
    assert not {canonical_key(s) for s in runner.sources} & held_out
