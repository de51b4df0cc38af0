"""Environments: where populations of LoRA adapters meet, play, learn and evolve.

- :class:`Environment`, :class:`StepRecord`, :data:`ENVIRONMENTS`: the protocol the runner drives
  and the registry of environments by name.
- :class:`CoevolutionEnv` (``"coevolution"``): PopuLoRA's teachers vs students on a task domain.
- :class:`SelfPlayEnv` (``"selfplay"``): the Absolute Zero single-agent self-play baseline.
- :class:`SurrogateEnv` (``"surrogate"``): no LLM; LoRA genomes on a small torch model, for
  studying selection schemes in seconds.
- :class:`GamesEnv` (``"games"``) and :data:`GAMES`: surrogate games whose objective answer
  is known (numbers games, difficulty ladder), with pathology detectors.
- :class:`TaskDomain` and :data:`DOMAINS`: what the co-evolution and self-play games are played
  on, as a plug-in (``environment.domain``); :class:`CodeDomain` (``"code"``, the default) with
  :class:`CodeSettings`; :func:`make_domain`; a domain's records :class:`Rejected` and
  :class:`TaskMeasures`, :data:`ANSWER_STATUSES`, :func:`difficulty_bin`; :func:`domain_name`,
  :func:`summary_column` (``domain/<name>/<key>`` in ``metrics.jsonl``), the optional state hook
  :func:`save_domain_state` / :func:`load_domain_state`; :class:`PlayedTask`,
  what happened to one task in a step (what :meth:`TaskDomain.behaviour_cell` reads).
- :class:`GameSettings`: per-step budgets of both task-domain environments.
- :class:`TaskBuffer`, :func:`task_signature`, :func:`complexity_score`: reference examples,
  task identity (coverage) and complexity of programs.
"""

from __future__ import annotations

from redqueen.environments._code_domain import CodeDomain, CodeSettings
from redqueen.environments._domain import (
    ANSWER_STATUSES,
    DOMAINS,
    Rejected,
    TaskDomain,
    TaskMeasures,
    difficulty_bin,
    domain_name,
    load_domain_state,
    make_domain,
    save_domain_state,
    summary_column,
)
from redqueen.environments._round import GameSettings, PlayedTask
from redqueen.environments.base import ENVIRONMENTS, Environment, StepRecord
from redqueen.environments.coevolution import CoevolutionEnv
from redqueen.environments.games import GAMES, GamesEnv
from redqueen.environments.selfplay import SelfPlayEnv
from redqueen.environments.surrogate import SurrogateEnv
from redqueen.environments.task_buffer import TaskBuffer, complexity_score, task_signature

__all__ = [
    "ANSWER_STATUSES",
    "DOMAINS",
    "ENVIRONMENTS",
    "GAMES",
    "CodeDomain",
    "CodeSettings",
    "CoevolutionEnv",
    "Environment",
    "GameSettings",
    "GamesEnv",
    "PlayedTask",
    "Rejected",
    "SelfPlayEnv",
    "StepRecord",
    "SurrogateEnv",
    "TaskBuffer",
    "TaskDomain",
    "TaskMeasures",
    "complexity_score",
    "difficulty_bin",
    "domain_name",
    "load_domain_state",
    "make_domain",
    "save_domain_state",
    "summary_column",
    "task_signature",
]
