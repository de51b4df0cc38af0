"""A validated configuration checked against the registries and the chosen environment.

pydantic checks each value on its own; this module checks what needs the registries: the
selection, ranking and operator names, their parameters against each entry's declared schema,
their needs (a Pareto scheme needs several objectives, a fixed-arity crossover its number of
parents), the objective names the environment's members carry, and that every key the
configuration sets is read by what it configures (:func:`redqueen.experiments._wiring.keys_read`,
derived from the environment's constructor). Each failure is one line naming the key::

    evolution.operator_params.gaussian.sigmaa: unknown parameter (known: fraction, sigma)
    learner: not read by environment 'surrogate' (set: lr)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from redqueen._registry import ParameterError, UnknownNameError
from redqueen.experiments._wiring import keys_read
from redqueen.experiments.config import ConfigError, ExperimentConfig

if TYPE_CHECKING:
    from redqueen.environments import Environment

#: Keys every run reads, whatever the environment: the runner's, the monitor's, the thread count
#: applied before building, and the environment's name.
ALWAYS_READ = (
    "steps",
    "seed",
    "checkpoint_every",
    "logging",
    "model.cpu_threads",
    "environment.name",
)


def environment_class(cfg: ExperimentConfig) -> type[Environment]:
    """The registered class of ``environment.name``.

    Raises:
        ConfigError: If no environment has that name.
    """
    from redqueen.environments import environment  # imports only the chosen built-in's module

    try:
        return environment(cfg.environment.name)
    except UnknownNameError as error:
        raise ConfigError(f"environment.name: {error}") from None


def check_config(cfg: ExperimentConfig) -> None:
    """Check ``cfg`` against the registries and its environment; nothing is built.

    Raises:
        ConfigError: One line naming the first offending key.
    """
    cls = environment_class(cfg)
    read = (*ALWAYS_READ, *keys_read(cls))
    if cfg.environment.options and "environment.options" not in read:
        key = next(iter(cfg.environment.options))
        raise ConfigError(
            f"environment.options.{key}: {cfg.environment.name!r} takes no options; use its settings"
        )
    check_keys_read(cfg, read, cfg.environment.name)
    roles = [role for role in cls.roles if f"objectives.{role}" in read]
    check_evolution(cfg, roles)
    check_objective_names(cfg, roles, cls.objective_names)


def _leaves(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from _leaves(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


def _covered(key: str, read: Sequence[str]) -> bool:
    return any(key == r or key.startswith(f"{r}.") for r in read)


def _touches(prefix: str, read: Sequence[str]) -> bool:
    return any(_covered(prefix, read) or r.startswith(f"{prefix}.") for r in read)


def set_keys(cfg: ExperimentConfig) -> list[str]:
    """Dotted keys whose value differs from the default (what a configuration sets)."""
    defaults = dict(_leaves(ExperimentConfig()))
    return [key for key, value in _leaves(cfg) if defaults.get(key) != value]


def check_keys_read(cfg: ExperimentConfig, read: Sequence[str], environment: str) -> None:
    """Every key set must be read by what it configures.

    Raises:
        ConfigError: Naming the widest unread section or field: ``learner: not read by
            environment 'surrogate' (set: lr)``.
    """
    unread = [key for key in set_keys(cfg) if not _covered(key, read)]
    if not unread:
        return
    parts = unread[0].split(".")
    prefixes = (".".join(parts[:i]) for i in range(1, len(parts) + 1))
    where = next((prefix for prefix in prefixes if not _touches(prefix, read)), unread[0])
    fields = [key.removeprefix(f"{where}.") for key in unread if _covered(key, (where,))]
    detail = f" (set: {', '.join(fields)})" if fields != [where] else ""
    raise ConfigError(f"{where}: not read by environment {environment!r}{detail}")


def _param_error(where: str, error: ParameterError) -> ConfigError:
    return ConfigError(f"{where}.{error}" if error.key else f"{where}: {error.problem}")


def check_evolution(cfg: ExperimentConfig, roles: Sequence[str]) -> None:
    """Names, parameters and needs of the selection, ranking and operators.

    Args:
        cfg: The configuration.
        roles: Roles the environment has (their objectives must satisfy the schemes' needs).

    Raises:
        ConfigError: Naming the key.
    """
    from redqueen.evo.operators import CROSSOVERS, MUTATIONS
    from redqueen.evo.selection import SELECTIONS

    evo = cfg.evolution
    for field in ("selection", "ranking"):
        name = getattr(evo, field)
        if name not in SELECTIONS:
            known = ", ".join(sorted(SELECTIONS))
            raise ConfigError(
                f"evolution.{field}: unknown selection scheme {name!r} (known: {known})"
            )
    try:
        SELECTIONS.validate(evo.selection, evo.selection_params)
    except ParameterError as error:
        raise _param_error("evolution.selection_params", error) from None
    for name in evo.operators:
        if name not in MUTATIONS and name not in CROSSOVERS:
            known = ", ".join(sorted([*MUTATIONS, *CROSSOVERS]))
            raise ConfigError(f"evolution.operators.{name}: unknown operator (known: {known})")
    for name, params in evo.operator_params.items():
        check_operator_params(name, params)
    if evo.replace_every > 0:
        check_objective_counts(cfg, roles)
        for role in roles:
            size = _role_size(cfg, role)
            if evo.elitism > size > 0:
                raise ConfigError(
                    f"evolution.elitism: {evo.elitism} elites, but the {role} role has {size} "
                    f"members; use at most {size} (evolution.replace_every: 0 turns "
                    "replacement off)"
                )
    if cfg.matchmaking.hall_of_fame_share > 0 and evo.snapshot_every == 0:
        raise ConfigError(
            f"matchmaking.hall_of_fame_share: {cfg.matchmaking.hall_of_fame_share} needs past "
            "members, but evolution.snapshot_every is 0 (never snapshot)"
        )


def check_operator_params(name: str, params: Mapping[str, Any]) -> None:
    """An operator's parameters, and its ``n_parents`` against the arity it declares.

    Raises:
        ConfigError: ``evolution.operator_params.<name>.<key>: ...``.
    """
    from redqueen.evo.operators import CROSSOVERS, MUTATIONS

    where = f"evolution.operator_params.{name}"
    registry = MUTATIONS if name in MUTATIONS else CROSSOVERS
    params = dict(params)
    if "n_parents" in params:
        low, high = registry.needs(name).arity or (1, None)
        count = params.pop("n_parents")
        if registry is MUTATIONS:
            raise ConfigError(f"{where}.n_parents: a mutation takes one parent")
        if isinstance(count, bool) or not isinstance(count, int):
            raise ConfigError(f"{where}.n_parents: expected a whole number, got {count!r}")
        if count < low or (high is not None and count > high):
            takes = (
                f"exactly {low}"
                if low == high
                else f"at least {low}"
                if high is None
                else f"{low} to {high}"
            )
            raise ConfigError(
                f"{where}.n_parents: crossover {name!r} takes {takes} parents, got {count}"
            )
    try:
        registry.validate(name, params)
    except ParameterError as error:
        raise _param_error(where, error) from None


def check_objective_counts(cfg: ExperimentConfig, roles: Sequence[str]) -> None:
    """A scheme that needs several objectives must get them in every role it ranks or selects.

    Raises:
        ConfigError: Naming ``evolution.selection`` or ``evolution.ranking``.
    """
    from redqueen._registry import RunFacts
    from redqueen.evo.selection import SELECTIONS

    for field in ("selection", "ranking"):
        name = getattr(cfg.evolution, field)
        needs = SELECTIONS.needs(name)
        for role in roles:
            names = tuple(getattr(cfg.objectives, role, ()))
            if len(names) < needs.min_objectives:
                raise ConfigError(
                    f"evolution.{field}: {name!r} needs at least {needs.min_objectives} objectives "
                    f"per role, objectives.{role} has {len(names)} ({', '.join(names)})"
                )
        if needs.check is None or not roles:
            continue
        params = cfg.evolution.selection_params if field == "selection" else {}
        facts = RunFacts(
            objectives=min(len(tuple(getattr(cfg.objectives, role, ()))) for role in roles),
            members=min(_role_size(cfg, role) for role in roles),
        )
        reason = needs.check(SELECTIONS.effective_params(name, params), facts)
        if reason is not None:
            where = "evolution.selection_params" if field == "selection" else "evolution.ranking"
            raise ConfigError(f"{where}: {name!r}: {' '.join(str(reason).split())}")


def _role_size(cfg: ExperimentConfig, role: str) -> int:
    """Members of a role's sub-population (``teacher`` -> ``population.teachers``, ...)."""
    return cfg.population.size_of(role)


def check_objective_names(
    cfg: ExperimentConfig, roles: Sequence[str], provided: Mapping[str, Sequence[str]] | None
) -> None:
    """Objective names must be registered or carried by the environment's members.

    Raises:
        ConfigError: ``objectives.<role>: unknown objective ...``.
    """
    if provided is None:
        return
    from redqueen.fitness import OBJECTIVES

    for role in roles:
        known = {*OBJECTIVES, *provided.get(role, ())}
        for name in getattr(cfg.objectives, role, ()):
            if name not in known:
                raise ConfigError(
                    f"objectives.{role}: unknown objective {name!r} (known: {', '.join(sorted(known))})"
                )


__all__ = [
    "ALWAYS_READ",
    "environment_class",
    "check_config",
    "check_evolution",
    "check_keys_read",
    "check_objective_counts",
    "check_objective_names",
    "check_operator_params",
    "set_keys",
]
