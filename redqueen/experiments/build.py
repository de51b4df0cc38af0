"""Turn a validated :class:`~redqueen.experiments.config.ExperimentConfig` into an environment.

:func:`build_environment` looks the environment name up in
:data:`redqueen.environments.ENVIRONMENTS` and builds it one of three ways:

- a built-in environment by its registered builder (:func:`redqueen.experiments._settings.builder`),
  which reads typed sections explicitly and declares the keys it reads;
- a plug-in with a ``from_config(cfg)`` classmethod by that (its ``config_sections`` say what
  it reads);
- any other plug-in by its constructor: the standard keywords it declares (``teachers``,
  ``rank``, ``replacement``, ``seed``, ... from the one table
  :data:`~redqueen.experiments._settings.STANDARD_SETTINGS`) and ``environment.options``.
"""

from __future__ import annotations

from typing import Any

from redqueen._registry import UnknownNameError
from redqueen.experiments._config_checks import check_config, environment_class, was_checked
from redqueen.experiments._settings import (
    BUILDERS,
    STANDARD_SETTINGS,
    builder,
    constructor_settings,
)
from redqueen.experiments.config import ConfigError, ExperimentConfig


def replacement_config(cfg: ExperimentConfig) -> Any:
    """The evolution section as the evolution core's ``ReplacementConfig`` (its one schema)."""
    return cfg.evolution.replacement()


def _standard(cfg: ExperimentConfig, *names: str) -> dict[str, Any]:
    return {name: STANDARD_SETTINGS[name].make(cfg) for name in names}


def game_settings(cfg: ExperimentConfig) -> Any:
    """The environment and sampling sections as the task-domain environments' ``GameSettings``."""
    from redqueen.environments._round import GameSettings

    env = cfg.environment
    assert env.task_types is not None  # the config's validator fills the domain's task types
    return GameSettings(
        task_types=tuple(env.task_types),
        tasks_per_teacher=env.tasks_per_teacher,
        answers_per_task=env.answers_per_task,
        references=env.references,
        buffer_size=env.buffer_size,
        propose_max_new_tokens=env.propose_max_new_tokens,
        solve_max_new_tokens=env.solve_max_new_tokens,
        base_probe_answers=env.base_probe_answers,
        temperature=cfg.sampling.temperature,
        top_p=cfg.sampling.top_p,
    )


def build_domain(cfg: ExperimentConfig) -> Any:
    """The task domain ``environment.domain`` names, with its ``environment.domain_params``.

    Raises:
        ConfigError: If the domain is not registered or a parameter does not fit it.
    """
    from redqueen.environments import make_domain

    env = cfg.environment
    try:
        return make_domain(env.domain, env.domain_params)
    except UnknownNameError as error:
        raise ConfigError(f"environment.domain: {error}") from None
    except ValueError as error:
        raise ConfigError(f"environment.domain_params: {' '.join(str(error).split())}") from None


def _round_env_kwargs(cfg: ExperimentConfig) -> dict[str, Any]:
    """Keyword arguments shared by the co-evolution and self-play environments."""
    from redqueen.engine import LearnerConfig

    env, model, pop, lrn = cfg.environment, cfg.model, cfg.population, cfg.learner
    if env.options:
        key = next(iter(env.options))
        raise ConfigError(
            f"environment.options.{key}: {env.name!r} takes no options; use its settings"
        )
    return {
        "model": model.name,
        "backend": model.backend,
        "device": model.device,
        "dtype": model.dtype,
        "target_modules": None if model.target_modules is None else tuple(model.target_modules),
        "rank": pop.rank,
        "alpha": pop.alpha,
        "init": pop.init,
        "init_std": pop.init_std,
        "domain": build_domain(cfg),
        "settings": game_settings(cfg),
        **_standard(cfg, "teacher_reward", "student_reward", "objectives"),
        "learner": LearnerConfig(**lrn.model_dump()),  # the section is the learner's schema
        "executor": env.executor.model_dump(),
        "seed": cfg.seed,
    }


