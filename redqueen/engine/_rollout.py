"""What the learner learns from: :class:`Rollout` and :func:`whiten_advantages`."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

__all__ = ["Rollout", "whiten_advantages"]


@dataclass(frozen=True)
class Rollout:
    """One sampled completion with its advantage, ready for a policy-gradient step.

    Args:
        prompt_ids: Prompt token ids (no padding).
        token_ids: Sampled completion token ids.
        logprobs: Log-probabilities of ``token_ids`` under the policy that sampled them
            (temperature 1), as :class:`~redqueen.engine.Generation` stores them.
        advantage: Scalar advantage of the whole completion (every token gets it).

    Raises:
        ValueError: If ``logprobs`` and ``token_ids`` differ in length, the completion is empty
            or the advantage is not finite.
    """

    prompt_ids: tuple[int, ...]
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    advantage: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "prompt_ids", tuple(int(t) for t in self.prompt_ids))
        object.__setattr__(self, "token_ids", tuple(int(t) for t in self.token_ids))
        object.__setattr__(self, "logprobs", tuple(float(x) for x in self.logprobs))
        object.__setattr__(self, "advantage", float(self.advantage))
        if len(self.token_ids) != len(self.logprobs):
            raise ValueError(
                f"Rollout: {len(self.token_ids)} token_ids but {len(self.logprobs)} logprobs"
            )
        if not self.token_ids:
            raise ValueError("Rollout: token_ids is empty; there is nothing to learn from")
        if not self.prompt_ids:
            raise ValueError("Rollout: prompt_ids is empty")
        if not math.isfinite(self.advantage):
            raise ValueError(f"Rollout: advantage must be finite, got {self.advantage}")


def whiten_advantages(
    rewards: Sequence[float], groups: Sequence[Hashable], *, eps: float = 1e-6
) -> list[float]:
    """Normalise rewards to zero mean and unit variance within each group.

    REINFORCE++ replaces a learned critic by whitening rewards over a batch; PopuLoRA whitens
    per (role, task type), so that an easy task type with high rewards does not drown out a hard
    one. A group whose rewards are all equal gets zero advantages: it carries no signal about
    which of its samples were better.

    Args:
        rewards: Scalar reward per sample.
        groups: Group key per sample, e.g. ``("student", "code_o")``.
        eps: Added to the standard deviation.

    Returns:
        One advantage per sample, in order.

    Raises:
        ValueError: If the lengths differ or a reward is not finite.
    """
    if len(rewards) != len(groups):
        raise ValueError(f"whiten_advantages: {len(rewards)} rewards but {len(groups)} groups")
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, (reward, group) in enumerate(zip(rewards, groups, strict=True)):
        if not math.isfinite(reward):
            raise ValueError(f"whiten_advantages: reward {i} is not finite ({reward})")
        members[group].append(i)
    out = [0.0] * len(rewards)
    for idx in members.values():
        values = [float(rewards[i]) for i in idx]
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        if std < eps:
            continue
        for i, v in zip(idx, values, strict=True):
            out[i] = (v - mean) / (std + eps)
    return out
