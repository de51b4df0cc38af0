"""What every generation backend shares: seeds per row, chunking, padding, sampling steps,
stop strings and the assembly of results.

Each rule lives here once, so that the backends agree by construction: the same row draws the
same uniforms in every backend and worker layout (:func:`row_seeds`), a stop string cuts the
text at the same place (:func:`cut_at_stop`), and a row ends by the same test
(:func:`completes_stop`, used by :class:`~redqueen.engine.backends._row_ends.RowEnds`).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from redqueen.engine._sampling import Generation, SamplingParams
from redqueen.engine.backends._base import TokenDecoder

__all__ = [
    "STOP_MARGIN",
    "BatchDecoder",
    "call_row_seeds",
    "completes_stop",
    "cut_at_stop",
    "forward_keywords",
    "generate_in_chunks",
    "generations",
    "invert_cdf",
    "left_pad",
    "prompt_positions",
    "row_seeds",
    "row_streams",
    "text_decoder",
    "token_logprobs",
    "top_p_filter",
]

#: Extra tokens decoded around a stop string: a token may decode to less than one character.
STOP_MARGIN = 4

#: Decodes one chunk: ``(prompt_ids, adapter_ids, params, streams) -> generations``.
BatchDecoder = Callable[
    [
        Sequence[Sequence[int]],
        Sequence[str | None],
        Sequence[SamplingParams],
        Sequence[torch.Generator] | None,
    ],
    list[Generation],
]


# -- seeds and chunks ----------------------------------------------------------------------


def row_seeds(
    seed: int, prompt_ids: Sequence[Sequence[int]], adapter_ids: Sequence[str | None]
) -> list[int]:
    """A seed per row from the call seed, the row's adapter, prompt and repeat index.

    The key names the row by what it is, not by where it sits: the k-th row with a given
    (adapter, prompt) gets the same seed however the rows are split across batches or workers
    (a split that keeps each adapter's rows in order), so every backend and worker layout
    samples the same tokens for it.
    """
    seen: dict[tuple[str, tuple[int, ...]], int] = {}
    seeds = []
    for ids, adapter in zip(prompt_ids, adapter_ids, strict=True):
        key = ("" if adapter is None else adapter, tuple(int(i) for i in ids))
        repeat = seen.get(key, 0)
        seen[key] = repeat + 1
        digest = hashlib.blake2b(
            repr((int(seed), key[0], repeat, key[1])).encode(), digest_size=8
        ).digest()
        seeds.append(int.from_bytes(digest, "little") >> 1)
    return seeds


def call_row_seeds(
    prompt_ids: Sequence[Sequence[int]],
    adapter_ids: Sequence[str | None],
    params: Sequence[SamplingParams],
) -> list[int] | None:
    """:func:`row_seeds` from the call's seed (every row's, checked by the host), or ``None``
    for an unseeded call, which draws from torch's global RNG."""
    seed = params[0].seed if params else None
    return None if seed is None else row_seeds(seed, prompt_ids, adapter_ids)


def row_streams(
    prompt_ids: Sequence[Sequence[int]],
    adapter_ids: Sequence[str | None],
    params: Sequence[SamplingParams],
) -> list[torch.Generator] | None:
    """One CPU generator per row seeded by :func:`call_row_seeds` (``None``: unseeded)."""
    seeds = call_row_seeds(prompt_ids, adapter_ids, params)
    return None if seeds is None else [torch.Generator().manual_seed(s) for s in seeds]


def generate_in_chunks(
    prompt_ids: Sequence[Sequence[int]],
    adapter_ids: Sequence[str | None],
    params: Sequence[SamplingParams],
    size: int,
    generate_batch: BatchDecoder,
) -> list[Generation]:
    """Rows in chunks of ``size``, each row sampling from its own seeded stream.

    One stream per row (:func:`row_streams`), so that a row's sample does not depend on the
    rows beside it: sharded and single-process runs, and every backend, draw the same tokens.
    ``generate_batch(prompts, adapters, params, streams)`` decodes one chunk.
    """
    streams = row_streams(prompt_ids, adapter_ids, params)
    out: list[Generation] = []
    for start in range(0, len(prompt_ids), size):
        stop = start + size
        out.extend(
            generate_batch(
                prompt_ids[start:stop],
                adapter_ids[start:stop],
                params[start:stop],
                None if streams is None else streams[start:stop],
            )
        )
    return out


# -- the model's inputs --------------------------------------------------------------------


def forward_keywords(model: nn.Module) -> tuple[str | None, str]:
    """Names the model's forward gives two options: keep only the last logits, and the cache.

    Returns:
        ``(keep, cache)``: ``"logits_to_keep"`` or ``"num_logits_to_keep"`` (``None`` if the
        forward has neither), and ``"cache"`` (newer transformers) or ``"past_key_values"``.
    """
    params = inspect.signature(model.forward).parameters
    keep = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None)
    return keep, "cache" if "cache" in params else "past_key_values"