def _construct(cls: type, cfg: ExperimentConfig, kwargs: dict[str, Any]) -> Any:
    try:
        return cls(**kwargs)
    except UnknownNameError as error:
        raise ConfigError(f"evolution: {error}") from None
    except KeyError as error:  # an objective no member reports
        raise ConfigError(f"objectives: {error.args[0] if error.args else error}") from None
    except (OSError, ValueError) as error:
        message = str(error.args[0]) if error.args else str(error)
        if isinstance(error, OSError):
            raise ConfigError(f"model.name: {message}") from None
        raise ConfigError(
            f"environment: cannot build {cfg.environment.name!r}: {message}"
        ) from None


def _with_cluster_host(cfg: ExperimentConfig, kwargs: dict[str, Any]) -> dict[str, Any]:
    """With ``engine.workers > 0``, the model is loaded on Ray workers instead: a
    :class:`redqueen.engine.distributed.RayAdapterHost` from the ``model`` and ``engine`` sections."""
    if cfg.engine.workers < 1:
        return kwargs
    from redqueen.engine.distributed import ClusterError, RayAdapterHost

    model, engine = cfg.model, cfg.engine
    try:
        host = RayAdapterHost(
            model.name,
            workers=engine.workers,
            device=model.device,
            dtype=model.dtype,
            target_modules=None if model.target_modules is None else tuple(model.target_modules),
            backend=model.backend,
            address=engine.ray_address,
            cpus_per_worker=engine.cpus_per_worker,
            gpus_per_worker=engine.gpus_per_worker,
            placement=engine.placement,
            cpu_threads=None
            if model.cpu_threads == "auto"
            else model.cpu_threads,  # per worker CPUs
        )
    except ClusterError as error:
        raise ConfigError(f"engine: {error}") from None
    except (OSError, ValueError) as error:
        raise ConfigError(f"model.name: {error}") from None
    return {**kwargs, "host": host}


_CODE_GAME_READS = (
    "seed",
    "model",
    "environment",
    "evolution",
    "learner",
    "sampling",
    "engine",
    "population.rank",
    "population.alpha",
    "population.init",
    "population.init_std",
)


@builder(
    "coevolution",
    reads=(
        *_CODE_GAME_READS,
        "population.teachers",
        "population.students",
        "matchmaking",
        "objectives.teacher",
        "objectives.student",
    ),
)
def _build_coevolution(cfg: ExperimentConfig) -> Any:
    from redqueen.environments.coevolution import CoevolutionEnv

    pop = cfg.population
    if pop.teachers < 1 or pop.students < 1:
        raise ConfigError(
            "population.teachers and population.students: co-evolution needs at least one of each"
        )
    kwargs = _round_env_kwargs(cfg)
    kwargs.update(
        teachers=pop.teachers,
        students=pop.students,
        replacement=replacement_config(cfg),
        matchmaker=cfg.matchmaking.matchmaker(),
    )
    return _construct(CoevolutionEnv, cfg, _with_cluster_host(cfg, kwargs))


@builder("selfplay", reads=(*_CODE_GAME_READS, "population.solo", "objectives.solo"))
def _build_selfplay(cfg: ExperimentConfig) -> Any:
    from redqueen.environments.selfplay import SelfPlayEnv

    if cfg.evolution.replace_every != 0:
        raise ConfigError(
            "evolution.replace_every: the selfplay environment runs independent solo agents "
            "without replacement; set it to 0"
        )
    if cfg.population.solo < 1:
        raise ConfigError("population.solo: selfplay needs at least one solo agent")
    kwargs = _round_env_kwargs(cfg)
    kwargs["solo"] = cfg.population.solo
    kwargs["replacement"] = replacement_config(cfg)
    return _construct(SelfPlayEnv, cfg, _with_cluster_host(cfg, kwargs))


