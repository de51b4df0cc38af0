"""An evaluation-suite plug-in: one-line Python functions to complete, checked in the sandbox."""

from __future__ import annotations

from collections.abc import Sequence

from redqueen.experiments.evaluation import SUITES, Problem, truncate_at_stops
from redqueen.verifiers import Executor

CASES = (
    ("def double(x):\n    return ", "double(21) == 42"),
    ("def last(items):\n    return ", "last([3, 1, 4]) == 4"),
    ("def shout(text):\n    return ", "shout('hi') == 'HI'"),
)


@SUITES.register("tiny_functions")
class TinyFunctions:
    """Complete the body of a one-line function; pass when one call gives the expected value."""

    name = "tiny_functions"
    stop = ("\n",)
    max_new_tokens = 24
    timeout = 2.0
    preload: tuple[str, ...] = ()

    def problems(self, limit: int | None = None) -> list[Problem]:
        """The first ``limit`` problems, in a fixed order."""
        rows = CASES[:limit] if limit is not None else CASES
        return [
            Problem(id=f"tiny/{i}", prompt=p, data={"test": t}) for i, (p, t) in enumerate(rows)
        ]

    def completion(self, problem: Problem, generated: str) -> str:
        """The generated text up to the end of its first line."""
        return truncate_at_stops(generated, self.stop)

    def check(
        self, problems: Sequence[Problem], completions: Sequence[str], executor: Executor
    ) -> list[bool]:
        """Run each completed function and its test in the sandbox, never in this process."""
        pairs = [(p.prompt + c, p.data["test"]) for p, c in zip(problems, completions, strict=True)]
        return [r.ok and r.value == "True" for r in executor.execute_many(pairs)]
