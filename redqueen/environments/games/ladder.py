"""The difficulty ladder: tasks of a latent difficulty, solved with probability sigmoid(skill - difficulty)."""

from __future__ import annotations

import torch

from redqueen.environments.games._base import GAMES, Game


@GAMES.register("ladder")
class Ladder(Game):
    """Difficulty ladder, shaped like the code game: solved with probability sigmoid(skill - difficulty).

    A teacher's task is one number, its latent difficulty ``d``; a student's answer is one number ``a`` (its skill plus sampling
    noise) and is correct with probability ``sigmoid(a - d)``, so skill minus difficulty sets
    the solve rate. With PopuLoRA's teacher reward (``coupling`` 0) teachers pay for tasks at
    the edge of the students' skill and both climb (an arms race); a self-play-like reward
    (``coupling`` near 1) pays teachers for tasks the student solves, difficulty falls and
    solve rates reach 1, where the student gets no signal (a collapse).

    Args:
        coupling: See :class:`redqueen.environments.games.Game`.
    """

    dim = 1

    def success(
        self, answers: torch.Tensor, tasks: torch.Tensor, gen: torch.Generator
    ) -> torch.Tensor:
        p = torch.sigmoid(answers[..., 0] - tasks[..., 0])  # (n, t)
        return torch.rand(p.shape, generator=gen) < p

    def score(self, student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(student[:, 0].unsqueeze(0) - teacher[:, 0].unsqueeze(1))  # (t, s)
