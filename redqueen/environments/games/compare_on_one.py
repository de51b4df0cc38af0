"""Compare-on-one: the task's strongest dimension decides."""

from __future__ import annotations

import torch

from redqueen.environments.games._base import GAMES
from redqueen.environments.games._numbers import NumbersGame


@GAMES.register("compare_on_one")
class CompareOnOne(NumbersGame):
    """Compare-on-one numbers game: the task's largest dimension decides.

    An answer solves a task when it is higher on the task's largest dimension (de Jong & Pollack, "Ideal evaluation from coevolution", Evol. Comput.
    2004, after Watson & Pollack 2001). Tests that push one dimension can leave students
    over-specialised: progress on the others is never asked for.
    """

    def dimension(self, answers: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        return tasks.argmax(dim=-1)
