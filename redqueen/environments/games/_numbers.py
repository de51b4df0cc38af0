"""What the three numbers games share: points in ``R^dims`` compared on one chosen dimension."""

from __future__ import annotations

from abc import abstractmethod
from typing import Annotated

import torch
from pydantic import Field

from redqueen.environments.games._base import Game


class NumbersGame(Game):
    """A numbers game (Watson & Pollack, "Coevolutionary dynamics in a minimal substrate",
    GECCO 2001): an answer solves a task when it is higher on one dimension, which the subclass
    picks in :meth:`dimension`. The external measure of progress is the mean coordinate.

    Args:
        dims: Dimensions of the points.
        coupling: See :class:`Game`.

    Raises:
        ValueError: If ``dims`` < 2 or ``coupling`` is outside [0, 1].
    """

    def __init__(
        self,
        *,
        dims: Annotated[int, Field(ge=2)] = 2,
        coupling: Annotated[float, Field(ge=0, le=1)] = 0.0,
    ) -> None:
        super().__init__(coupling=coupling)
        if int(dims) < 2:
            raise ValueError(f"dims: a numbers game needs at least 2 dimensions, got {dims}")
        self.dims = self.dim = int(dims)

    @abstractmethod
    def dimension(self, answers: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        """Index of the compared dimension for broadcast ``answers`` and ``tasks`` (``(..., dim)`` -> ``(...)``)."""

    def success(
        self, answers: torch.Tensor, tasks: torch.Tensor, gen: torch.Generator
    ) -> torch.Tensor:
        tasks = tasks.expand_as(answers)  # (n, t, dim)
        on = self.dimension(answers, tasks).unsqueeze(-1)
        return (answers.gather(-1, on) > tasks.gather(-1, on)).squeeze(-1)

    def score(self, student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
        s, t = student.unsqueeze(0), teacher.unsqueeze(1)  # (1, s, dim), (t, 1, dim)
        s, t = torch.broadcast_tensors(s, t)
        on = self.dimension(s, t).unsqueeze(-1)
        a, b = s.gather(-1, on).squeeze(-1), t.gather(-1, on).squeeze(-1)
        return (a > b).float() + 0.5 * (a == b).float()  # (t, s)
