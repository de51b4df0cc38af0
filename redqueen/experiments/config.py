"""One validated configuration for every experiment, plus the shipped presets.

A run is described by a single :class:`ExperimentConfig`: the base model, the population, the
environment and its settings, the evolution loop, the objectives per role, the learner, the
sampling parameters and logging. It is validated once, at the edge, by pydantic (unknown keys
are errors everywhere), and turned into plain objects by :func:`redqueen.experiments.build.build_environment`.

Presets ship as YAML files next to this module and are listed in :data:`PRESETS`::

    cfg = load_config("tiny", overrides=["steps=2", "evolution.selection=tournament"])

A preset or file may start from another preset with a top-level ``base: <preset>`` key; its
own keys are merged over the base's, recursively.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from redqueen._registry import Registry
from redqueen.experiments._defaults import class_defaults, defaults_from, runtime_default
from redqueen.experiments._yaml import MAX_BYTES, safe_load

PRESET_DIR = Path(__file__).parent / "presets"
_FIELD_MESSAGE = re.compile(r"^[A-Za-z_][\w.]*: ")


class ConfigError(ValueError):
    """A configuration is invalid; the message is one line naming the field or file."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class _Section(BaseModel):
    """Base of every section: unknown keys are errors, values are immutable once validated,
    and every number is finite (``.inf`` and ``.nan`` are refused, in free-form mappings too).

    A free-form mapping (:attr:`_FREE_FORM`: ``environment.options``, ...) is handed to code
    that may turn a string into a number (``float("1e400")`` is ``inf``), so there a string
    that reads as a non-finite number is refused as well."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )
    #: Fields holding free-form mappings, whose numeric strings are checked too.
    _FREE_FORM: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _finite_numbers(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        for key, value in data.items():
            bad = _non_finite(value, str(key), strings=key in cls._FREE_FORM)
            if bad is not None:
                path, shown = bad
                raise ValueError(f"{path}: must be a finite number (got {shown})")
        return data


def _non_finite(value: Any, path: str, *, strings: bool = False) -> tuple[str, str] | None:
    """Dotted path and text of the first non-finite number in plain data (with ``strings``,
    of a string that ``float`` reads as one too), or ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return path, repr(value)
    if strings and isinstance(value, str) and not _finite_text(value):
        return path, repr(value)
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = _non_finite(item, f"{path}.{key}", strings=strings)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _non_finite(item, f"{path}.{index}", strings=strings)
            if found is not None:
                return found
    return None


def _finite_text(text: str) -> bool:
    """Whether ``text`` is not a number, or a finite one (``"1e400"``, ``"nan"``, ``"-inf"`` are not)."""
    try:
        return math.isfinite(float(text))
    except (ValueError, OverflowError):
        return True


class ModelConfig(_Section):
    """The frozen base model that hosts every adapter.

    Attributes:
        name: A Hugging Face model id, a local path, or ``"tiny-coder"`` (the shipped model).
        backend: Generation backend name (see ``redqueen.engine.BACKENDS``); ``"auto"`` is
            ``"static"`` for Llama/Qwen2-style models and ``"hf"`` for any other.
        device: Torch device, e.g. ``"cpu"`` or ``"cuda"``.
        dtype: Weight dtype; ``None`` keeps the checkpoint's.
        target_modules: Linear modules that carry LoRA factors; ``None`` means every linear projection.
        cpu_threads: Torch intra-op threads for CPU runs (process-wide; ``None`` keeps torch's
            default). On a quiet 2-core machine two threads run a ``tiny`` step faster than
            one (``benchmarks/README.md``); on a busy one extra threads mostly wait for each
            other, so ``"auto"`` takes one thread per core that other processes leave free,
            measured as the run starts (:mod:`._cpu`), and warns when none is.
    """

    name: str = "tiny-coder"
    backend: str = "auto"
    device: str = "cpu"
    dtype: Literal["float32", "bfloat16", "float16"] | None = None
    target_modules: tuple[str, ...] | None = None
    cpu_threads: int | Literal["auto"] | None = None

    @field_validator("cpu_threads", mode="before")
    @classmethod
    def _thread_count(cls, value: object) -> object:
        # One message for every wrong value (a union would name its members in the location).
        if value is None or value == "auto":
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("Input should be a number of threads or 'auto'")
        if value < 1:
            raise ValueError("Input should be greater than or equal to 1")
        if value > 1024:
            raise ValueError("Input should be less than or equal to 1024")
        return value


