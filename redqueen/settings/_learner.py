"""The REINFORCE++ learner's settings (``learner:``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from redqueen.settings._base import Settings

__all__ = ["LearnerSettings"]

#: One AdamW beta: torch refuses any outside ``[0, 1)``, but only when the optimizer is built.
_Beta = Annotated[float, Field(ge=0, lt=1)]


class LearnerSettings(Settings):
    """Hyper-parameters of the policy-gradient update: per adapter per step, ``epochs``
    passes over its rollouts, each split into ``minibatches`` optimizer steps.

    Attributes:
        lr: AdamW learning rate; ``0`` runs the same computation without moving the weights
            (the control of an experiment on what learning adds).
        clip: PPO ratio clip epsilon (the ratio is kept in ``[1 - clip, 1 + clip]``).
        max_grad_norm: Global gradient-norm clip over the adapter's factors.
        weight_decay: AdamW weight decay.
        betas: AdamW betas, each in ``[0, 1)``.
        eps: AdamW epsilon.
        kl_coef: REINFORCE++ per-token KL penalty against the base model (no adapter),
            folded into the returns; ``0`` (the default) skips the reference forward entirely.
        micro_batch_size: Rollouts per forward/backward pass; gradients accumulate across
            micro-batches, so the update does not depend on it.
        epochs: PPO epochs: passes over the step's rollouts, each ratio taken against the
            log-probabilities the rollouts were sampled with.
        minibatches: Optimizer steps per epoch; the rollouts are split into this many
            minibatches (a fixed shuffle per epoch), so one step makes ``epochs * minibatches``
            updates.

    Raises:
        pydantic.ValidationError: (a ``ValueError``) naming a field out of range.
    """

    lr: float = Field(1e-4, ge=0, le=10)
    clip: float = Field(0.2, gt=0, le=100)
    max_grad_norm: float = Field(1.0, gt=0, le=1e6)
    weight_decay: float = Field(0.0, ge=0, le=100)
    betas: tuple[_Beta, _Beta] = (0.9, 0.999)
    eps: float = Field(1e-8, gt=0, le=1)
    kl_coef: float = Field(0.0, ge=0, le=1e6)
    micro_batch_size: int = Field(16, ge=1, le=1_000_000)
    epochs: int = Field(1, ge=1, le=1_000)
    minibatches: int = Field(1, ge=1, le=100_000)

    @field_validator("betas", mode="before")
    @classmethod
    def _no_bool_betas(cls, value: object) -> object:
        # YAML's true/false would otherwise pass as 1.0/0.0.
        if isinstance(value, list | tuple) and any(isinstance(item, bool) for item in value):
            raise ValueError("Input should be two numbers, not true/false")
        return value
