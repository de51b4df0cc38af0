"""Surrogate games: co-evolution problems whose true answer is known, in seconds on a CPU.

The same LoRA genomes, operators, ratings, PFSP with a hall of fame and replacement as the
real environment, on games where an objective measure of progress is known even though the
players only see each other, so that the classic failures of co-evolution (disengagement,
collapse, cycling, focusing) can be reproduced and a selection scheme can be judged by them.

- :data:`GAMES` and :class:`Game`: the registry of games and their protocol. Registered:
  ``compare_on_one``, ``intransitive``, ``focusing`` (the numbers games of Watson & Pollack,
  2001), ``ladder`` (tasks of a latent difficulty, shaped like the code game) and
  ``ladder_learnability`` (the ladder with teachers paid for the student's learning signal).
- :class:`GamesEnv` (environment ``"games"``): plays one game, with ``game: NAME`` and the
  game's settings in ``environment.options`` (:class:`GamesOptions`).
- :mod:`~redqueen.environments.games.detectors`: pure detectors of each pathology.
"""

from __future__ import annotations

from redqueen.environments.games import detectors
from redqueen.environments.games._base import GAMES, Game
from redqueen.environments.games._numbers import NumbersGame
from redqueen.environments.games._options import GamesOptions
from redqueen.environments.games.compare_on_one import CompareOnOne
from redqueen.environments.games.environment import GamesEnv
from redqueen.environments.games.focusing import Focusing
from redqueen.environments.games.intransitive import Intransitive
from redqueen.environments.games.ladder import Ladder
from redqueen.environments.games.ladder_learnability import LearnabilityLadder

__all__ = [
    "GAMES",
    "GamesOptions",
    "CompareOnOne",
    "Focusing",
    "Game",
    "GamesEnv",
    "Intransitive",
    "Ladder",
    "LearnabilityLadder",
    "NumbersGame",
    "detectors",
]
