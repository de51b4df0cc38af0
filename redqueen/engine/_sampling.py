"""Records that go in and out of generation: :class:`SamplingParams` and :class:`Generation`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Generation", "SamplingParams"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion (or ``n`` of them) for a prompt.

    Args:
        max_new_tokens: Token budget of the completion.
        temperature: Softmax temperature; ``0`` means greedy decoding (argmax).
        top_p: Nucleus sampling mass in ``(0, 1]``; ``1`` keeps the whole distribution.
        stop: Strings that end the completion; the returned text stops before the first one
            (the token that completed it stays in ``token_ids``, as the policy produced it).
        seed: Seed of the call's ``torch.Generator``; ``None`` draws from torch's global RNG.
        n: Completions per prompt; they come back next to each other, prompt by prompt.

    Raises:
        ValueError: If a field is out of range (the field is named).
    """

    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None
    n: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))
        if self.max_new_tokens < 1:
            raise ValueError(
                f"SamplingParams.max_new_tokens must be >= 1, got {self.max_new_tokens}"
            )
        if not (self.temperature >= 0.0 and math.isfinite(self.temperature)):
            raise ValueError(f"SamplingParams.temperature must be >= 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"SamplingParams.top_p must be in (0, 1], got {self.top_p}")
        if self.n < 1:
            raise ValueError(f"SamplingParams.n must be >= 1, got {self.n}")
        if any(not s for s in self.stop):
            raise ValueError("SamplingParams.stop must not contain empty strings")

    @property
    def greedy(self) -> bool:
        """Whether decoding takes the argmax (temperature 0)."""
        return self.temperature == 0.0


@dataclass(frozen=True)
class Generation:
    """One sampled completion.

    Args:
        text: Decoded completion, special tokens removed, cut before the first stop string.
        prompt_ids: Prompt token ids, without padding.
        token_ids: Sampled token ids, including the end-of-sequence token or the token that
            completed a stop string.
        logprobs: Log-probability of each sampled token under the *unmodified* policy
            (temperature 1, no top-p), because the learner's ratio is taken at temperature 1.
        finished: ``True`` if a stop string or end-of-sequence token ended the completion,
            ``False`` if the token budget did.
    """

    text: str
    prompt_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    finished: bool


def rows_sampling(
    prompts: Sequence[str],
    adapter_ids: Sequence[str | None],
    sampling: SamplingParams | Sequence[SamplingParams] | None,
) -> list[SamplingParams]:
    """One :class:`SamplingParams` per prompt, checked the way every backend's ``generate`` needs.

    Raises:
        ValueError: If the lengths disagree or the per-prompt seeds differ.
    """
    if len(adapter_ids) != len(prompts):
        raise ValueError(f"generate: {len(prompts)} prompts but {len(adapter_ids)} adapter_ids")
    sampling = SamplingParams() if sampling is None else sampling
    per_row = [sampling] * len(prompts) if isinstance(sampling, SamplingParams) else list(sampling)
    if len(per_row) != len(prompts):
        raise ValueError(f"generate: {len(prompts)} prompts but {len(per_row)} SamplingParams")
    if len({p.seed for p in per_row}) > 1:
        raise ValueError("generate: all SamplingParams of one call must share one seed")
    return per_row

