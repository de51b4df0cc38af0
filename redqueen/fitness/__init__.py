"""Fitness: rewards, ratings, matchmaking, objectives, behaviour descriptors, novelty, diversity.

- :class:`TeacherReward`, :class:`StudentReward`: the verifiable rewards of PopuLoRA / AZR.
- :class:`RatingSystem`: TrueSkill-style (mu, sigma) ratings with ``lcb = mu - 3 sigma``.
- :class:`PFSPMatchmaker`: prioritised fictitious self-play pairing, weight p(1-p).
- :class:`Objectives`, :data:`OBJECTIVES`: named objectives per role -> DEAP fitness vectors.
- :func:`behaviour_descriptor`, :func:`novelty_scores`, :class:`NoveltyArchive`.
- :func:`genotypic_diversity`, :func:`behavioural_diversity`.
- :func:`hypervolumes`: per-role hypervolume against a reference fixed at first use.
"""

from __future__ import annotations

from redqueen.fitness._hypervolume import hypervolumes
from redqueen.fitness._matchmaking import PFSPMatchmaker
from redqueen.fitness._novelty import (
    NoveltyArchive,
    behaviour_descriptor,
    behavioural_diversity,
    genotypic_diversity,
    novelty_scores,
)
from redqueen.fitness._objectives import OBJECTIVES, Objectives, objective_matrix
from redqueen.fitness._ratings import RatingSystem
from redqueen.fitness._rewards import StudentReward, TeacherReward

__all__ = [
    "OBJECTIVES",
    "NoveltyArchive",
    "Objectives",
    "PFSPMatchmaker",
    "RatingSystem",
    "StudentReward",
    "TeacherReward",
    "behaviour_descriptor",
    "behavioural_diversity",
    "genotypic_diversity",
    "hypervolumes",
    "novelty_scores",
    "objective_matrix",
]
