"""What a learner step reports (:class:`LearnerStats`) and what a learner checkpoints
(:class:`LearnerState`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

__all__ = ["LearnerState", "LearnerStats", "MinibatchUpdate"]


class LearnerState(TypedDict):
    """A learner's checkpoint: its settings and each adapter's optimizer state."""

    config: dict[str, object]
    optimizers: dict[str, dict[str, object]]


@dataclass(frozen=True)
class LearnerStats:
    """What one :meth:`Learner.step` did.

    Args:
        loss: Clipped surrogate loss (token mean) of the last update; ``nan`` or ``inf`` when
            the step was skipped for that reason.
        skipped: ``True`` if the update was not applied (non-finite loss or gradient).
        grad_norm: Gradient norm before clipping (of the last update).
        n_tokens: Completion tokens in the batch (the loss is their mean).
        clip_fraction: Share of tokens whose ratio was clipped, over the tokens of rollouts that
            were run (nonzero advantage, or all with a KL term), over every epoch.
        approx_kl: Mean of ``old - new`` log-probability over the same tokens (policy drift).
        kl_from_base: Mean per-token KL divergence of the adapter's policy (the one that sampled
            the rollouts, before this update) from the base model's, on its rollouts (see
            :func:`~redqueen.engine._learner_probes.kl_from_base`).
        weight_change: ``||dW|| / ||W||`` of the adapter's whole update against the base weights
            it adapts, after the update.
        tokens_trained: Completion tokens run through a forward and backward pass, summed over
            epochs (the learner's compute, for budget-matched comparisons).
        updates: Optimizer steps applied.
    """

    loss: float
    skipped: bool
    grad_norm: float
    n_tokens: int
    clip_fraction: float = 0.0
    approx_kl: float = 0.0
    kl_from_base: float = 0.0
    weight_change: float = 0.0
    tokens_trained: int = 0
    updates: int = 0

    def result(self) -> LearnerStats:
        """These statistics (a local step is done when it returns; see ``StepStats``)."""
        return self


@dataclass(frozen=True)
class MinibatchUpdate:
    """What one optimizer step on one minibatch did (sums, for the step's means)."""

    loss: float
    grad_norm: float
    finite: bool
    clipped: float
    drift: float
    tokens: int