#: Where each mirrored section's defaults are written (read by :mod:`._defaults`, not imported).
_SELFPLAY = "environments/selfplay.py:SelfPlayEnv"
_REWARDS = "fitness/_rewards.py:"
_coevolution = defaults_from("environments/coevolution.py:CoevolutionEnv")
_student_reward = defaults_from(_REWARDS + "StudentReward")
_executor = defaults_from("verifiers/_executor.py:Executor")
_game = defaults_from("environments/_round.py:GameSettings")
_matchmaker = defaults_from("fitness/_matchmaking.py:PFSPMatchmaker")
_learner = defaults_from("engine/_learner.py:LearnerConfig")


class PopulationConfig(_Section):
    """Sizes of the sub-populations and how new genomes start.

    ``teachers`` and ``students`` are used by the co-evolution and surrogate environments,
    ``solo`` by the self-play baseline (each solo member proposes and solves on its own).
    """

    teachers: int = Field(default_factory=_coevolution("teachers"), ge=0, le=10_000)
    students: int = Field(default_factory=_coevolution("students"), ge=0, le=10_000)
    solo: int = Field(default_factory=runtime_default(_SELFPLAY, "solo"), ge=0, le=10_000)
    rank: int = Field(default_factory=_coevolution("rank"), ge=1, le=4096)
    alpha: float = Field(default_factory=_coevolution("alpha"), gt=0, le=1e4)
    init: Literal["peft", "gaussian"] = Field(default_factory=_coevolution("init"))
    init_std: float = Field(default_factory=_coevolution("init_std"), gt=0, le=10)


class TeacherRewardConfig(_Section):
    """Teacher reward: ``invalid`` for an invalid task, ``extreme`` when the solve rate is 0 or 1,
    else ``1 - rate``. ``variant`` picks the default ``extreme``: 0 (PopuLoRA) or -0.5 (AZR's code)."""

    variant: Literal["populora", "azr"] = "populora"
    invalid: float = Field(default_factory=runtime_default(_REWARDS + "TeacherReward", "invalid"))
    extreme: float | None = None

    @model_validator(mode="after")
    def _resolve_extreme(self) -> TeacherRewardConfig:
        if self.extreme is None:
            populora = class_defaults(_REWARDS + "TeacherReward")["extreme"]
            object.__setattr__(self, "extreme", populora if self.variant == "populora" else -0.5)
        return self


class StudentRewardConfig(_Section):
    """Student reward per answer status."""

    correct: float = Field(default_factory=_student_reward("correct"))
    wrong: float = Field(default_factory=_student_reward("wrong"))
    unparseable: float = Field(default_factory=_student_reward("unparseable"))


class ExecutorConfig(_Section):
    """Sandbox settings of the verifier's executor: at most 1024 workers, an hour a program
    and 1 TiB of memory (a larger value is a typo, or a way to make the sandbox fail)."""

    workers: int | None = Field(default_factory=_executor("workers"), ge=1, le=1024)
    timeout: float = Field(default_factory=_executor("timeout"), gt=0, le=3600)
    memory_mb: int = Field(default_factory=_executor("memory_mb"), ge=16, le=1 << 20)


class EnvironmentConfig(_Section):
    """Which environment runs, and its settings.

    Attributes:
        name: A name registered in ``redqueen.environments.ENVIRONMENTS``.
        domain: The task domain the co-evolution and self-play games are played on, a name
            registered in ``redqueen.environments.DOMAINS`` (a plug-in's, given with
            ``--plugin``, too).
        domain_params: The domain's own settings, checked against its settings model when the
            configuration is loaded (and written back with every default filled in).
        task_types: Task types teachers propose, cycled over each teacher's batch; they must be
            the domain's (default: all of them).
        tasks_per_teacher: Tasks each teacher (or solo member) proposes per step.
        answers_per_task: Answers ``n`` the student samples for each valid task.
        references: Reference triplets ``K`` shown in each proposal prompt.
        buffer_size: Capacity of the task buffer (oldest entries are dropped first).
        propose_max_new_tokens: Token budget of a proposal.
        solve_max_new_tokens: Token budget of an answer.
        base_probe_answers: Answers the frozen base model samples per valid task to measure its
            solve rate (``base_solve_rate`` in ``tasks.jsonl``); ``0`` turns the probe off.
        teacher_reward: Teacher reward settings.
        student_reward: Student reward settings.
        executor: Verifier sandbox settings.
        options: Extra keyword arguments for environments beyond the built-in settings
            (the surrogate environment and plug-ins); checked against the constructor.
    """

    name: str = "coevolution"
    domain: str = "code"
    domain_params: dict[str, Any] = Field(default_factory=dict)
    task_types: tuple[str, ...] | None = Field(None, min_length=1)
    tasks_per_teacher: int = Field(default_factory=_game("tasks_per_teacher"), ge=1, le=100_000)
    answers_per_task: int = Field(default_factory=_game("answers_per_task"), ge=1, le=10_000)
    references: int = Field(default_factory=_game("references"), ge=0, le=1_000)
    buffer_size: int = Field(default_factory=_game("buffer_size"), ge=1, le=10_000_000)
    propose_max_new_tokens: int = Field(
        default_factory=_game("propose_max_new_tokens"), ge=1, le=1_000_000
    )
    solve_max_new_tokens: int = Field(
        default_factory=_game("solve_max_new_tokens"), ge=1, le=1_000_000
    )
    base_probe_answers: int = Field(default_factory=_game("base_probe_answers"), ge=0, le=10_000)
    teacher_reward: TeacherRewardConfig = TeacherRewardConfig()
    student_reward: StudentRewardConfig = StudentRewardConfig()
    executor: ExecutorConfig = ExecutorConfig()
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


