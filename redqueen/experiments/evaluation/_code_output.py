"""Held-out code-output prediction: the environment's own ``code_o`` task as a fixed benchmark."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from redqueen.experiments.evaluation._suite import SUITES, Problem

if TYPE_CHECKING:
    from redqueen.verifiers import ProgramRunner


@lru_cache(maxsize=1)
def frozen_problems() -> tuple[dict[str, Any], ...]:
    """The frozen held-out problems (program, input, gold output, level), in order."""
    from redqueen.experiments.evaluation import _code_output_problems as frozen

    return tuple(json.loads(line) for line in frozen.PROBLEMS_JSONL.splitlines() if line.strip())


@SUITES.register("code_output")
class CodeOutputSuite:
    """Predict ``f(input)`` for held-out procedural programs, judged like the ``code_o`` reward.

    The problems are a frozen set built by :mod:`._held_out` from the corpus generator at a
    seed of its own, with every program the pretraining corpus contained (or, for the shipped
    set, could have contained) removed; gold outputs come from the sandbox. Prompts are
    :func:`redqueen.verifiers.formats.solve_prompt`; answers are parsed with ``parse_solution``
    and judged with ``check_answers`` (values compared as literals). The shipped ``tiny-coder``
    scores above zero here, unlike on HumanEval, so this is the suite that can show an evolved
    population moving on a laptop.

    Args:
        levels: Keep only problems of these generator difficulty levels (default: all).
        max_new_tokens: Generation budget per answer.
        timeout: Seconds the sandbox allows one check.
    """

    name = "code_output"
    preload: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        levels: Sequence[int] | None = None,
        max_new_tokens: Annotated[int, Field(ge=1)] = 64,
        timeout: Annotated[float, Field(gt=0)] = 2.0,
    ) -> None:
        from redqueen.verifiers.formats import SOLVE_STOP

        self.levels = None if levels is None else frozenset(int(level) for level in levels)
        self.max_new_tokens = max_new_tokens
        self.timeout = timeout
        self.stop: tuple[str, ...] = (SOLVE_STOP,)

    def problems(self, limit: int | None = None) -> list[Problem]:
        """The first ``limit`` held-out problems (of the chosen levels), in frozen order."""
        from redqueen.verifiers import make_task
        from redqueen.verifiers.formats import solve_prompt

        problems: list[Problem] = []
        for index, row in enumerate(frozen_problems()):
            if self.levels is not None and row["level"] not in self.levels:
                continue
            if limit is not None and len(problems) >= limit:
                break
            task = make_task("code_o", row["program"], (row["input"],), (row["output"],))
            problems.append(Problem(id=f"code_output/{index}", prompt=solve_prompt(task), data=row))
        return problems

    def completion(self, problem: Problem, generated: str) -> str:
        """The generated text up to the closing ``</answer>`` tag."""
        return generated.split(self.stop[0], 1)[0]

    def check(
        self, problems: Sequence[Problem], completions: Sequence[str], executor: ProgramRunner
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
