"""How a configuration reaches an environment: one table of standard settings, one builder registry.

:data:`STANDARD_SETTINGS` is the one table of the standard constructor keywords (``teachers``,
``rank``, ``replacement``, ``seed``, ...): for each, the configuration keys it reads and how its
value is made from the typed configuration. A plug-in environment gets the ones its constructor
declares (the documented plug-in contract), the rest from ``environment.options``; what it reads
is derived from the same table, so the two can never disagree.

:data:`BUILDERS` holds the built-in environments' builders, registered with
:func:`builder` together with the keys each reads (``redqueen.experiments.build``). A plug-in
with needs of its own defines ``from_config(cfg)`` and ``config_sections`` instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redqueen.experiments.config import ConfigError, ExperimentConfig


@dataclass(frozen=True)
class Setting:
    """A standard constructor keyword: the configuration keys it reads and how it is made."""

    reads: tuple[str, ...]
    make: Callable[[ExperimentConfig], Any]


def _teacher_reward(cfg: ExperimentConfig) -> Any:
    from redqueen.fitness import TeacherReward

    reward = cfg.environment.teacher_reward
    assert reward.extreme is not None  # the config's validator fills it from the variant
    return TeacherReward(invalid=reward.invalid, extreme=float(reward.extreme))


def _student_reward(cfg: ExperimentConfig) -> Any:
    from redqueen.fitness import StudentReward

    reward = cfg.environment.student_reward
    return StudentReward(correct=reward.correct, wrong=reward.wrong, unparseable=reward.unparseable)


def _objectives(cfg: ExperimentConfig) -> dict[str, tuple[str, ...]]:
    objectives = cfg.objectives
    return {
        "teacher": tuple(objectives.teacher),
        "student": tuple(objectives.student),
        "solo": tuple(objectives.solo),
    }


#: The standard constructor keywords: what each reads and how its value is made.
STANDARD_SETTINGS: dict[str, Setting] = {
    "seed": Setting(("seed",), lambda c: c.seed),
    "teachers": Setting(("population.teachers",), lambda c: c.population.teachers),
    "students": Setting(("population.students",), lambda c: c.population.students),
    "solo": Setting(("population.solo",), lambda c: c.population.solo),
    "rank": Setting(("population.rank",), lambda c: c.population.rank),
    "alpha": Setting(("population.alpha",), lambda c: c.population.alpha),
    "init": Setting(("population.init",), lambda c: c.population.init),
    "init_std": Setting(("population.init_std",), lambda c: c.population.init_std),
    "replacement": Setting(("evolution",), lambda c: c.evolution.replacement()),
    "matchmaker": Setting(("matchmaking",), lambda c: c.matchmaking.matchmaker()),
    "tasks_per_teacher": Setting(
        ("environment.tasks_per_teacher",), lambda c: c.environment.tasks_per_teacher
    ),
    "answers_per_task": Setting(
        ("environment.answers_per_task",), lambda c: c.environment.answers_per_task
    ),
    "teacher_reward": Setting(("environment.teacher_reward",), _teacher_reward),
    "student_reward": Setting(("environment.student_reward",), _student_reward),
    "objectives": Setting(("objectives",), _objectives),
    "workers": Setting(("engine.workers",), lambda c: c.engine.workers),
    "ray_address": Setting(("engine.ray_address",), lambda c: c.engine.ray_address),
}


def keyword_names(cls: type) -> tuple[set[str], bool]:
    """The keyword names ``cls``'s constructor accepts, and whether it takes ``**kwargs``."""
    params = inspect.signature(cls).parameters.values()
    names = {
        p.name
        for p in params
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"
    }
    return names, any(p.kind is p.VAR_KEYWORD for p in params)


def standard_reads(cls: type) -> tuple[str, ...]:
    """The configuration keys the standard keywords of ``cls``'s constructor read."""
    accepted, _ = keyword_names(cls)
    return tuple(key for name in sorted(accepted) if name in STANDARD_SETTINGS
                 for key in STANDARD_SETTINGS[name].reads)


def constructor_settings(
    cls: type, cfg: ExperimentConfig, *, exclude: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Keyword arguments for ``cls``: the standard settings its constructor declares, and
    ``environment.options`` for the rest (an option overrides a standard setting of its name).

    Args:
        cls: The environment class.
        cfg: The configuration.
        exclude: Keywords the caller fills itself (neither standard nor an option).

    Raises:
        ConfigError: If an option is not a parameter of the constructor.
    """
    accepted, var_kw = keyword_names(cls)
    accepted -= set(exclude)
    options = dict(cfg.environment.options)
    for key in options:
        if key not in accepted and not var_kw:
            known = ", ".join(sorted(accepted)) or "none"
            raise ConfigError(
                f"environment.options.{key}: not a setting of environment "
                f"{cfg.environment.name!r} (accepted: {known})"
            )
    kwargs = {
        name: setting.make(cfg)
        for name, setting in STANDARD_SETTINGS.items()
        if name in accepted and name not in options
    }
    kwargs.update(options)
    return kwargs


@dataclass(frozen=True)
class Builder:
    """How a built-in environment is made from a configuration, and the keys it reads."""

    build: Callable[[ExperimentConfig], Any]
    reads: tuple[str, ...]


#: Builders of the built-in environments by name (filled by ``redqueen.experiments.build``).
BUILDERS: dict[str, Builder] = {}


def builder(
    name: str, *, reads: tuple[str, ...]
) -> Callable[[Callable[[ExperimentConfig], Any]], Callable[[ExperimentConfig], Any]]:
    """Register the builder of environment ``name``, which reads the configuration keys ``reads``."""

    def register(build: Callable[[ExperimentConfig], Any]) -> Callable[[ExperimentConfig], Any]:
        BUILDERS[name] = Builder(build, tuple(reads))
        return build

    return register
