"""A surrogate-game plug-in: an answer solves a task when it clears it by a margin."""

from __future__ import annotations

from typing import Annotated

import torch
from pydantic import Field

from redqueen.environments.games import GAMES, Game


@GAMES.register("threshold")
class Threshold(Game):
    """Solved when the answer exceeds the task by ``margin``; a one-dimensional arms race."""

    dim = 1

    def __init__(
        self,
        *,
        margin: Annotated[float, Field(ge=0)] = 0.5,
        coupling: Annotated[float, Field(ge=0, le=1)] = 0.0,
    ) -> None:
        super().__init__(coupling=coupling)
        self.margin = float(margin)  # stored under its own name: checkpoints read it back

    def success(
        self, answers: torch.Tensor, tasks: torch.Tensor, gen: torch.Generator
    ) -> torch.Tensor:
        """(n, t, 1) answers, (t, 1) tasks -> (n, t) bool; the rule has no chance in it."""
        return answers[..., 0] > tasks[..., 0] + self.margin

    def score(self, student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
        """(s, 1) students, (t, 1) teachers -> (t, s) expected scores, no sampling noise."""
        return (student[:, 0][None, :] > teacher[:, 0][:, None] + self.margin).float()
