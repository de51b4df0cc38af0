"""Rollouts as padded tensors: :class:`RolloutBatch`, what the learner's forward passes take."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from redqueen.engine._rollout import Rollout

__all__ = ["RolloutBatch"]


@dataclass(frozen=True)
class RolloutBatch:
    """Rollouts as tensors: prompts left-padded, completions right-padded, one shared split column."""

    input_ids: Tensor  # (batch, prompt_width + completion_width)
    attention_mask: Tensor
    position_ids: Tensor
    old_logprobs: Tensor  # (batch, completion_width)
    advantages: Tensor  # (batch, completion_width)
    mask: Tensor  # (batch, completion_width), bool
    completion_width: int

    @classmethod
    def build(cls, rollouts: Sequence[Rollout], pad_id: int, device: torch.device) -> RolloutBatch:
        prompt_width = max(len(r.prompt_ids) for r in rollouts)
        width = max(len(r.token_ids) for r in rollouts)
        n = len(rollouts)
        ids = torch.full((n, prompt_width + width), pad_id, dtype=torch.long)
        attention = torch.zeros((n, prompt_width + width), dtype=torch.long)
        old = torch.zeros((n, width), dtype=torch.float32)
        mask = torch.zeros((n, width), dtype=torch.bool)
        for i, r in enumerate(rollouts):
            p, c = len(r.prompt_ids), len(r.token_ids)
            ids[i, prompt_width - p : prompt_width] = torch.tensor(r.prompt_ids)
            ids[i, prompt_width : prompt_width + c] = torch.tensor(r.token_ids)
            attention[i, prompt_width - p : prompt_width + c] = 1
            old[i, :c] = torch.tensor(r.logprobs)
            mask[i, :c] = True
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        advantages = torch.tensor([r.advantage for r in rollouts], dtype=torch.float32)[
            :, None
        ].expand(n, width)
        return cls(
            input_ids=ids.to(device),
            attention_mask=attention.to(device),
            position_ids=positions.to(device),
            old_logprobs=old.to(device),
            advantages=advantages.to(device),
            mask=mask.to(device),
            completion_width=width,
        )
