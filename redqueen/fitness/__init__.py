"""Fitness: rewards, ratings, matchmaking, objectives, behaviour descriptors, novelty, diversity.

- :class:`TeacherReward`, :class:`StudentReward`: the verifiable rewards of PopuLoRA / AZR;
  :func:`match_score`: the one rule for who won a match (invalid tasks: :data:`INVALID_TASK_POLICIES`).
- :class:`RatingSystem`: TrueSkill-style (mu, sigma) ratings; :func:`conservative_rating` is
  ``mu - 3 sigma``, the one formula every ranking and report uses.
- :class:`PFSPMatchmaker`: prioritised fictitious self-play pairing, weight p(1-p).
- :class:`Objectives`, :data:`OBJECTIVES`: named objectives per role -> DEAP fitness vectors.
- :class:`Fitness`: a DEAP fitness whose weights belong to the instance (also :class:`redqueen.evo.Fitness`).
- :func:`behaviour_descriptor`, :func:`novelty_scores`, :class:`NoveltyArchive` (its checkpoint,
  :class:`NoveltyArchiveState`).
- :func:`genotypic_diversity`, :func:`behavioural_diversity`.
- :func:`hypervolumes`: per-role hypervolume against a reference fixed at first use.
"""

from __future__ import annotations

from redqueen.fitness._deap_fitness import Fitness
from redqueen.fitness._hypervolume import hypervolumes
from redqueen.fitness._matchmaking import PFSPMatchmaker
from redqueen.fitness._novelty import (
    NoveltyArchive,
    NoveltyArchiveState,
    behaviour_descriptor,
    behavioural_diversity,
    genotypic_diversity,
    novelty_scores,
)
from redqueen.fitness._objectives import OBJECTIVES, Objectives, objective_matrix
from redqueen.fitness._ratings import CONSERVATIVE_K, RatingSystem, conservative_rating
from redqueen.fitness._rewards import (
    INVALID_TASK_POLICIES,
    StudentReward,
    TeacherReward,
    match_score,
)

__all__ = [
    "CONSERVATIVE_K",
    "INVALID_TASK_POLICIES",
    "Fitness",
    "OBJECTIVES",
    "NoveltyArchive",
    "NoveltyArchiveState",
    "Objectives",
    "PFSPMatchmaker",
    "RatingSystem",
    "StudentReward",
    "TeacherReward",
    "behaviour_descriptor",
    "behavioural_diversity",
    "conservative_rating",
    "genotypic_diversity",
    "hypervolumes",
    "match_score",
    "novelty_scores",
    "objective_matrix",
]