def _replacement_default(name: str) -> Any:
    """The default of one :class:`redqueen.evo.ReplacementConfig` field: the evolution core's
    schema is the one truth for the replacement step's defaults (read lazily, so that reading a
    configuration does not load torch)."""

    def make() -> Any:
        from redqueen.evo import ReplacementConfig

        value = getattr(ReplacementConfig(), name)
        if isinstance(value, Mapping):
            return {k: dict(v) if isinstance(v, Mapping) else v for k, v in value.items()}
        return value

    return make


class EvolutionConfig(_Section):
    """The replacement step, field for field :class:`redqueen.evo.ReplacementConfig` (the one
    schema, whose docstring explains each key and which supplies every default and check).

    Every ``replace_every`` steps, per role, the bottom ``cull_fraction`` (by ``ranking``) is
    replaced by children of parents chosen by ``selection``, made by operators drawn from
    ``operators`` (name -> weight); ``replace_every: 0`` never replaces. ``newborn`` sets a
    child's first rating (``survivor``, the default, is fair to newborns in a neutral game;
    ``parents``; ``fresh``), ``grace`` exempts members younger than that many steps from
    culling, ``snapshot_every`` freezes the members into the hall of fame and the run
    directory's ``snapshots/`` (0: never), ``hall_of_fame`` is how many snapshots stay in memory.
    """

    replace_every: int = Field(default_factory=_replacement_default("replace_every"))
    cull_fraction: float = Field(default_factory=_replacement_default("cull_fraction"))
    selection: str = Field(default_factory=_replacement_default("selection"))
    selection_params: dict[str, Any] = Field(
        default_factory=_replacement_default("selection_params")
    )
    ranking: str = Field(default_factory=_replacement_default("ranking"))
    operators: dict[str, float] = Field(default_factory=_replacement_default("operators"))
    operator_params: dict[str, dict[str, Any]] = Field(
        default_factory=_replacement_default("operator_params")
    )
    elitism: int = Field(default_factory=_replacement_default("elitism"))
    newborn: Literal["survivor", "parents", "fresh"] = Field(
        default_factory=_replacement_default("newborn")
    )
    grace: int = Field(default_factory=_replacement_default("grace"))
    snapshot_every: int = Field(default_factory=_replacement_default("snapshot_every"))
    hall_of_fame: int = Field(default_factory=_replacement_default("hall_of_fame"))

    _FREE_FORM = ("selection_params", "operator_params")

    @model_validator(mode="after")
    def _check(self) -> EvolutionConfig:
        self.replacement()  # the schema's own checks; messages name the field
        return self

    def replacement(self) -> Any:
        """This section as the evolution core's :class:`redqueen.evo.ReplacementConfig`.

        Raises:
            ValueError: ``"<field>: <problem>"`` when a value is out of range.
        """
        from redqueen.evo import ReplacementConfig

        return ReplacementConfig(**self.model_dump())


class MatchmakingConfig(_Section):
    """PFSP matchmaking (:class:`redqueen.fitness.PFSPMatchmaker`).

    Attributes:
        weighting: ``variance`` (p(1-p), balanced matches first), ``hard`` or ``uniform``.
        floor: Added to every weight so that no pairing is impossible.
        hall_of_fame_share: Probability that an opponent is a frozen past member from the hall
            of fame (each teacher's student, and an extra past teacher per student); needs
            ``evolution.snapshot_every`` > 0 to have past members to draw.
    """

    weighting: Literal["variance", "hard", "uniform"] = Field(
        default_factory=_matchmaker("weighting")
    )
    floor: float = Field(default_factory=_matchmaker("floor"), ge=0)
    hall_of_fame_share: float = Field(default_factory=_matchmaker("hall_of_fame_share"), ge=0, le=1)

    def matchmaker(self) -> Any:
        """This section as a :class:`redqueen.fitness.PFSPMatchmaker`."""
        from redqueen.fitness import PFSPMatchmaker

        return PFSPMatchmaker(
            weighting=self.weighting, floor=self.floor, hall_of_fame_share=self.hall_of_fame_share
        )


