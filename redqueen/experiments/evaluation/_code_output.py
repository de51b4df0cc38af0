"""Held-out code-output prediction: the environment's own ``code_o`` task as a fixed benchmark."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redqueen.experiments.evaluation._suite import SUITES, Problem

#: Corpus seed of the held-out problems. tiny-coder's pretraining corpus is built from seed 0
#: (``pretrain --seed``); this seed's generator stream is disjoint from it, and programs that
#: the pretraining corpus also holds are dropped when that corpus file is available.
HELD_OUT_SEED = 1_000_003

_CACHE: dict[tuple[int, int, tuple[int, ...]], list[Problem]] = {}


@SUITES.register("code_output")
class CodeOutputSuite:
    """Predict ``f(input)`` for held-out procedural programs, judged like the ``code_o`` reward.

    Problems come from tiny-coder's corpus generator
    (:func:`redqueen.engine.tinycoder.corpus.build_corpus`) at :data:`HELD_OUT_SEED`, so their
    gold outputs are computed in the sandbox and the programs never appeared in pretraining.
    Prompts are :func:`redqueen.verifiers.formats.solve_prompt`; answers are parsed with
    ``parse_solution`` and judged with ``check_answers`` (values compared as literals). The
    shipped ``tiny-coder`` scores above zero here, unlike on HumanEval, so it is the suite that
    can show an evolved population moving on a laptop.

    Args:
        n_problems: Problems in the full suite.
        seed: Corpus seed (keep it away from the pretraining seed).
        levels: Generator difficulty levels to draw from.
        max_new_tokens: Generation budget per answer.
        timeout: Seconds the sandbox allows one check.
        exclude: Program sources to leave out (e.g. a pretraining corpus).

    Raises:
        ValueError: If ``n_problems`` is below 1.
    """

    name = "code_output"

    def __init__(
        self,
        *,
        n_problems: int = 128,
        seed: int = HELD_OUT_SEED,
        levels: Sequence[int] | None = None,
        max_new_tokens: int = 64,
        timeout: float = 2.0,
        exclude: frozenset[str] = frozenset(),
    ) -> None:
        from redqueen.engine.tinycoder.programs import MAX_LEVEL
        from redqueen.verifiers.formats import SOLVE_STOP

        if n_problems < 1:
            raise ValueError(f"code_output: n_problems must be >= 1, got {n_problems}")
        self.n_problems = int(n_problems)
        self.seed = int(seed)
        self.levels = tuple(levels) if levels is not None else tuple(range(1, MAX_LEVEL + 1))
        self.max_new_tokens = max_new_tokens
        self.timeout = timeout
        self.exclude = frozenset(exclude)
        self.stop: tuple[str, ...] = (SOLVE_STOP,)

    def problems(self, limit: int | None = None) -> list[Problem]:
        """The first ``limit`` held-out problems (built once per seed and size, then cached).

        Building runs each candidate program in a short-lived two-worker sandbox; the corpus
        generator accepts candidates in order, so the first ``k`` problems do not depend on
        ``limit``.
        """
        n = self.n_problems if limit is None else min(limit, self.n_problems)
        key = (self.seed, n, self.levels)
        if key not in _CACHE:
            _CACHE[key] = self._build(n)
        problems = _CACHE[key]
        return (
            [p for p in problems if p.data["program"] not in self.exclude]
            if self.exclude
            else list(problems)
        )

    def _build(self, n: int) -> list[Problem]:
        from redqueen.engine.tinycoder.corpus import build_corpus, entry_task
        from redqueen.verifiers import Executor
        from redqueen.verifiers.formats import solve_prompt

        with Executor(workers=2, timeout=self.timeout) as executor:
            entries = build_corpus(n, seed=self.seed, executors=[executor], levels=self.levels)
        problems = []
        for index, entry in enumerate(entries):
            task = entry_task(entry, "code_o", 0)
            problems.append(
                Problem(
                    id=f"code_output/{index}",
                    prompt=solve_prompt(task),
                    data={
                        "program": task.program,
                        "input": task.inputs[0],
                        "output": task.outputs[0],
                        "level": entry.level,
                    },
                )
            )
        return problems

    def completion(self, problem: Problem, generated: str) -> str:
        """The generated text up to the closing ``</answer>`` tag."""
        return generated.split(self.stop[0], 1)[0]

    def check(
        self, problems: Sequence[Problem], completions: Sequence[str], executor: Any
    ) -> list[bool]:
        """Parse each answer as an output literal and compare it with the sandbox's gold output."""
        from redqueen.verifiers import AnswerStatus, check_answers, make_task
        from redqueen.verifiers.formats import parse_solution

        if len(problems) != len(completions):
            raise ValueError(
                f"code_output: {len(problems)} problems but {len(completions)} completions"
            )
        items = [
            (
                make_task("code_o", p.data["program"], (p.data["input"],), (p.data["output"],)),
                parse_solution("code_o", text),
            )
            for p, text in zip(problems, completions, strict=True)
        ]
        return [status == AnswerStatus.CORRECT for status in check_answers(items, executor)]
