"""Settings objects: each group of settings declared once, with its defaults and ranges.

Every class here is a frozen pydantic model that imports neither torch nor transformers. A
configuration section *is* one of these objects (``model:`` is :class:`EngineSettings`,
``learner:`` is :class:`LearnerSettings`, ...), and the runtime class it configures takes that
object whole, so a default is written in one place and a new option costs one field and its use.

- :class:`Settings`: the base (unknown keys are errors, values frozen and finite).
- :class:`EngineSettings` (``model:``) and :class:`ClusterSettings` (``engine:``): the base model,
  its backend, device, dtype, LoRA target modules and CPU threads; Ray workers.
- :class:`GenomeSettings` and :class:`PopulationSettings` (``population:``): rank, alpha and
  initialisation of founders; sizes of the roles.
- :class:`MatchSettings`, :class:`GameSettings` (``environment:``), :class:`SamplingSettings`
  (``sampling:``), :class:`TeacherRewardSettings`, :class:`StudentRewardSettings` and
  :class:`ExecutorSettings`: one round of a game.
- :class:`LearnerSettings` (``learner:``): the REINFORCE++ update.
- :class:`ReplacementConfig` (``evolution:``), :class:`MatchmakingSettings` (``matchmaking:``),
  :class:`ObjectiveSettings` (``objectives:``): the evolution core.
- :class:`LoggingSettings` (``logging:``): sinks and checkpoints kept.
"""

from __future__ import annotations

from redqueen.settings._base import Settings, non_finite
from redqueen.settings._engine import DEFAULT_MODEL, ClusterSettings, EngineSettings
from redqueen.settings._evolution import (
    NEWBORN_RULES,
    MatchmakingSettings,
    ObjectiveSettings,
    ReplacementConfig,
)
from redqueen.settings._game import (
    ExecutorSettings,
    GameSettings,
    MatchSettings,
    SamplingSettings,
    StudentRewardSettings,
    TeacherRewardSettings,
)
from redqueen.settings._genome import GenomeSettings, PopulationSettings
from redqueen.settings._learner import LearnerSettings
from redqueen.settings._run import LoggingSettings

__all__ = [
    "DEFAULT_MODEL",
    "NEWBORN_RULES",
    "ClusterSettings",
    "EngineSettings",
    "ExecutorSettings",
    "GameSettings",
    "GenomeSettings",
    "LearnerSettings",
    "LoggingSettings",
    "MatchSettings",
    "MatchmakingSettings",
    "ObjectiveSettings",
    "PopulationSettings",
    "ReplacementConfig",
    "SamplingSettings",
    "Settings",
    "StudentRewardSettings",
    "TeacherRewardSettings",
    "non_finite",
]
