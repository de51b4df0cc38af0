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

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from redqueen._registry import UnknownNameError
from redqueen.experiments.config import ConfigError, ExperimentConfig

#: Modules whose import registers the built-in environments.
ENVIRONMENT_MODULES = ("redqueen.environments",)


def _import_environments() -> Any:
    for module in ENVIRONMENT_MODULES:
        importlib.import_module(module)
    from redqueen.environments.base import ENVIRONMENTS

    return ENVIRONMENTS


def replacement_config(cfg: ExperimentConfig) -> Any:
    """The evolution section as the evolution core's ``ReplacementConfig``."""
    from redqueen.evo import ReplacementConfig

    evo = cfg.evolution
    return ReplacementConfig(
        replace_every=evo.replace_every,
        cull_fraction=evo.cull_fraction,
        selection=evo.selection,
        selection_params=dict(evo.selection_params),
        operators=dict(evo.operators),
        operator_params={name: dict(params) for name, params in evo.operator_params.items()},
        elitism=evo.elitism,
        ranking=evo.ranking,
    )


def standard_kwargs(cfg: ExperimentConfig) -> dict[str, Callable[[], Any]]:
    """Every standard constructor keyword an environment may accept, computed lazily.

    Keys are the names environments use for their keyword-only parameters; values are
    thunks so that settings an environment does not take are never built.
    """
    pop, evo = cfg.population, cfg.evolution
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
        "replace_every": lambda: evo.replace_every,
        "cull_fraction": lambda: evo.cull_fraction,
        "selection": lambda: evo.selection,
        "selection_params": lambda: dict(evo.selection_params),
        "operators": lambda: dict(evo.operators),
        "operator_params": lambda: {k: dict(v) for k, v in evo.operator_params.items()},
        "elitism": lambda: evo.elitism,
        "ranking": lambda: evo.ranking,
        "objectives": lambda: {
            "teacher": tuple(cfg.objectives.teacher),
            "student": tuple(cfg.objectives.student),
            "solo": tuple(cfg.objectives.solo),
        },
    }


def _keyword_names(cls: type) -> tuple[set[str], bool]:
    params = inspect.signature(cls.__init__).parameters.values()
    names = {
        p.name
        for p in params
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"
    }
    return names, any(p.kind is p.VAR_KEYWORD for p in params)


def kwargs_for(cls: type, cfg: ExperimentConfig) -> dict[str, Any]:
    """Keyword arguments for ``cls`` from the standard settings and ``environment.options``.

    Raises:
        ConfigError: If an option is not a parameter of the environment's constructor.
    """
    accepted, var_kw = _keyword_names(cls)
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


#: Builders for environments whose constructors take more than the standard keywords.
BUILDERS: dict[str, Callable[[ExperimentConfig], Any]] = {}


def build_environment(cfg: ExperimentConfig) -> Any:
    """Construct the environment a configuration describes.

    Args:
        cfg: A validated configuration (see :func:`redqueen.experiments.config.load_config`).

    Returns:
        A ready :class:`redqueen.environments.Environment` at step 0.

    Raises:
        ConfigError: If the environment name is unknown, or a setting does not fit it
            (one line naming the field).
    """
    registry = _import_environments()
    name = cfg.environment.name
    try:
        cls = registry[name]
    except UnknownNameError as error:
        raise ConfigError(f"environment.name: {error}") from None
    builder = BUILDERS.get(name)
    if builder is not None:
        return builder(cfg)
    from_config = getattr(cls, "from_config", None)
    if callable(from_config):
        return from_config(cfg)
    return _build_generic(cls, cfg)
