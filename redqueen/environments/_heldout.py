"""An objective measure of progress for the task-domain games: a fixed held-out task set.

Ratings only compare members with each other, and a step's own tasks move with the teachers.
Every ``environment.heldout_every`` steps the living solvers answer the domain's held-out tasks
(:class:`~redqueen.environments.HeldOutDomain`: never proposed, never trained on) greedily, and
so does the frozen base model; the run logs the solvers' mean solve rate
(``heldout_solve_rate``), the base model's (``base_heldout_solve_rate``) and their difference
(``heldout_lift``), the headline of a code run.

Greedy decoding draws nothing from any random generator, so the measure leaves the run's
results unchanged. The base model is measured in a call of its own (the same rows every time),
once per process: a resumed run gets the same figure as an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redqueen.engine import HostProtocol, SamplingParams
from redqueen.environments._domain import HeldOutDomain, TaskDomain
from redqueen.settings import GameSettings
from redqueen.verifiers import ProgramRunner

__all__ = ["HeldOutProbe"]


class HeldOutProbe:
    """Solvers and the frozen base model on a domain's held-out tasks, greedy.

    Args:
        domain: The game's domain; one without a held-out set is never probed.
        settings: ``heldout_every`` (0: never) and ``heldout_tasks``, and the answers' token
            budget.
    """

    def __init__(self, domain: TaskDomain[Any, Any, Any], settings: GameSettings) -> None:
        self.domain = domain
        self.every = settings.heldout_every
        self.max_new_tokens = settings.solve_max_new_tokens
        self.tasks: Sequence[tuple[str, Any]] = ()
        if self.every > 0 and isinstance(domain, HeldOutDomain):
            self.tasks = domain.heldout_tasks(settings.heldout_tasks)
        self._base: float | None = None

    def due(self, step: int) -> bool:
        """Whether the probe runs after ``step`` (0-based)."""
        return bool(self.tasks) and (step + 1) % self.every == 0

    def measure(
        self, host: HostProtocol, sandbox: ProgramRunner, solvers: Sequence[str]
    ) -> dict[str, float]:
        """``heldout_solve_rate`` (the mean over ``solvers``), ``base_heldout_solve_rate`` and
        ``heldout_lift``."""
        if self._base is None:
            (self._base,) = self._rates(host, sandbox, [None])
        rates = self._rates(host, sandbox, list(solvers)) if solvers else []
        mean = sum(rates) / len(rates) if rates else float("nan")
        return {
            "heldout_solve_rate": mean,
            "base_heldout_solve_rate": self._base,
            "heldout_lift": mean - self._base,
        }

    def _rates(
        self, host: HostProtocol, sandbox: ProgramRunner, adapters: list[str | None]
    ) -> list[float]:
        """Each adapter's share of the held-out tasks answered correctly, one greedy call."""
        domain, tasks = self.domain, list(self.tasks)
        params = SamplingParams(
            max_new_tokens=self.max_new_tokens,
            temperature=0.0,
            stop=tuple(domain.solve_stop),
            seed=0,
        )
        prompts = [domain.solve_prompt(task) for _, task in tasks]
        rows = [adapter for adapter in adapters for _ in tasks]
        gens = host.generate(prompts * len(adapters), rows, params)
        rates = []
        for index in range(len(adapters)):
            answers = gens[index * len(tasks) : (index + 1) * len(tasks)]
            parsed = [
                (task, domain.parse_answer(task_type, gen.text or ""))
                for (task_type, task), gen in zip(tasks, answers, strict=True)
            ]
            checkable = [(task, answer) for task, answer in parsed if answer is not None]
            statuses = domain.check(checkable, sandbox) if checkable else []
            rates.append(sum(status == "correct" for status in statuses) / len(tasks))
        return rates
