"""The benchmark-suite protocol and its registry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from redqueen._registry import Registry

if TYPE_CHECKING:
    from redqueen.verifiers import Executor


@dataclass(frozen=True)
class Problem:
    """One benchmark problem.

    Args:
        id: Stable identifier, e.g. ``"HumanEval/0"``; rows of a report are keyed by it.
        prompt: The text the model continues.
        data: Whatever the suite's checker needs (tests, entry point, gold output, ...).
    """

    id: str
    prompt: str
    data: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class BenchmarkSuite(Protocol):
    """What a benchmark gives the evaluator: problems, a prompt format and a checker.

    A suite never runs model output in the evaluating process: :meth:`check` hands programs to
    the sandboxed :class:`redqueen.verifiers.Executor`, so a benchmark is as safe as training.

    Attributes:
        name: Registry name, also used in report file names (``eval_<name>.json``).
        stop: Stop sequences for generation.
        max_new_tokens: Generation budget per problem.
        timeout: Seconds the sandbox allows one check.
        preload: Standard-library modules the sandbox must offer the checked programs
            (see :class:`redqueen.verifiers.Executor`).
    """

    name: str
    stop: tuple[str, ...]
    max_new_tokens: int
    timeout: float
    preload: tuple[str, ...]

    def problems(self, limit: int | None = None) -> list[Problem]:
        """The first ``limit`` problems (all when ``None``), in a fixed order."""
        ...

    def completion(self, problem: Problem, generated: str) -> str:
        """The part of a generated text that the checker judges (e.g. cut at stop sequences)."""
        ...

    def check(
        self, problems: Sequence[Problem], completions: Sequence[str], executor: Executor
    ) -> list[bool]:
        """Whether each completion solves its problem, checked in ``executor``."""
        ...


#: Benchmark suites by name; ``@SUITES.register("name")`` on a class whose instances are suites.
SUITES: Registry[type] = Registry("benchmark", callables=True)


def make_suite(suite: str | BenchmarkSuite) -> BenchmarkSuite:
    """A suite instance from a registered name (or the instance itself).

    Raises:
        redqueen._registry.UnknownNameError: If the name is not registered; lists known names.
    """
    if isinstance(suite, str):
        return SUITES[suite]()
    return suite


def truncate_at_stops(text: str, stops: Sequence[str]) -> str:
    """``text`` up to the earliest occurrence of any stop sequence (the usual HumanEval rule)."""
    cut = len(text)
    for stop in stops:
        index = text.find(stop)
        if index != -1:
            cut = min(cut, index)
    return text[:cut]
