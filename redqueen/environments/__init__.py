"""Environments: where populations of LoRA adapters meet, play, learn and evolve.

- :class:`Environment`, :class:`StepRecord`, :data:`ENVIRONMENTS`: the protocol the runner drives
  and the registry of environments by name.
- :class:`CoevolutionEnv` (``"coevolution"``): PopuLoRA's teachers vs students on code tasks.
- :class:`SelfPlayEnv` (``"selfplay"``): the Absolute Zero single-agent self-play baseline.
- :class:`SurrogateEnv` (``"surrogate"``): no LLM; LoRA genomes on a small torch model, for
  studying selection schemes in seconds.
- :class:`GamesEnv` (``"games"``) and :data:`GAMES`: surrogate games whose objective answer
  is known (numbers games, difficulty ladder), with pathology detectors.
- :class:`GameSettings`: per-step budgets of both code environments.
- :class:`TaskBuffer`, :func:`task_signature`, :func:`complexity_score`: reference tasks,
  task identity (coverage) and complexity.
"""

from __future__ import annotations

from redqueen.environments._codegame import GameSettings
from redqueen.environments.base import ENVIRONMENTS, Environment, StepRecord
from redqueen.environments.coevolution import CoevolutionEnv
from redqueen.environments.games import GAMES, GamesEnv
from redqueen.environments.selfplay import SelfPlayEnv
from redqueen.environments.surrogate import SurrogateEnv
from redqueen.environments.task_buffer import TaskBuffer, complexity_score, task_signature

__all__ = [
    "ENVIRONMENTS",
    "GAMES",
    "CoevolutionEnv",
    "Environment",
    "GameSettings",
    "GamesEnv",
    "SelfPlayEnv",
    "StepRecord",
    "SurrogateEnv",
    "TaskBuffer",
    "complexity_score",
    "task_signature",
]
