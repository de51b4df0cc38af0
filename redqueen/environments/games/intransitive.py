"""The intransitive numbers game: the closest dimension decides."""

from __future__ import annotations

import torch

from redqueen.environments.games._base import GAMES
from redqueen.environments.games._numbers import NumbersGame


@GAMES.register("intransitive")
class Intransitive(NumbersGame):
    """Intransitive numbers game (Watson & Pollack 2001): the closest dimension decides.

    An answer solves a task when it is higher on the dimension where the two are closest. Superiority is intransitive (A beats B,
    B beats C, C beats A), so a population can chase its own tail: it keeps beating today's
    opponents while objective progress (the mean coordinate) stalls or cycles.
    """

    def dimension(self, answers: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        return (answers - tasks).abs().argmin(dim=-1)
