"""How a configuration reaches an environment: read from the environment's own constructor.

Every keyword parameter of an environment's constructor says what it takes by its type:

- a settings object of :mod:`redqueen.settings` gets the configuration section of that type,
  whole (:data:`SECTIONS`: :class:`~redqueen.settings.EngineSettings` is ``model``,
  :class:`~redqueen.settings.LearnerSettings` is ``learner``, ...); a base type takes the
  section of a derived one (a :class:`~redqueen.settings.GenomeSettings` parameter gets the
  ``population`` section) and reads only its own fields;
- ``seed`` gets the run's seed; a :class:`redqueen.environments.TaskDomain` the domain
  ``environment.domain`` names with its ``environment.domain_params``;
- ``options``, typed with a settings model of the environment's own, gets
  ``environment.options`` validated by that model;
- any other parameter keeps its default (a parameter without one is an error).

``**kwargs`` typed ``Unpack[SomeTypedDict]`` count as the typed dict's keys. Annotations are
read in the module that defines the constructor, so a settings class must be imported there at
run time (one imported under ``TYPE_CHECKING`` only is not seen, and its parameter keeps its
default). What an
environment reads (:func:`keys_read`) follows from the same parameters, so a configuration key
that nothing reads is an error at load, and a new environment needs no edit here.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import UnionType
from typing import Literal

import typing_extensions
from pydantic import BaseModel, ValidationError

from redqueen.experiments.config import ConfigError, ExperimentConfig
from redqueen.settings import (
    ClusterSettings,
    EngineSettings,
    ExecutorSettings,
    GenomeSettings,
    LearnerSettings,
    MatchmakingSettings,
    MatchSettings,
    ObjectiveSettings,
    PopulationSettings,
    ReplacementConfig,
    SamplingSettings,
    Settings,
    StudentRewardSettings,
    TeacherRewardSettings,
)

__all__ = ["SECTIONS", "Input", "inputs", "keys_read", "arguments"]

#: The configuration section each settings type is (a subclass takes its nearest base's).
SECTIONS: dict[type[Settings], str] = {
    EngineSettings: "model",
    ClusterSettings: "engine",
    GenomeSettings: "population",
    MatchSettings: "environment",
    TeacherRewardSettings: "environment.teacher_reward",
    StudentRewardSettings: "environment.student_reward",
    ExecutorSettings: "environment.executor",
    SamplingSettings: "sampling",
    LearnerSettings: "learner",
    ReplacementConfig: "evolution",
    MatchmakingSettings: "matchmaking",
    ObjectiveSettings: "objectives",
}

#: ``Unpack`` as ``typing`` (3.11+) and ``typing_extensions`` spell it.
_UNPACK = {typing_extensions.Unpack, getattr(typing, "Unpack", typing_extensions.Unpack)}

Kind = Literal["section", "seed", "domain", "options"]


@dataclass(frozen=True)
class Input:
    """One constructor parameter that the configuration fills.

    Attributes:
        name: The keyword.
        kind: ``section``, ``seed``, ``domain`` or ``options``.
        settings: The declared settings type (``section`` and ``options``).
        path: The dotted configuration path it comes from.
    """

    name: str
    kind: Kind
    settings: type[Settings] | None = None
    path: str = ""


def _section_of(kind: type[Settings]) -> str | None:
    return next((SECTIONS[base] for base in kind.__mro__ if base in SECTIONS), None)


def _resolve(annotation: object, namespace: Mapping[str, object]) -> object:
    """The annotation as an object (a string is evaluated in the constructor's module)."""
    if isinstance(annotation, typing.ForwardRef):
        annotation = annotation.__forward_arg__
    if isinstance(annotation, str):
        try:
            return eval(annotation, dict(namespace))  # noqa: S307 (the class's own annotation)
        except NameError:  # a name imported for type checkers only: not a settings type
            return None
    return annotation


def _plain(annotation: object) -> object:
    """``X | None`` and ``Optional[X]`` as ``X``; a generic alias as its origin."""
    if isinstance(annotation, UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = args[0] if len(args) == 1 else annotation
    origin = typing.get_origin(annotation)
    return origin if isinstance(origin, type) else annotation


def _parameters(cls: type) -> Iterator[tuple[str, object, bool]]:
    """``(name, resolved type, has a default)`` of each keyword parameter of ``cls``'s
    constructor, ``**kwargs: Unpack[TypedDict]`` expanded (its keys count as having defaults)."""
    init = cls.__init__  # type: ignore[misc]
    namespace = vars(inspect.getmodule(init) or inspect.getmodule(cls))
    for param in inspect.signature(init).parameters.values():
        if param.name == "self" or param.kind is param.VAR_POSITIONAL:
            continue
        annotation = _resolve(param.annotation, namespace)
        if param.kind is param.VAR_KEYWORD:
            if typing.get_origin(annotation) in _UNPACK:
                (typed,) = typing.get_args(annotation)
                for key, hint in typed.__annotations__.items():
                    yield key, _plain(_resolve(hint, namespace)), True
            continue
        yield param.name, _plain(annotation), param.default is not param.empty


def inputs(cls: type) -> tuple[Input, ...]:
    """The parameters of ``cls``'s constructor that the configuration fills.

    Raises:
        TypeError: If a parameter without a default is none of the kinds the configuration fills.
    """
    from redqueen.environments import TaskDomain

    found: list[Input] = []
    for name, kind, has_default in _parameters(cls):
        settings = kind if isinstance(kind, type) and issubclass(kind, Settings) else None
        if name == "seed":
            found.append(Input(name, "seed", path="seed"))
        elif name == "options" and settings is not None:
            found.append(Input(name, "options", settings, "environment.options"))
        elif kind is TaskDomain:
            found.append(Input(name, "domain", path="environment.domain"))
        elif settings is not None and _section_of(settings) is not None:
            found.append(Input(name, "section", settings, _section_of(settings) or ""))
        elif not has_default:
            raise TypeError(
                f"{cls.__name__}: constructor parameter {name!r} is neither a settings object, "
                "'seed', a task domain nor 'options', and has no default"
            )
    return tuple(found)


def _fields_read(item: Input, roles: tuple[str, ...]) -> list[str]:
    assert item.settings is not None
    fields = list(item.settings.model_fields)
    if issubclass(item.settings, PopulationSettings):
        sizes = {PopulationSettings.size_field(role) for role in roles}
        fields = [f for f in fields if f in GenomeSettings.model_fields or f in sizes]
    if issubclass(item.settings, ObjectiveSettings):
        fields = [f for f in fields if f in roles]
    return [f"{item.path}.{field}" for field in fields]


def keys_read(cls: type) -> tuple[str, ...]:
    """The configuration keys environment ``cls`` reads, derived from its constructor: every
    field of each settings object it takes (role sizes and objectives only for its ``roles``),
    ``seed``, the domain's keys, and ``environment.options``."""
    roles = tuple(getattr(cls, "roles", ()))
    keys: list[str] = []
    for item in inputs(cls):
        if item.kind == "section":
            keys += _fields_read(item, roles)
        elif item.kind == "domain":
            keys += ["environment.domain", "environment.domain_params"]
        else:
            keys.append(item.path)
    return tuple(dict.fromkeys(keys))


def _section(cfg: ExperimentConfig, path: str) -> BaseModel:
    node: BaseModel = cfg
    for part in path.split("."):
        node = getattr(node, part)
    return node


def options(kind: type[Settings], cfg: ExperimentConfig) -> Settings:
    """``environment.options`` validated by an environment's options model.

    Raises:
        ConfigError: ``environment.options.<key>: ...`` naming the first refused option.
    """
    try:
        return kind.model_validate(dict(cfg.environment.options))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            known = ", ".join(kind.model_fields)
            message = f"not a setting of environment {cfg.environment.name!r} (accepted: {known})"
            if where in type(cfg.environment).model_fields:  # one place for each setting
                message = f"a key of the environment section: set environment.{where} instead"
        if not where:
            raise ConfigError(f"environment.options.{message}") from None
        raise ConfigError(f"environment.options.{where}: {message}") from None


def arguments(cls: type, cfg: ExperimentConfig) -> dict[str, object]:
    """The keyword arguments of ``cls``'s constructor that ``cfg`` fills.

    Raises:
        ConfigError: If the domain or an option does not fit.
    """
    kwargs: dict[str, object] = {}
    for item in inputs(cls):
        if item.kind == "seed":
            kwargs[item.name] = cfg.seed
        elif item.kind == "domain":
            kwargs[item.name] = _domain(cfg)
        elif item.kind == "options":
            assert item.settings is not None
            kwargs[item.name] = options(item.settings, cfg)
        else:
            kwargs[item.name] = _section(cfg, item.path)
    return kwargs


def _domain(cfg: ExperimentConfig) -> object:
    from redqueen._registry import UnknownNameError
    from redqueen.environments import make_domain

    env = cfg.environment
    try:
        return make_domain(env.domain, env.domain_params)
    except UnknownNameError as error:
        raise ConfigError(f"environment.domain: {error}") from None
    except ValueError as error:
        raise ConfigError(f"environment.domain_params: {' '.join(str(error).split())}") from None
