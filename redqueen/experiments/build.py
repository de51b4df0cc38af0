"""Turn a validated :class:`~redqueen.experiments.config.ExperimentConfig` into an environment.

:func:`build_environment` looks the environment name up in
:data:`redqueen.environments.ENVIRONMENTS` and constructs it with keyword arguments taken
from the configuration. Environments whose constructors follow the common keyword names
(``teachers``, ``students``, ``rank``, ``alpha``, ``seed``, ``replacement``, ...) need no
builder of their own: every standard setting the constructor accepts is passed, and
``environment.options`` supplies the rest. A plug-in environment with unusual needs may define
a ``from_config(cfg)`` classmethod instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from redqueen._registry import UnknownNameError
from redqueen.experiments._config_checks import check_config, environment_class, keyword_names
from redqueen.experiments.config import ConfigError, ExperimentConfig


def replacement_config(cfg: ExperimentConfig) -> Any:
    """The evolution section as the evolution core's ``ReplacementConfig`` (its one schema)."""
    return cfg.evolution.replacement()


def _teacher_reward(cfg: ExperimentConfig) -> Any:
    from redqueen.fitness import TeacherReward

    reward = cfg.environment.teacher_reward
    assert reward.extreme is not None  # the config's validator fills it from the variant
    return TeacherReward(invalid=reward.invalid, extreme=float(reward.extreme))


def _student_reward(cfg: ExperimentConfig) -> Any:
    from redqueen.fitness import StudentReward

    reward = cfg.environment.student_reward
    return StudentReward(correct=reward.correct, wrong=reward.wrong, unparseable=reward.unparseable)


def standard_kwargs(cfg: ExperimentConfig) -> dict[str, Callable[[], Any]]:
    """Every standard constructor keyword an environment may accept, computed lazily.

    Keys are the names environments use for their keyword-only parameters; values are
    thunks so that settings an environment does not take are never built.
    """
    pop = cfg.population
    return {
        "seed": lambda: cfg.seed,
        "teachers": lambda: pop.teachers,
        "students": lambda: pop.students,
        "n_teachers": lambda: pop.teachers,
        "n_students": lambda: pop.students,
        "solo": lambda: pop.solo,
        "rank": lambda: pop.rank,
        "alpha": lambda: pop.alpha,
        "init": lambda: pop.init,
        "init_std": lambda: pop.init_std,
        "replacement": lambda: replacement_config(cfg),
        "matchmaker": lambda: cfg.matchmaking.matchmaker(),
        "tasks_per_teacher": lambda: cfg.environment.tasks_per_teacher,
        "answers_per_task": lambda: cfg.environment.answers_per_task,
        "teacher_reward": lambda: _teacher_reward(cfg),
        "student_reward": lambda: _student_reward(cfg),
        "objectives": lambda: {
            "teacher": tuple(cfg.objectives.teacher),
            "student": tuple(cfg.objectives.student),
            "solo": tuple(cfg.objectives.solo),
        },
        "workers": lambda: cfg.engine.workers,
        "ray_address": lambda: cfg.engine.ray_address,
    }


def kwargs_for(cls: type, cfg: ExperimentConfig) -> dict[str, Any]:
    """Keyword arguments for ``cls`` from the standard settings and ``environment.options``.

    Raises:
        ConfigError: If an option is not a parameter of the environment's constructor.
    """
    accepted, var_kw = keyword_names(cls)
    options = dict(cfg.environment.options)
    for key in options:
        if key not in accepted and not var_kw:
            known = ", ".join(sorted(accepted)) or "none"
            raise ConfigError(
                f"environment.options.{key}: not a setting of environment "
                f"{cfg.environment.name!r} (accepted: {known})"
            )
    kwargs = {
        name: make()
        for name, make in standard_kwargs(cfg).items()
        if name in accepted and name not in options
    }
    kwargs.update(options)
    return kwargs


def _build_generic(cls: type, cfg: ExperimentConfig) -> Any:
    kwargs = kwargs_for(cls, cfg)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError, KeyError) as error:
        message = str(error.args[0]) if error.args else str(error)
        raise ConfigError(
            f"environment: cannot build {cfg.environment.name!r}: {message}"
        ) from error


def game_settings(cfg: ExperimentConfig) -> Any:
    """The environment and sampling sections as the task-domain environments' ``GameSettings``."""
    from redqueen.environments._codegame import GameSettings

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
    from redqueen.environments._domain import make_domain

    env = cfg.environment
    try:
        return make_domain(env.domain, env.domain_params)
    except UnknownNameError as error:
        raise ConfigError(f"environment.domain: {error}") from None
    except ValueError as error:
        raise ConfigError(f"environment.domain_params: {' '.join(str(error).split())}") from None


