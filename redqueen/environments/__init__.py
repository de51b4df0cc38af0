"""Environments: where populations of LoRA adapters meet, play, learn and evolve.

- :class:`Environment`, :class:`StepRecord`, :data:`ENVIRONMENTS`: the base the runner drives
  and the registry of environments by name; :func:`environment` looks one up, importing only
  its own module.
- :class:`CoevolutionEnv` (``"coevolution"``): PopuLoRA's teachers vs students on a task domain.
- :class:`SelfPlayEnv` (``"selfplay"``): the Absolute Zero single-agent self-play baseline.
- :class:`SurrogateEnv` (``"surrogate"``) and its :class:`SurrogateOptions`: no LLM; LoRA
  genomes on a small torch model, for studying selection schemes in seconds.
- :class:`GamesEnv` (``"games"``) and :data:`GAMES`: surrogate games whose objective answer
  is known (numbers games, difficulty ladder), with pathology detectors.
- :class:`TaskDomain` and :data:`DOMAINS`: what the co-evolution and self-play games are played
  on, as a plug-in (``environment.domain``); :class:`CodeDomain` (``"code"``, the default) with
  :class:`CodeSettings`; :func:`make_domain`; a domain's records :class:`Rejected` and
  :class:`TaskMeasures`, :data:`ANSWER_STATUSES`, :func:`difficulty_bin`; :func:`domain_name`,
  :func:`summary_column` (``domain/<name>/<key>`` in ``metrics.jsonl``), the optional state hook
  :func:`save_domain_state` / :func:`load_domain_state`; :class:`HeldOutDomain`, a domain with a
  fixed held-out task set (``environment.heldout_every``); :class:`PlayedTask`,
  what happened to one task in a step (what :meth:`TaskDomain.behaviour_cell` reads).
- :class:`GameSettings`: per-step budgets of both task-domain environments.
- :class:`TaskBuffer`, :func:`task_signature`, :func:`complexity_score`: reference examples,
  task identity (coverage) and complexity of programs.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Where each public name lives. Nothing is imported until a name is used, so that the
#: surrogate environment and the games (torch only) never load the language-model stack
#: (``transformers``) that the co-evolution and self-play environments need.
_EXPORTS = {
    "CodeDomain": "_code_domain",
    "CodeSettings": "_code_domain",
    "ANSWER_STATUSES": "_domain",
    "DOMAINS": "_domain",
    "HeldOutDomain": "_domain",
    "Rejected": "_domain",
    "TaskDomain": "_domain",
    "TaskMeasures": "_domain",
    "difficulty_bin": "_domain",
    "domain_name": "_domain",
    "load_domain_state": "_domain",
    "make_domain": "_domain",
    "save_domain_state": "_domain",
    "summary_column": "_domain",
    "GameSettings": "_round",
    "PlayedTask": "_round",
    "ENVIRONMENTS": "base",
    "Environment": "base",
    "StepRecord": "base",
    "CoevolutionEnv": "coevolution",
    "GAMES": "games",
    "GamesEnv": "games",
    "SelfPlayEnv": "selfplay",
    "SurrogateEnv": "surrogate",
    "SurrogateOptions": "surrogate",
    "GamesOptions": "games",
    "TaskBuffer": "task_buffer",
    "complexity_score": "task_buffer",
    "task_signature": "task_buffer",
}

#: The module whose import registers each built-in environment in :data:`ENVIRONMENTS`.
BUILT_IN_ENVIRONMENTS = {
    "coevolution": "redqueen.environments.coevolution",
    "selfplay": "redqueen.environments.selfplay",
    "surrogate": "redqueen.environments.surrogate",
    "games": "redqueen.environments.games",
}
#: Modules whose import registers the built-in environments in :data:`ENVIRONMENTS`.
ENVIRONMENT_MODULES = tuple(BUILT_IN_ENVIRONMENTS.values())


def environment(name: str) -> type[Any]:
    """The environment class registered as ``name``, importing only its own module when it is a
    built-in (so that the surrogate and the games never load the language-model stack).

    Raises:
        UnknownNameError: If no environment has that name (every built-in is imported first,
            so the message lists them all).
    """
    from redqueen._registry import UnknownNameError
    from redqueen.environments.base import ENVIRONMENTS as registry

    module = BUILT_IN_ENVIRONMENTS.get(name)
    if module is not None:
        importlib.import_module(module)
    try:
        return registry[name]
    except UnknownNameError:
        for module in ENVIRONMENT_MODULES:
            importlib.import_module(module)
        return registry[name]

#: Names whose registry is only complete once every built-in entry has been imported.
_BUILT_IN_DOMAINS = ("redqueen.environments._code_domain",)
_REGISTRY_MODULES = {"ENVIRONMENTS": ENVIRONMENT_MODULES, "DOMAINS": _BUILT_IN_DOMAINS, "make_domain": _BUILT_IN_DOMAINS}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'redqueen.environments' has no attribute {name!r}")
    for registering in _REGISTRY_MODULES.get(name, ()):
        importlib.import_module(registering)
    value = getattr(importlib.import_module(f"redqueen.environments.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "ANSWER_STATUSES",
    "BUILT_IN_ENVIRONMENTS",
    "DOMAINS",
    "ENVIRONMENTS",
    "GAMES",
    "CodeDomain",
    "CodeSettings",
    "CoevolutionEnv",
    "Environment",
    "GameSettings",
    "GamesEnv",
    "HeldOutDomain",
    "PlayedTask",
    "Rejected",
    "SelfPlayEnv",
    "StepRecord",
    "SurrogateEnv",
    "SurrogateOptions",
    "GamesOptions",
    "TaskBuffer",
    "TaskDomain",
    "TaskMeasures",
    "complexity_score",
    "difficulty_bin",
    "domain_name",
    "environment",
    "load_domain_state",
    "make_domain",
    "save_domain_state",
    "summary_column",
    "task_signature",
]
