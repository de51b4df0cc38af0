"""One validated configuration for every experiment, plus the shipped presets.

A run is described by a single :class:`ExperimentConfig`: the base model, the population, the
environment and its settings, the evolution loop, the objectives per role, the learner, the
sampling parameters and logging. Each section is a settings object of :mod:`redqueen.settings`
(``model`` an :class:`~redqueen.settings.EngineSettings`, ``learner`` a
:class:`~redqueen.settings.LearnerSettings`, ...) that the runtime class takes whole. It is
validated once, at the edge, by pydantic (unknown keys are errors everywhere), without importing
torch, and handed to the environment by :func:`redqueen.experiments.build.build_environment`.

Presets ship as YAML files next to this module and are listed in :data:`PRESETS`::

    cfg = load_config("tiny", overrides=["steps=2", "evolution.selection=tournament"])

A preset or file may start from another preset with a top-level ``base: <preset>`` key; its
own keys are merged over the base's, recursively.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from redqueen._params import shown_value
from redqueen._registry import Registry
from redqueen.experiments._yaml import MAX_BYTES, safe_load
from redqueen.settings import (
    ClusterSettings,
    EngineSettings,
    ExecutorSettings,
    GameSettings,
    LearnerSettings,
    LoggingSettings,
    MatchmakingSettings,
    ObjectiveSettings,
    PopulationSettings,
    ReplacementConfig,
    SamplingSettings,
    Settings,
    StudentRewardSettings,
    TeacherRewardSettings,
)

PRESET_DIR = Path(__file__).parent / "presets"
_FIELD_MESSAGE = re.compile(r"^[A-Za-z_][\w.]*: ")


class ConfigError(ValueError):
    """A configuration is invalid; the message is one line naming the field or file."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


# The sections are the settings objects the runtime classes take whole (one truth for every
# default and range); the names below are the configuration's own names for them.
ModelConfig = EngineSettings
EngineConfig = ClusterSettings
PopulationConfig = PopulationSettings
TeacherRewardConfig = TeacherRewardSettings
StudentRewardConfig = StudentRewardSettings
ExecutorConfig = ExecutorSettings
EvolutionConfig = ReplacementConfig
MatchmakingConfig = MatchmakingSettings
ObjectivesConfig = ObjectiveSettings
SamplingConfig = SamplingSettings
LoggingConfig = LoggingSettings


class EnvironmentConfig(GameSettings):
    """Which environment runs, on which task domain, and the game's settings (``environment:``).

    The section is a :class:`redqueen.settings.GameSettings` (the budgets of one round) with
    what picks and checks the game around it.

    Attributes:
        name: A name registered in ``redqueen.environments.ENVIRONMENTS``.
        domain: The task domain the co-evolution and self-play games are played on, a name
            registered in ``redqueen.environments.DOMAINS`` (a plug-in's, given with
            ``--plugin``, too).
        domain_params: The domain's own settings, checked against its settings model when the
            configuration is loaded (and written back with every default filled in).
        task_types: Task types teachers propose, cycled over each teacher's batch; they must be
            the domain's (default: all of them).
        options: The environment's own settings, checked against the options model its
            constructor declares (the surrogate environment, the games, plug-ins).
    """

    name: str = "coevolution"
    domain: str = "code"
    domain_params: dict[str, Any] = Field(default_factory=dict)
    task_types: tuple[str, ...] | None = Field(None, min_length=1)  # type: ignore[assignment]
    options: dict[str, Any] = Field(default_factory=dict)

    _FREE_FORM = ("options", "domain_params")

    @model_validator(mode="after")
    def _check_domain(self) -> EnvironmentConfig:
        params, types = _domain_settings(self.domain, self.domain_params)
        object.__setattr__(self, "domain_params", params)
        if self.task_types is None:
            object.__setattr__(self, "task_types", types)
        for index, task_type in enumerate(self.task_types or ()):
            if task_type not in types:
                raise ValueError(
                    f"task_types.{index}: {task_type!r} is not a task type of domain "
                    f"{self.domain!r} (known: {', '.join(types)})"
                )
        return self