def left_pad(
    prompt_ids: Sequence[Sequence[int]], pad_token_id: int, rows: int | None = None
) -> tuple[Tensor, Tensor]:
    """Prompts left-padded into one CPU batch ``(rows, width)``: token ids and a bool mask.

    Rows beyond the prompts (``rows > len(prompt_ids)``, a fixed batch shape) hold one
    padding token that counts as real, so that no row attends to nothing.

    Raises:
        ValueError: If a prompt has no tokens.
    """
    if any(len(ids) == 0 for ids in prompt_ids):
        raise ValueError("cannot generate from an empty prompt (no tokens)")
    batch = len(prompt_ids)
    rows = batch if rows is None else rows
    width = max(len(p) for p in prompt_ids)
    input_ids = torch.full((rows, width), pad_token_id, dtype=torch.long)
    valid = torch.zeros((rows, width), dtype=torch.bool)
    valid[batch:, -1] = True
    for row, ids in enumerate(prompt_ids):
        input_ids[row, width - len(ids) :] = torch.as_tensor(list(ids), dtype=torch.long)
        valid[row, width - len(ids) :] = True
    return input_ids, valid


def prompt_positions(valid: Tensor) -> Tensor:
    """Position of each token of left-padded rows (padding at 0), from their mask."""
    return (valid.long().cumsum(-1) - 1).clamp(min=0)


# -- one sampling step ---------------------------------------------------------------------


def top_p_filter(probs: Tensor, top_p: Tensor) -> Tensor:
    """Nucleus filter of ``(batch, vocab)`` probabilities, ``top_p`` a ``(batch, 1)`` column.

    A token is dropped once the mass before it already reaches ``top_p`` (the most likely
    token always stays); the rest keep their probabilities, unnormalised.
    """
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    drop = (sorted_probs.cumsum(dim=-1) - sorted_probs) >= top_p
    sorted_probs = sorted_probs.masked_fill(drop, 0.0)
    return torch.zeros_like(probs).scatter_(1, order, sorted_probs)


def invert_cdf(probs: Tensor, uniforms: Tensor) -> Tensor:
    """One token per row: the inverse CDF of its (unnormalised) probabilities at its uniform.

    Args:
        probs: ``(batch, vocab)`` probabilities, any positive scale.
        uniforms: ``(batch, 1)`` draws in ``[0, 1)``, on ``probs``'s device.
    """
    cdf = probs.cumsum(dim=-1)  # (batch, vocab)
    target = uniforms.to(cdf.dtype) * cdf[:, -1:]
    tokens = torch.searchsorted(cdf, target, right=True)[:, 0]
    return tokens.clamp_(max=probs.shape[-1] - 1)


def token_logprobs(logits: Tensor, tokens: Tensor) -> Tensor:
    """``(batch,)`` log-probabilities of ``tokens`` under float32 ``(batch, vocab)`` logits
    (the unmodified policy: temperature 1, no top-p)."""
    return F.log_softmax(logits, dim=-1).gather(1, tokens[:, None])[:, 0]


# -- stop strings and results --------------------------------------------------------------


def text_decoder(tokenizer: TokenDecoder) -> Callable[[list[int]], str]:
    """Token ids -> text with special tokens skipped, the way every backend reads them."""

    def decode(ids: list[int]) -> str:
        return str(tokenizer.decode(ids, skip_special_tokens=True))

    return decode


def completes_stop(
    seen: list[int], stops: Sequence[str], decode: Callable[[list[int]], str]
) -> bool:
    """Whether the newest of a row's tokens ``seen`` completed one of its stop strings.

    Only the last few tokens are decoded (enough for the longest stop string), so the test
    costs the same at every step.
    """
    window = max(len(s) for s in stops) + STOP_MARGIN
    tail = decode(seen[-window:])
    return any(s in tail for s in stops)


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    """``text`` up to (not including) the first occurrence of any stop string."""
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    return text if cut < 0 else text[:cut]


def generations(
    prompt_ids: Sequence[Sequence[int]],
    params: Sequence[SamplingParams],
    tokens: list[list[int]],
    logprobs: list[list[float]],
    lengths: Sequence[int],
    finished: Sequence[bool],
    decode: Callable[[list[int]], str],
) -> list[Generation]:
    """One :class:`Generation` per row: its first ``lengths[row]`` tokens and log-probabilities,
    and their text cut at the row's first stop string."""
    results = []
    for row, n in enumerate(lengths):
        ids = tokens[row][:n]
        results.append(
            Generation(
                text=cut_at_stop(decode(ids), params[row].stop),
                prompt_ids=list(prompt_ids[row]),
                token_ids=ids,
                logprobs=logprobs[row][:n],
                finished=bool(finished[row]),
            )
        )
    return results
