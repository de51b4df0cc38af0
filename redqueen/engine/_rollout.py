"""What the learner learns from: :class:`Rollout`, :func:`whiten_advantages` and
:func:`whiten_pooled`."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

__all__ = ["MIN_WHITEN_GROUP", "Rollout", "whiten_advantages", "whiten_pooled"]

#: Fewest samples a group needs for its own mean and standard deviation (see :func:`whiten_pooled`).
MIN_WHITEN_GROUP = 16


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


def whiten_pooled(
    rewards: Sequence[float],
    levels: Sequence[Sequence[Hashable]],
    *,
    min_group: int = MIN_WHITEN_GROUP,
    eps: float = 1e-6,
) -> tuple[list[float], list[int]]:
    """Whiten rewards per group, pooling groups too small to estimate their own statistics.

    Each sample names its groups from the finest to the coarsest, e.g.
    ``((adapter, role, task_type), (role, task_type), (role,))``.

    Pooling rule: a sample is whitened with the mean and standard deviation of its finest group
    that holds at least ``min_group`` samples; if none does, with those of its coarsest group,
    whatever its size. A mean and a deviation estimated from three or four samples are mostly
    noise (and a group of one has no deviation at all, so it would carry no signal), while the
    pooled group shares the same role, and task type where it can. A group whose rewards are
    all equal gives zero advantages.

    Args:
        rewards: Scalar reward per sample.
        levels: Per sample, its group keys from finest to coarsest (the same number for all).
        min_group: Fewest samples a group needs for its own statistics.
        eps: Added to the standard deviation.

    Returns:
        One advantage per sample, in order, and per sample the index of the level whose
        statistics it used (0: its own finest group; higher: pooled).

    Raises:
        ValueError: If the lengths differ, a sample names no level, levels differ in number,
            or a reward is not finite.
    """
    if len(rewards) != len(levels):
        raise ValueError(f"whiten_pooled: {len(rewards)} rewards but {len(levels)} level keys")
    depth = len(levels[0]) if levels else 0
    if any(len(keys) != depth for keys in levels) or (levels and depth == 0):
        raise ValueError("whiten_pooled: every sample needs the same number (>= 1) of levels")
    members: dict[tuple[int, Hashable], list[float]] = defaultdict(list)
    for i, (reward, keys) in enumerate(zip(rewards, levels, strict=True)):
        if not math.isfinite(reward):
            raise ValueError(f"whiten_pooled: reward {i} is not finite ({reward})")
        for level, key in enumerate(keys):
            members[(level, key)].append(float(reward))
    moments = {}
    for group, values in members.items():
        mean = sum(values) / len(values)
        moments[group] = (mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)))
    advantages, used = [], []
    for reward, keys in zip(rewards, levels, strict=True):
        level = next(
            (lv for lv, key in enumerate(keys) if len(members[(lv, key)]) >= min_group),
            depth - 1,
        )
        mean, std = moments[(level, keys[level])]
        advantages.append(0.0 if std < eps else (float(reward) - mean) / (std + eps))
        used.append(level)
    return advantages, used