def _domain_settings(
    name: str, params: Mapping[str, Any]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A registered domain's settings filled from ``params`` (as plain data), and its task types.

    Raises:
        ValueError: ``"domain: ..."`` for an unknown domain, ``"domain_params.<key>: ..."`` for
            a parameter its settings model refuses.
    """
    from redqueen._registry import ParameterError, UnknownNameError
    from redqueen.environments import DOMAINS  # asking the package for it registers "code"

    try:
        domain = DOMAINS[name]
    except UnknownNameError as error:
        raise ValueError(f"domain: {error}") from None
    try:  # worded as operator and selection parameters are: "key: unknown parameter (known: ...)"
        DOMAINS.validate(name, params)
    except ParameterError as error:
        raise ValueError(
            f"domain_params.{error}" if error.key else f"domain_params: {error}"
        ) from None
    settings = domain.settings_model.model_validate(dict(params))
    return settings.model_dump(mode="json"), tuple(domain.task_types)


class ExperimentConfig(Settings):
    """Everything one experiment needs; see the section classes for each field.

    Attributes:
        steps: Steps the run takes (each one round of the game, and replacement when due).
        seed: Seed of every random stream of the run (the same seed gives the same run).
        checkpoint_every: Steps between checkpoints (0: only at the end of the run).
        model: The base model and where it runs (:class:`~redqueen.settings.EngineSettings`).
        population: Role sizes and founders' genomes
            (:class:`~redqueen.settings.PopulationSettings`).
        environment: The environment, its task domain and one round's budgets
            (:class:`EnvironmentConfig`).
        evolution: Replacement: culling, selection, operators, hall of fame
            (:class:`~redqueen.settings.ReplacementConfig`).
        matchmaking: PFSP pairing of teachers and students
            (:class:`~redqueen.settings.MatchmakingSettings`).
        objectives: Objective names per role (:class:`~redqueen.settings.ObjectiveSettings`).
        learner: The REINFORCE++ update (:class:`~redqueen.settings.LearnerSettings`).
        sampling: Sampling of proposals and answers (:class:`~redqueen.settings.SamplingSettings`).
        logging: Monitoring sinks and checkpoints kept (:class:`~redqueen.settings.LoggingSettings`).
        engine: One process or Ray workers (:class:`~redqueen.settings.ClusterSettings`).
    """

    steps: int = Field(20, ge=1, le=100_000_000)
    seed: int = Field(0, ge=-(2**63), le=2**63 - 1)
    checkpoint_every: int = Field(1, ge=0, le=100_000_000)
    model: EngineSettings = EngineSettings()
    population: PopulationSettings = PopulationSettings()
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    evolution: ReplacementConfig = Field(default_factory=ReplacementConfig)
    matchmaking: MatchmakingSettings = MatchmakingSettings()
    objectives: ObjectiveSettings = ObjectiveSettings()
    learner: LearnerSettings = LearnerSettings()
    sampling: SamplingSettings = SamplingSettings()
    logging: LoggingSettings = LoggingSettings()
    engine: ClusterSettings = ClusterSettings()

    def to_yaml_dict(self) -> dict[str, Any]:
        """The fully resolved configuration as plain YAML-safe data (what ``config.yaml`` holds)."""
        return self.model_dump(mode="json")


@dataclass(frozen=True)
class Preset:
    """A configuration shipped with the package.

    Attributes:
        name: Preset name, e.g. ``"tiny"``.
        path: The YAML file.
        description: The file's first comment line (shown by ``redqueen list``).
    """

    name: str
    path: Path
    description: str = ""

    def __post_init__(self) -> None:
        # Registry listings read ``__doc__``; give each preset its own.
        object.__setattr__(self, "__doc__", self.description)

    @classmethod
    def from_file(cls, path: Path) -> Preset:
        """A preset named after the file's stem, described by its first comment line."""
        comments = [line for line in path.read_text().splitlines() if line.startswith("#")]
        description = comments[0].lstrip("#").strip() if comments else ""
        return cls(path.stem, path, description)


#: Shipped presets by name (``tiny``, ``surrogate``, ...).
PRESETS: Registry[Preset] = Registry("preset", typed=False)

for _path in sorted(PRESET_DIR.glob("*.yaml")):
    PRESETS.register(_path.stem)(Preset.from_file(_path))


def _read_yaml(path: Path, label: str) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ConfigError(
                f"{label}: {path.stat().st_size} bytes, more than a configuration may have ({MAX_BYTES})"
            )
        data = safe_load(path.read_text())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(
            f"{label}:{where} invalid YAML ({getattr(error, 'problem', error)})"
        ) from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{label}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise ConfigError(f"{label}: cannot read ({error.strerror})") from None
    if data is None:  # nothing but blanks, comments or null: a truncated file reads the same
        raise ConfigError(f"{label}: the file is empty (write {{}} to take every default)")
    if not isinstance(data, dict):
        raise ConfigError(
            f"{label}: expected a mapping at the top level, got {type(data).__name__}"
        )
    return data


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def _resolve(source: str | Path, seen: tuple[str, ...] = ()) -> tuple[dict[str, Any], str]:
    """Read a preset name or a YAML path, following ``base:`` keys; returns (data, label)."""
    text = str(source)
    path = Path(text).expanduser()
    if path.is_file():
        label = str(path)
        data = _read_yaml(path, label)
    elif text in PRESETS:
        label = f"preset {text!r}"
        data = _read_yaml(PRESETS[text].path, label)
    elif path.exists():
        raise ConfigError(f"{text}: not a file")
    elif path.suffix in (".yaml", ".yml") or "/" in text:
        raise ConfigError(f"{text}: config file not found")
    else:
        known = ", ".join(sorted(PRESETS)) or "none"
        raise ConfigError(f"unknown preset {text!r} (known: {known}; or pass a YAML file path)")
    base = data.pop("base", None)
    if base is None:
        return data, label
    if not isinstance(base, str):
        raise ConfigError(f"{label}: base: expected a preset name or path")
    if base in seen:
        raise ConfigError(f"{label}: base: cycle through {base!r}")
    base_data, _ = _resolve(base, (*seen, text))
    return _merge(base_data, data), label


def override_value(raw: str) -> object:
    """The value of one ``key=value`` override: YAML, or the text itself where it is not YAML
    (or is a document too big for a setting, :func:`redqueen.experiments._yaml.safe_load`);
    an empty text is ``None``."""
    if not raw.strip():
        return None
    try:
        return safe_load(raw)
    except yaml.YAMLError:
        return raw


def apply_overrides(data: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Apply dotted ``key=value`` overrides to raw configuration data.

    Values are parsed as YAML scalars or flow collections (``3``, ``1e-4``, ``true``, ``null``,
    ``[a, b]``, ``{svd_merge: 1.0}``), so ``--set`` reads like the YAML file.

    Raises:
        ConfigError: If an override has no ``=``, an empty key, or descends into a non-mapping.
    """
    result = _merge({}, data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"override {item!r}: expected dotted key=value, e.g. steps=2")
        value = override_value(raw)
        parts = key.split(".")
        node: dict[str, Any] = result
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = {}
            elif not isinstance(child, Mapping):
                raise ConfigError(
                    f"{'.'.join(parts[: depth + 1])}: not a section, cannot set {key}"
                )
            node[part] = child = dict(child)
            node = child
        node[parts[-1]] = value
    return result


def _section_keys(path: Sequence[object]) -> list[str]:
    """The keys of the section at ``path`` (e.g. ``("evolution",)``), or ``[]`` if it is none."""
    model: type[BaseModel] = ExperimentConfig
    for part in path:
        field = model.model_fields.get(str(part))
        if field is None:
            return []
        sections = [
            t
            for t in (field.annotation, *get_args(field.annotation))
            if isinstance(t, type) and issubclass(t, BaseModel)
        ]
        if not sections:
            return []
        model = sections[0]
    return list(model.model_fields)


def _unknown_key(loc: tuple[object, ...]) -> str:
    """``"<key>: unknown key"``, with the section's closest key when one is near (a typo)."""
    name = ".".join(str(part) for part in loc)
    close = difflib.get_close_matches(str(loc[-1]), _section_keys(loc[:-1]), n=1)
    return f"{name}: unknown key" + (f" (did you mean {close[0]}?)" if close else "")


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    loc = ".".join(str(part) for part in first["loc"]) or "<top level>"
    if first["type"] == "extra_forbidden":
        return _unknown_key(tuple(first["loc"]))
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "value_error" and _FIELD_MESSAGE.match(message):
        # Section validators name the field inside the section: "operators.x: ...".
        return f"{loc}.{message}" if first["loc"] else message
    value = first.get("input")
    shown = "" if isinstance(value, Mapping) else f" (got {shown_value(value)})"
    return f"{loc}: {message}{shown}"


def validate_config(data: Mapping[str, Any], *, label: str = "config") -> ExperimentConfig:
    """Validate raw configuration data into an :class:`ExperimentConfig`.

    Raises:
        ConfigError: One line naming the first offending field.
    """
    try:
        return ExperimentConfig.model_validate(dict(data))
    except ValidationError as error:
        raise ConfigError(f"{_describe(error)} [{label}]") from None


def load_config(
    preset_or_path: str | Path | Mapping[str, Any],
    overrides: Sequence[str] = (),
) -> ExperimentConfig:
    """Load a preset, a YAML file or a mapping, apply ``key=value`` overrides, validate.

    Args:
        preset_or_path: A name in :data:`PRESETS`, a path to a YAML file, or raw data
            (e.g. a run directory's ``config.yaml`` already read).
        overrides: Dotted ``key=value`` strings, e.g. ``["steps=2", "evolution.cull_fraction=0.5"]``.

    Returns:
        The validated configuration.

    Raises:
        ConfigError: One line naming the field or file: unknown key, wrong type or value,
            missing preset or file, unreadable YAML, an empty file, malformed override.
    """
    if isinstance(preset_or_path, Mapping):
        data, label = dict(preset_or_path), "config"
    else:
        data, label = _resolve(preset_or_path)
    if overrides:
        data = apply_overrides(data, overrides)
    return validate_config(data, label=label)