class ObjectivesConfig(_Section):
    """Objective names per role; one name is a scalar fitness, several make a Pareto problem."""

    teacher: tuple[str, ...] = Field(("rating",), min_length=1)
    student: tuple[str, ...] = Field(("rating",), min_length=1)
    solo: tuple[str, ...] = Field(("solve_rate",), min_length=1)


class LearnerSettings(_Section):
    """REINFORCE++ learner settings: per adapter per step, ``epochs`` passes over its rollouts,
    each split into ``minibatches`` optimizer steps. ``lr: 0`` is accepted: the same
    computation without learning, the control of an experiment on what learning adds."""

    lr: float = Field(default_factory=_learner("lr"), ge=0, le=10)
    clip: float = Field(default_factory=_learner("clip"), gt=0, le=100)
    max_grad_norm: float = Field(default_factory=_learner("max_grad_norm"), gt=0, le=1e6)
    weight_decay: float = Field(default_factory=_learner("weight_decay"), ge=0, le=100)
    kl_coef: float = Field(default_factory=_learner("kl_coef"), ge=0, le=1e6)
    epochs: int = Field(default_factory=_learner("epochs"), ge=1, le=1_000)
    minibatches: int = Field(default_factory=_learner("minibatches"), ge=1, le=100_000)
    micro_batch_size: int = Field(default_factory=_learner("micro_batch_size"), ge=1, le=1_000_000)


class SamplingConfig(_Section):
    """Sampling of proposals and answers (the policy gradient assumes temperature 1)."""

    temperature: float = Field(default_factory=_game("temperature"), ge=0, le=100)
    top_p: float = Field(default_factory=_game("top_p"), gt=0, le=1)


class LoggingConfig(_Section):
    """Live monitoring sinks besides the run directory, and how many checkpoints stay on disk.

    Attributes:
        keep_checkpoints: The newest this many checkpoints are kept (0: keep all).
    """

    keep_checkpoints: int = Field(3, ge=0)
    tensorboard: bool | None = None  # None: when installed, silently off when not
    wandb: bool = False
    wandb_project: str = "redqueen"
    wandb_entity: str | None = None


class EngineConfig(_Section):
    """Where the model runs: one process (``workers: 0``) or Ray worker actors.

    Args:
        workers: Ray workers, each holding one copy of the base model and a share of the
            adapters (one GPU each on CUDA); ``0`` runs everything in this process. Results
            do not depend on it.
        ray_address: Cluster to join (``"auto"``, ``"ray://head:10001"``); ``None`` starts a
            local Ray instance.
        cpus_per_worker: CPUs Ray reserves per worker.
        gpus_per_worker: GPUs per worker; ``None``: 1 on CUDA, else 0.
        placement: Placement of GPU workers: ``PACK`` (one multi-GPU node) or ``SPREAD``.
    """

    workers: int = Field(0, ge=0, le=1024)
    ray_address: str | None = None
    cpus_per_worker: float = Field(1.0, ge=0, le=1024)
    gpus_per_worker: float | None = Field(None, ge=0, le=64)
    placement: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] = "PACK"


class ExperimentConfig(_Section):
    """Everything one experiment needs; see the section classes for each field."""

    steps: int = Field(20, ge=1, le=100_000_000)
    seed: int = Field(0, ge=-(2**63), le=2**63 - 1)
    checkpoint_every: int = Field(1, ge=0, le=100_000_000)
    model: ModelConfig = ModelConfig()
    population: PopulationConfig = PopulationConfig()
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    evolution: EvolutionConfig = Field(default_factory=EvolutionConfig)
    matchmaking: MatchmakingConfig = MatchmakingConfig()
    objectives: ObjectivesConfig = ObjectivesConfig()
    learner: LearnerSettings = LearnerSettings()
    sampling: SamplingConfig = SamplingConfig()
    logging: LoggingConfig = LoggingConfig()
    engine: EngineConfig = EngineConfig()

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
    if data is None:
        return {}
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
        try:
            value = safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            value = raw
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
    shown = "" if isinstance(value, Mapping) else f" (got {value!r})"
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
            missing preset or file, unreadable YAML, malformed override.
    """
    if isinstance(preset_or_path, Mapping):
        data, label = dict(preset_or_path), "config"
    else:
        data, label = _resolve(preset_or_path)
    if overrides:
        data = apply_overrides(data, overrides)
    return validate_config(data, label=label)
