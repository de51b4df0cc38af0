"""How genomes start (rank, alpha, initialisation), and the sizes of the sub-populations."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from redqueen.settings._base import Settings

__all__ = ["ROLE_SIZES", "GenomeSettings", "PopulationSettings"]

#: The field of :class:`PopulationSettings` that sizes each role.
ROLE_SIZES = {"teacher": "teachers", "student": "students", "solo": "solo"}


class GenomeSettings(Settings):
    """The shape and start of every founder's LoRA genome.

    Attributes:
        rank: LoRA rank of every genome.
        alpha: LoRA alpha of every genome (the update is scaled by ``alpha / rank``).
        init: Initialisation of founders: ``"peft"`` (B = 0, PEFT's own) or ``"gaussian"``.
        init_std: Standard deviation of ``"gaussian"`` founders.
    """

    rank: int = Field(8, ge=1, le=4096)
    alpha: float = Field(16.0, gt=0, le=1e4)
    init: Literal["peft", "gaussian"] = "peft"
    init_std: float = Field(0.02, gt=0, le=10)

    def genome(self) -> GenomeSettings:
        """Just the genome settings (a :class:`PopulationSettings` without its sizes)."""
        return GenomeSettings(rank=self.rank, alpha=self.alpha, init=self.init, init_std=self.init_std)


class PopulationSettings(GenomeSettings):
    """Sizes of the sub-populations and how new genomes start (``population:``).

    ``teachers`` and ``students`` are used by the co-evolution, surrogate and games
    environments, ``solo`` by the self-play baseline (each solo member proposes and solves on
    its own).

    Attributes:
        teachers: Teachers (task proposers) in the population.
        students: Students (task solvers) in the population.
        solo: Members of the self-play baseline, each proposing and solving its own tasks.
    """

    teachers: int = Field(4, ge=0, le=10_000)
    students: int = Field(4, ge=0, le=10_000)
    solo: int = Field(4, ge=0, le=10_000)

    @staticmethod
    def size_field(role: str) -> str:
        """The field that sizes ``role`` (``"teacher"`` -> ``"teachers"``).

        Raises:
            KeyError: If no field sizes ``role``.
        """
        return ROLE_SIZES[role]

    def size_of(self, role: str) -> int:
        """Members of ``role`` (``teacher``, ``student`` or ``solo``).

        Raises:
            KeyError: If no field sizes ``role``.
        """
        return int(getattr(self, ROLE_SIZES[role]))
