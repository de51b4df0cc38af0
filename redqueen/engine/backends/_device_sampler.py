"""Per-row seeded sampling on the device, with the ``hf`` backend's draws.

The ``hf`` backend draws one float64 uniform per row and step from the row's own CPU
``torch.Generator`` (seeded by :func:`~redqueen.engine.backends._common.row_seeds`) and inverts the
row's CDF with it. A generator's first ``n`` draws are the same whether taken one at a time or
as one ``torch.rand(n)``, so :class:`DeviceSampler` takes each row's draws for the whole call
up front, moves them to the device once, and indexes them by a step counter held on the device:
the same uniform meets the same CDF, so both backends sample the same tokens, and a decode step
needs no host round trip (nor any Python work per row).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from redqueen.engine._sampling import SamplingParams
from redqueen.engine.backends._common import invert_cdf, token_logprobs, top_p_filter

__all__ = ["DeviceSampler"]


class DeviceSampler:
    """Temperature, top-p and greedy choice for ``(batch, vocab)`` logits, one row per stream.

    Args:
        params: Sampling parameters per row.
        streams: One seeded generator per row, or ``None`` to draw from torch's global RNG.
        steps: Most tokens any row samples (draws taken per row).
        device: Where sampling runs.
        rows: Rows of the decode batch (at least ``len(params)``; extra rows are greedy).
    """

    def __init__(
        self,
        params: Sequence[SamplingParams],
        streams: Sequence[torch.Generator] | None,
        *,
        steps: int,
        device: torch.device,
        rows: int | None = None,
    ) -> None:
        rows = len(params) if rows is None else rows
        pad = rows - len(params)
        greedy = [p.greedy for p in params] + [True] * pad
        self.all_greedy = all(greedy)
        self.use_top_p = any(p.top_p < 1.0 for p in params)
        self.greedy = torch.tensor(greedy, device=device)[:, None]
        temps = [1.0 if p.greedy else p.temperature for p in params] + [1.0] * pad
        self.temperature = torch.tensor(temps, device=device)[:, None]
        self.top_p = torch.tensor([p.top_p for p in params] + [1.0] * pad, device=device)[:, None]
        self.uniforms = torch.zeros(rows, steps, dtype=torch.float64, device=device)
        if not self.all_greedy:
            if streams is None:
                draws = torch.rand(len(params), steps, dtype=torch.float64)
            else:
                draws = torch.stack(
                    [torch.rand(steps, generator=g, dtype=torch.float64) for g in streams]
                )
            self.uniforms[: len(params)] = draws.to(device)

    def select_rows(self, index: Tensor) -> DeviceSampler:
        """A sampler for the rows at ``index`` only, with their settings and draws."""
        chosen = object.__new__(DeviceSampler)
        for name in ("greedy", "temperature", "top_p", "uniforms"):
            setattr(chosen, name, getattr(self, name).index_select(0, index))
        chosen.all_greedy, chosen.use_top_p = self.all_greedy, self.use_top_p
        return chosen

    @property
    def mode(self) -> tuple[bool, bool]:
        """What changes the captured computation: ``(all greedy, any top-p)``."""
        return self.all_greedy, self.use_top_p

    def load(self, other: DeviceSampler) -> None:
        """Copy another sampler's per-row settings into this one's tensors, in place."""
        for name in ("greedy", "temperature", "top_p", "uniforms"):
            mine, theirs = getattr(self, name), getattr(other, name)
            mine.zero_()
            mine[:, : theirs.shape[1]].copy_(theirs)
        self.all_greedy, self.use_top_p = other.all_greedy, other.use_top_p

    def __call__(self, logits: Tensor, step: Tensor) -> tuple[Tensor, Tensor]:
        """Sample one token per row at ``step`` (a ``(1,)`` device tensor).

        Returns:
            ``(tokens, logprobs)``, both ``(batch,)``; the log-probabilities are those of the
            unmodified policy (temperature 1, no top-p).
        """
        logits = logits.float()
        best = logits.argmax(dim=-1)
        if self.all_greedy:
            tokens = best
        else:
            probs = torch.softmax(logits / self.temperature, dim=-1)
            if self.use_top_p:
                probs = top_p_filter(probs, self.top_p)
            drawn = invert_cdf(probs, self.uniforms.index_select(1, step))  # (batch,)
            tokens = torch.where(self.greedy[:, 0], best, drawn)
        return tokens, token_logprobs(logits, tokens)
