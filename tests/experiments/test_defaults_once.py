"""Every default a configuration section shares with a runtime class is written once, there.

The sections read their defaults from the runtime classes' source (``_defaults``); these tests
import the classes and compare, so a default changed in either place, or read wrongly, fails.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from redqueen.engine import LearnerConfig
from redqueen.environments import CoevolutionEnv, GameSettings, SelfPlayEnv
from redqueen.experiments._defaults import class_defaults
from redqueen.experiments.config import (
    EnvironmentConfig,
    ExecutorConfig,
    LearnerSettings,
    MatchmakingConfig,
    PopulationConfig,
    SamplingConfig,
    StudentRewardConfig,
    TeacherRewardConfig,
)
from redqueen.fitness import PFSPMatchmaker, StudentReward, TeacherReward
from redqueen.verifiers import Executor


def _runtime(cls: type) -> dict[str, object]:
    if dataclasses.is_dataclass(cls):
        return {
            f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
        }
    return {
        p.name: p.default
        for p in inspect.signature(cls).parameters.values()
        if p.default is not inspect.Parameter.empty
    }


PAIRS = [
    (LearnerSettings(), LearnerConfig, None),
    (SamplingConfig(), GameSettings, None),
    (ExecutorConfig(), Executor, None),
    (StudentRewardConfig(), StudentReward, None),
    (TeacherRewardConfig(), TeacherReward, None),
    (MatchmakingConfig(), PFSPMatchmaker, None),
    (PopulationConfig(), CoevolutionEnv, {"solo"}),
    (EnvironmentConfig(), GameSettings, {"task_types"}),
]


@pytest.mark.parametrize("section, runtime, skip", PAIRS, ids=lambda x: getattr(x, "__name__", ""))
def test_section_defaults_are_the_runtime_defaults(section, runtime, skip):
    defaults = _runtime(runtime)
    shared = [name for name in type(section).model_fields if name in defaults and name not in (skip or ())]
    assert shared, f"{type(section).__name__} shares no setting with {runtime.__name__}"
    for name in shared:
        assert getattr(section, name) == defaults[name], f"{type(section).__name__}.{name}"


def test_solo_size_is_the_selfplay_default():
    assert PopulationConfig().solo == _runtime(SelfPlayEnv)["solo"]


def test_the_source_reader_finds_dataclass_fields_and_init_keywords():
    assert class_defaults("engine/_learner.py:LearnerConfig")["betas"] == (0.9, 0.999)
    assert class_defaults("verifiers/_executor.py:Executor")["workers"] is None
    with pytest.raises(LookupError, match="no such class"):
        class_defaults("engine/_learner.py:NoSuchClass")
