"""The games environment's own settings (``environment.options``): the game and how it is played."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator

from redqueen._registry import ParameterError
from redqueen.environments.games._base import GAMES
from redqueen.settings import Settings

__all__ = ["GamesOptions"]


class GamesOptions(Settings):
    """Which game is played, its settings, and the environment's own (``environment.options``).

    The game's settings sit beside ``game`` in the configuration (``game: ladder``,
    ``coupling: 0.5``); they are gathered into :attr:`game_params`, checked against the game's
    declared parameters, and the game is built once to check its own ranges.

    Attributes:
        game: A name in :data:`redqueen.environments.games.GAMES`.
        game_params: The game's settings (filled from the keys beside ``game``).
        hidden: Hidden width of the frozen MLP.
        exploration: Std of the Gaussian policy around a member's point.
        domain: A task with a coordinate beyond it (or not finite) is invalid.
        learn: Whether members take the REINFORCE step.
        lr: Learning rate of that step.
        max_grad_norm: Gradient norm clip of that step.
        window: Steps over which the ``collapse`` slope is fitted.
    """

    game: str = "ladder"
    game_params: dict[str, Any] = Field(default_factory=dict)
    hidden: int = Field(8, ge=1, le=65_536)
    exploration: float = Field(0.5, gt=0)
    domain: float = Field(20.0, gt=0)
    learn: bool = True
    lr: float = Field(0.05, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    window: int = Field(10, ge=1, le=1_000_000)

    _FREE_FORM = ("game_params",)

    @model_validator(mode="before")
    @classmethod
    def _gather_game_settings(cls, data: object) -> object:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        name = data.pop("game", "ladder")
        if not isinstance(name, str) or name not in GAMES:
            raise ValueError(f"game: unknown game {name!r} (known: {', '.join(sorted(GAMES))})")
        game_cls = GAMES[name]
        own = set(cls.model_fields) - {"game", "game_params"}
        params = dict(data.pop("game_params", None) or {})
        for key in list(data):
            if key in game_cls.parameters():
                params[key] = data.pop(key)
            elif key not in own:
                known = ", ".join(sorted(own | set(game_cls.parameters())))
                raise ValueError(f"{key}: not a setting of game {name!r} (accepted: {known})")
        try:
            params = GAMES.validate(name, params)  # the game's declared parameters
            game_cls(**params)  # and its own checks of their ranges
        except (ParameterError, TypeError, ValueError) as error:
            raise ValueError(str(error)) from None
        return {**data, "game": name, "game_params": params}
