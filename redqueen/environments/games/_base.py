"""The game protocol of the surrogate games and their registry."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import Annotated, Any

import torch
from pydantic import Field

from redqueen._registry import Registry
from redqueen.genomes import check_seed, generator_seed


class Game(ABC):
    """The rule of a surrogate game: what a task is, when an answer solves it, what is objective.

    A member's genome maps, through the frozen network, to a point in ``R^dim``: a teacher's is
    the centre of the tasks it proposes, a student's the centre of its answers; both sample
    around it. Subclasses set :attr:`dim` and implement :meth:`success` and :meth:`score`;
    :meth:`skill` and :meth:`difficulty` are the objective measures, known exactly here.

    Args:
        coupling: Moves the teacher's reward from adversarial (0: PopuLoRA's teacher reward)
            to self-play-like (1: the student's mean reward on the task); in between, the mix.

    Raises:
        ValueError: If ``coupling`` is outside [0, 1].
    """

    #: Dimension of the points (tasks and answers).
    dim: int = 1

    def __init__(self, *, coupling: Annotated[float, Field(ge=0, le=1)] = 0.0) -> None:
        if not 0.0 <= float(coupling) <= 1.0:
            raise ValueError(f"coupling: must be in [0, 1], got {coupling}")
        self.coupling = float(coupling)

    @classmethod
    def parameters(cls) -> dict[str, Any]:
        """The game's settings and their defaults (its keyword-only constructor parameters)."""
        params: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            init = klass.__dict__.get("__init__")
            if init is None or klass is object:
                continue
            for p in inspect.signature(init).parameters.values():
                if p.kind is p.KEYWORD_ONLY:
                    params[p.name] = p.default
        return params

    def settings(self) -> dict[str, Any]:
        """This game's settings by name (what the constructor was given)."""
        return {name: getattr(self, name) for name in self.parameters()}

    @abstractmethod
    def success(
        self, answers: torch.Tensor, tasks: torch.Tensor, gen: torch.Generator
    ) -> torch.Tensor:
        """Whether each answer solves its task: ``answers (n, t, dim)``, ``tasks (t, dim)`` ->
        ``(n, t)`` bool; ``gen`` draws any chance in the rule."""

    @abstractmethod
    def score(self, student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
        """Expected score in [0, 1] of students at points ``(s, dim)`` against teachers at points
        ``(t, dim)``, without sampling noise: ``(t, s)`` (rows: teachers, as in a CIAO matrix)."""

    def teacher_pay(self, populora: float, solve_rate: float, student_reward: float) -> float:
        """What a teacher earns for one valid task the student solved at ``solve_rate``.

        The default mixes PopuLoRA's teacher reward ``populora`` with the student's mean reward
        on the task by :attr:`coupling`: ``(1 - coupling) * populora + coupling *
        student_reward``. A game overrides it to pay teachers another way.
        """
        return (1.0 - self.coupling) * populora + self.coupling * student_reward

    def played_score(
        self,
        student: torch.Tensor,
        teacher: torch.Tensor,
        *,
        noise: float,
        draws: int = 256,
        seed: int = 0,
    ) -> torch.Tensor:
        """Expected score of the game *as played*: students answer around their points and
        teachers pose tasks around theirs, both with Gaussian noise of std ``noise``.

        The members learn and are rated on this game, not on :meth:`score`: when the points
        sit closer together than the noise, the played game is a smoothed version of the rule
        and can be transitive where the rule is not. Estimated with ``draws`` common random
        draws (the same noise for every pair, so the estimate is deterministic given ``seed``
        and differences between pairs are not noise); with ``noise`` 0 it is :meth:`score`.

        Args:
            student: Student points, ``(s, dim)``.
            teacher: Teacher points, ``(t, dim)``.
            noise: Std of the play noise (the environment's ``exploration``).
            draws: Monte Carlo draws per pair.
            seed: Seeds the draws (and any chance in the rule); any integer.

        Returns:
            ``(t, s)`` expected scores in [0, 1] (rows: teachers, as in a CIAO matrix).
        """
        if noise <= 0:
            return self.score(student, teacher)
        gen = torch.Generator().manual_seed(generator_seed(check_seed(seed, "Game.played_score")))
        s, t, dim = student.shape[0], teacher.shape[0], student.shape[1]
        e_task = torch.randn(draws, dim, generator=gen)
        e_answer = torch.randn(draws, dim, generator=gen)
        tasks = (teacher[:, None, :] + noise * e_task[None]).reshape(t * draws, dim)
        answers = (student[:, None, :] + noise * e_answer[None]).repeat(1, t, 1)  # (s, t*d, dim)
        hit = self.success(answers, tasks, gen).float().reshape(s, t, draws)
        return hit.mean(-1).T  # (t, s)

    def skill(self, points: torch.Tensor) -> float:
        """Objective skill of students at ``points (m, dim)``: the mean coordinate (Watson & Pollack's
        external metric, the sum of the dimensions, divided by ``dim``)."""
        return float(points.mean())

    def difficulty(self, points: torch.Tensor) -> float:
        """Objective difficulty of tasks at ``points (m, dim)``, on the same scale as :meth:`skill`."""
        return float(points.mean())


#: Surrogate games by name (``compare_on_one``, ``intransitive``, ``focusing``, ``ladder``).
GAMES: Registry[type[Game]] = Registry("game", callables=True)
