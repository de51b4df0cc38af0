"""The run's own settings: logging sinks and checkpoints kept (``logging:``)."""

from __future__ import annotations

from pydantic import Field

from redqueen.settings._base import Settings

__all__ = ["LoggingSettings"]


class LoggingSettings(Settings):
    """Live monitoring sinks besides the run directory, and how many checkpoints stay on disk.

    Attributes:
        keep_checkpoints: The newest this many checkpoints are kept (0: keep all).
        tensorboard: TensorBoard event files; ``None``: when installed, silently off when not.
        wandb: Log to Weights & Biases.
        wandb_project: Its project.
        wandb_entity: Its entity (``None``: the account's default).
    """

    keep_checkpoints: int = Field(3, ge=0)
    tensorboard: bool | None = None
    wandb: bool = False
    wandb_project: str = "redqueen"
    wandb_entity: str | None = None
