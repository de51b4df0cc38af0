"""The focusing numbers game: the most different dimension decides."""

from __future__ import annotations

import torch

from redqueen.environments.games._base import GAMES
from redqueen.environments.games._numbers import NumbersGame


@GAMES.register("focusing")
class Focusing(NumbersGame):
    """Focusing numbers game (Watson & Pollack 2001): the most different dimension decides.

    An answer solves a task when it is higher on the dimension where the two differ most. Winning pays for pushing one dimension far,
    so players focus on one dimension and neglect the others (the focusing detector's case).
    """

    def dimension(self, answers: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        return (answers - tasks).abs().argmax(dim=-1)
