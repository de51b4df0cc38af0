"""Building the games environment from an experiment configuration (``environment.options``)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from redqueen.environments.games import GAMES, GamesEnv
from redqueen.experiments.config import ConfigError, ExperimentConfig

__all__ = ["build_games", "check_games", "own_settings"]


def own_settings(cls: type[object]) -> list[str]:
    """The keyword-only settings of the environment class ``cls``."""
    return [
        p.name
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.kind is p.KEYWORD_ONLY
    ]


def check_games(cfg: ExperimentConfig) -> None:
    """Check ``environment.options`` of a games run without building it (run by
    ``check_config``, so that a bad game or setting is one line before anything is printed).

    Raises:
        ConfigError: As :func:`build_games` does for the game and its settings.
    """
    _game_and_options(cfg, frozenset())


def _game_and_options(
    cfg: ExperimentConfig, standard: frozenset[str]
) -> tuple[Any, dict[str, Any]]:
    """The game built from ``environment.options`` and the options left for the environment."""
    options = dict(cfg.environment.options)
    name = options.pop("game", "ladder")
    if not isinstance(name, str) or name not in GAMES:
        raise ConfigError(
            f"environment.options.game: unknown game {name!r} (known: {', '.join(sorted(GAMES))})"
        )
    game_cls = GAMES[name]
    own = set(own_settings(GamesEnv)) - {"game", "game_params"} - standard
    game_params = {k: options.pop(k) for k in list(options) if k in game_cls.parameters()}
    for key in options:
        if key not in own:
            known = ", ".join(sorted(own | set(game_cls.parameters())))
            raise ConfigError(
                f"environment.options.{key}: not a setting of game {name!r} (accepted: {known})"
            )
    try:
        game = game_cls(**GAMES.validate(name, game_params))  # the game's declared parameters
    except (TypeError, ValueError) as error:
        raise ConfigError(f"environment.options.{error}") from None
    return game, options


def build_games(cfg: ExperimentConfig, standard: Mapping[str, Any]) -> GamesEnv:
    """Build the games environment from ``cfg``: ``environment.options`` holds ``game``, the
    game's settings and the environment's own; the standard settings (population, rewards,
    replacement, matchmaking, objectives, seed) come from ``standard`` (keyword -> value).

    Raises:
        ConfigError: One line naming the option: an unknown game, a setting neither the game nor
            the environment has, or a value either refuses.
    """
    game, options = _game_and_options(cfg, frozenset(standard))
    kwargs = {k: value for k, value in standard.items() if k in own_settings(GamesEnv)}
    try:
        return GamesEnv(game=game, **kwargs, **options)
    except (TypeError, ValueError) as error:
        field = str(error).split(":", 1)[0]
        where = (
            f"environment.options.{error}"
            if field in options
            else f"environment: cannot build 'games': {error}"
        )
        raise ConfigError(where) from None