def _game_env_kwargs(cfg: ExperimentConfig) -> dict[str, Any]:
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
        "teacher_reward": _teacher_reward(cfg),
        "student_reward": _student_reward(cfg),
        "objectives": standard_kwargs(cfg)["objectives"](),
        "learner": LearnerConfig(
            lr=lrn.lr,
            clip=lrn.clip,
            max_grad_norm=lrn.max_grad_norm,
            weight_decay=lrn.weight_decay,
            kl_coef=lrn.kl_coef,
            epochs=lrn.epochs,
            minibatches=lrn.minibatches,
            micro_batch_size=lrn.micro_batch_size,
        ),
        "executor": {
            "workers": env.executor.workers,
            "timeout": env.executor.timeout,
            "memory_mb": env.executor.memory_mb,
        },
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
        raise ConfigError(f"environment: cannot build {cfg.environment.name!r}: {message}") from None


def _with_cluster_host(cfg: ExperimentConfig, kwargs: dict[str, Any]) -> dict[str, Any]:
    """With ``engine.workers > 0``, the model is loaded on Ray workers instead (see
    :func:`redqueen.engine.distributed.cluster_host`)."""
    if cfg.engine.workers < 1:
        return kwargs
    from redqueen.engine.distributed import ClusterError, cluster_host

    try:
        return {**kwargs, "host": cluster_host(cfg)}
    except ClusterError as error:
        raise ConfigError(f"engine: {error}") from None
    except (OSError, ValueError) as error:
        raise ConfigError(f"model.name: {error}") from None


def _build_coevolution(cfg: ExperimentConfig) -> Any:
    from redqueen.environments.coevolution import CoevolutionEnv

    pop = cfg.population
    if pop.teachers < 1 or pop.students < 1:
        raise ConfigError(
            "population.teachers and population.students: co-evolution needs at least one of each"
        )
    kwargs = _game_env_kwargs(cfg)
    kwargs.update(
        teachers=pop.teachers,
        students=pop.students,
        replacement=replacement_config(cfg),
        matchmaker=cfg.matchmaking.matchmaker(),
    )
    return _construct(CoevolutionEnv, cfg, _with_cluster_host(cfg, kwargs))


def _build_selfplay(cfg: ExperimentConfig) -> Any:
    from redqueen.environments.selfplay import SelfPlayEnv

    if cfg.evolution.replace_every != 0:
        raise ConfigError(
            "evolution.replace_every: the selfplay environment runs independent solo agents "
            "without replacement; set it to 0"
        )
    if cfg.population.solo < 1:
        raise ConfigError("population.solo: selfplay needs at least one solo agent")
    kwargs = _game_env_kwargs(cfg)
    kwargs["solo"] = cfg.population.solo
    kwargs["replacement"] = replacement_config(cfg)
    return _construct(SelfPlayEnv, cfg, _with_cluster_host(cfg, kwargs))


#: Builders for environments whose constructors take more than the standard keywords.
def _build_games(cfg: ExperimentConfig) -> Any:
    from redqueen.experiments._games_build import build_games

    return build_games(cfg, standard_kwargs(cfg))


BUILDERS: dict[str, Callable[[ExperimentConfig], Any]] = {
    "coevolution": _build_coevolution,
    "games": _build_games,
    "selfplay": _build_selfplay,
}

def _check_device(cfg: ExperimentConfig) -> None:
    """``model.device`` names a device this process has (Ray workers check their own)."""
    import torch

    try:
        device = torch.device(cfg.model.device)
    except (RuntimeError, ValueError) as error:
        raise ConfigError(f"model.device: {cfg.model.device!r} is not a torch device ({error})") from None
    if device.type == "cuda" and cfg.engine.workers < 1 and not torch.cuda.is_available():
        raise ConfigError(
            f"model.device: {cfg.model.device!r}, but torch {torch.__version__} sees no CUDA device"
        )


def build_environment(cfg: ExperimentConfig, *, checked: bool = False) -> Any:
    """Construct the environment a configuration describes.

    Args:
        cfg: A validated configuration (see :func:`redqueen.experiments.config.load_config`).
        checked: The caller has already run :func:`redqueen.experiments.check_config` on
            ``cfg`` (it is not run twice).

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

        torch.set_num_threads(cfg.model.cpu_threads)
    cls = environment_class(cfg)
    name = cfg.environment.name
    if not checked:
        check_config(cfg)
    builder = BUILDERS.get(name)
    if builder is not None:
        return builder(cfg)
    from_config = getattr(cls, "from_config", None)
    if callable(from_config):
        return from_config(cfg)
    return _build_generic(cls, cfg)