#: What the surrogate and the games read besides ``environment.options``.
_SURROGATE_READS = (
    "seed",
    "population.teachers",
    "population.students",
    "population.rank",
    "population.alpha",
    "population.init",
    "population.init_std",
    "evolution",
    "matchmaking",
    "environment.tasks_per_teacher",
    "environment.answers_per_task",
    "environment.teacher_reward",
    "environment.student_reward",
    "objectives.teacher",
    "objectives.student",
)
_SURROGATE_SETTINGS = (
    "seed",
    "teachers",
    "students",
    "rank",
    "alpha",
    "init",
    "init_std",
    "replacement",
    "matchmaker",
    "tasks_per_teacher",
    "answers_per_task",
    "teacher_reward",
    "student_reward",
    "objectives",
)


@builder("surrogate", reads=(*_SURROGATE_READS, "engine.workers", "engine.ray_address"))
def _build_surrogate(cfg: ExperimentConfig) -> Any:
    from redqueen.environments.surrogate import SurrogateEnv

    kwargs = _standard(cfg, *_SURROGATE_SETTINGS, "workers", "ray_address")
    options = _options(cfg, SurrogateEnv)
    try:
        return SurrogateEnv(**{**kwargs, **options})
    except (TypeError, ValueError, KeyError) as error:
        message = str(error.args[0]) if error.args else str(error)
        raise ConfigError(
            f"environment: cannot build {cfg.environment.name!r}: {message}"
        ) from error


def _options(cfg: ExperimentConfig, cls: type) -> dict[str, Any]:
    """``environment.options``, each a keyword-only setting of ``cls`` (an option named like a
    standard setting overrides it).

    Raises:
        ConfigError: Naming an option ``cls`` does not take.
    """
    import inspect

    own = {p.name for p in inspect.signature(cls).parameters.values() if p.kind is p.KEYWORD_ONLY}
    options = dict(cfg.environment.options)
    for key in options:
        if key not in own:
            known = ", ".join(sorted(own))
            raise ConfigError(
                f"environment.options.{key}: not a setting of environment "
                f"{cfg.environment.name!r} (accepted: {known})"
            )
    return options


@builder("games", reads=_SURROGATE_READS)
def _build_games(cfg: ExperimentConfig) -> Any:
    from redqueen.experiments._games_build import build_games

    return build_games(cfg, _standard(cfg, *_SURROGATE_SETTINGS))


def _check_device(cfg: ExperimentConfig) -> None:
    """``model.device`` names a device this process has (Ray workers check their own)."""
    import torch

    try:
        device = torch.device(cfg.model.device)
    except (RuntimeError, ValueError) as error:
        raise ConfigError(
            f"model.device: {cfg.model.device!r} is not a torch device ({error})"
        ) from None
    if device.type == "cuda" and cfg.engine.workers < 1 and not torch.cuda.is_available():
        raise ConfigError(
            f"model.device: {cfg.model.device!r}, but torch {torch.__version__} sees no CUDA device"
        )


def build_environment(cfg: ExperimentConfig) -> Any:
    """Construct the environment a configuration describes.

    Args:
        cfg: A validated configuration (see :func:`redqueen.experiments.config.load_config`).

    ``model.cpu_threads`` is applied here (process-wide) for CPU runs.

    Returns:
        A ready :class:`redqueen.environments.Environment` at step 0.

    Raises:
        ConfigError: If the environment name is unknown, or a setting does not fit it
            (one line naming the field).
    """
    _check_device(cfg)
    if cfg.model.cpu_threads is not None and not cfg.model.device.startswith("cuda"):
        import torch

        from redqueen.experiments._cpu import resolve_cpu_threads

        threads = resolve_cpu_threads(cfg.model.cpu_threads)
        if threads is not None:
            torch.set_num_threads(threads)
    cls = environment_class(cfg)
    name = cfg.environment.name
    if not was_checked(cfg):  # start_run checks before making the run directory: not twice
        check_config(cfg)
    built_in = BUILDERS.get(name)
    if built_in is not None:
        return built_in.build(cfg)
    from_config = getattr(cls, "from_config", None)
    if callable(from_config):
        return from_config(cfg)
    kwargs = constructor_settings(cls, cfg)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError, KeyError) as error:
        message = str(error.args[0]) if error.args else str(error)
        raise ConfigError(f"environment: cannot build {name!r}: {message}") from error
