"""The default backend: batched decoding with the host's PyTorch model and a KV cache."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor
from torch.nn import functional as F

from redqueen.engine._sampling import Generation, SamplingParams
from redqueen.engine.backends._base import BACKENDS

if TYPE_CHECKING:
    from redqueen.engine._host import AdapterHost

__all__ = ["HFBackend", "generate_in_chunks", "row_seeds"]

# Extra tokens decoded around a stop string: a token may decode to less than one character.
_STOP_MARGIN = 4


@BACKENDS.register("hf")
class HFBackend:
    """Decode mixed-adapter batches with the host's own model (any HF causal LM).

    Prompts are left-padded into one batch (chunked by the host's ``max_batch_size``); each
    row's adapter factors are gathered once per batch; decoding reuses the model's KV cache
    (``past_key_values``) and computes logits for the last position only. Rows stop on an
    end-of-sequence token, on one of their stop strings, or at their own token budget; the
    batch stops when every row has.

    Args:
        host: The :class:`~redqueen.engine.AdapterHost` whose model decodes.
    """

    def __init__(self, host: AdapterHost) -> None:
        self.host = host
        params = inspect.signature(host.model.forward).parameters
        self._keep_kw = next(
            (k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None
        )
        # Newer transformers name the key-value cache ``cache`` and deprecate ``past_key_values``.
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    def adapters_changed(self, adapter_ids: Sequence[str]) -> None:
        """Nothing to refresh: this backend reads the host's factors at every batch."""

    def generate(
        self,
        prompt_ids: Sequence[Sequence[int]],
        adapter_ids: Sequence[str | None],
        params: Sequence[SamplingParams],
    ) -> list[Generation]:
        """Sample one completion per row (see :class:`~redqueen.engine.backends.GenerationBackend`)."""
        return generate_in_chunks(
            prompt_ids, adapter_ids, params, self.host.max_batch_size, self._generate_batch
        )

    # -- one padded batch ------------------------------------------------------------------

    def _forward(self, **inputs: Tensor | object) -> tuple[Tensor, object]:
        if self._keep_kw is not None:
            inputs[self._keep_kw] = 1
        output = self.host.model(**inputs, use_cache=True)
        return output.logits[:, -1, :], output[self._cache_kw]

    @torch.inference_mode()
    def _generate_batch(
        self,
        prompt_ids: Sequence[Sequence[int]],
        adapter_ids: Sequence[str | None],
        params: Sequence[SamplingParams],
        streams: Sequence[torch.Generator] | None,
    ) -> list[Generation]:
        host, device = self.host, self.host.device
        batch = len(prompt_ids)
        width = max(len(p) for p in prompt_ids)
        input_ids = torch.full((batch, width), host.pad_token_id, dtype=torch.long)
        attention = torch.zeros((batch, width), dtype=torch.long)
        for row, ids in enumerate(prompt_ids):
            if len(ids) == 0:
                raise ValueError("cannot generate from an empty prompt (no tokens)")
            input_ids[row, width - len(ids) :] = torch.as_tensor(list(ids), dtype=torch.long)
            attention[row, width - len(ids) :] = 1
        input_ids, attention = input_ids.to(device), attention.to(device)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)

        budgets_list = [p.max_new_tokens for p in params]
        budgets = torch.tensor(budgets_list, device=device)
        sampler = _Sampler(params, device, streams)
        stops = [p.stop for p in params]
        watch_stops = any(stops)
        eos = torch.tensor(sorted(host.eos_token_ids) or [-1], device=device)
        max_new = max(budgets_list)

        tokens = torch.zeros((batch, max_new), dtype=torch.long, device=device)
        logprobs = torch.zeros((batch, max_new), dtype=torch.float32, device=device)
        lengths = torch.zeros(batch, dtype=torch.long, device=device)
        done = torch.zeros(batch, dtype=torch.bool, device=device)
        ended = torch.zeros(batch, dtype=torch.bool, device=device)  # by eos or stop string
        host_tokens: list[list[int]] = [[] for _ in range(batch)]
        stop_hit = [False] * batch

        with host.route_rows(adapter_ids):
            logits, cache = self._forward(
                input_ids=input_ids, attention_mask=attention, position_ids=positions
            )
            for step in range(max_new):
                logits = logits.float()
                next_tokens = sampler(logits)  # (batch,)
                token_logprobs = F.log_softmax(logits, dim=-1).gather(1, next_tokens[:, None])[:, 0]
                live = ~done
                tokens[:, step] = next_tokens
                logprobs[:, step] = token_logprobs
                lengths += live.long()
                is_eos = torch.isin(next_tokens, eos) & live
                ended |= is_eos
                done |= is_eos | (lengths >= budgets)
                if watch_stops:
                    self._check_stops(next_tokens, live, stops, host_tokens, stop_hit)
                    if any(stop_hit):
                        hit = torch.tensor(stop_hit, device=device)
                        ended |= hit
                        done |= hit
                if step + 1 == max_new or bool(done.all()):
                    break
                attention = torch.cat([attention, attention.new_ones(batch, 1)], dim=1)
                positions = positions[:, -1:] + 1
                logits, cache = self._forward(
                    input_ids=next_tokens[:, None],
                    attention_mask=attention,
                    position_ids=positions,
                    **{self._cache_kw: cache},
                )

        lengths_list = lengths.tolist()
        tokens_list = tokens.tolist()
        logprobs_list = logprobs.tolist()
        ended_list = ended.tolist()
        results = []
        for row in range(batch):
            n = lengths_list[row]
            ids = tokens_list[row][:n]
            text = str(host.tokenizer.decode(ids, skip_special_tokens=True))
            text = _cut_at_stop(text, stops[row])
            results.append(
                Generation(
                    text=text,
                    prompt_ids=list(prompt_ids[row]),
                    token_ids=ids,
                    logprobs=logprobs_list[row][:n],
                    finished=bool(ended_list[row]),
                )
            )
        return results

    def _check_stops(
        self,
        next_tokens: Tensor,
        live: Tensor,
        stops: Sequence[tuple[str, ...]],
        host_tokens: list[list[int]],
        stop_hit: list[bool],
    ) -> None:
        """Mark rows whose newest token completed one of their stop strings."""
        decode = self.host.tokenizer.decode
        for row, (token, is_live) in enumerate(
            zip(next_tokens.tolist(), live.tolist(), strict=True)
        ):
            if not is_live or not stops[row]:
                continue
            ids = host_tokens[row]
            ids.append(token)
            window = max(len(s) for s in stops[row]) + _STOP_MARGIN
            tail = decode(ids[-window:], skip_special_tokens=True)
            if any(s in tail for s in stops[row]):
                stop_hit[row] = True


def generate_in_chunks(
    prompt_ids: Sequence[Sequence[int]],
    adapter_ids: Sequence[str | None],
    params: Sequence[SamplingParams],
    size: int,
    generate_batch: Callable[..., list[Generation]],
) -> list[Generation]:
    """Rows in chunks of ``size``, each row sampling from its own seeded stream.

    One stream per row (:func:`row_seeds`), so that a row's sample does not depend on the rows
    beside it: sharded and single-process runs, and every backend, draw the same tokens.
    ``generate_batch(prompts, adapters, params, streams)`` decodes one chunk.
    """
    seed = params[0].seed if params else None
    streams = None
    if seed is not None:
        streams = [
            torch.Generator().manual_seed(s) for s in row_seeds(seed, prompt_ids, adapter_ids)
        ]
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


def _cut_at_stop(text: str, stops: Sequence[str]) -> str:
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    return text if cut < 0 else text[:cut]


class _Sampler:
    """Per-row temperature, top-p and greedy choice over float32 logits (batch, vocab)."""

    def __init__(
        self,
        params: Sequence[SamplingParams],
        device: torch.device,
        streams: Sequence[torch.Generator] | None,
    ):
        self.streams = streams
        self.device = device
        self.all_greedy = all(p.greedy for p in params)
        self.any_greedy = any(p.greedy for p in params)
        self.greedy = torch.tensor([p.greedy for p in params], device=device)
        temps = [p.temperature if not p.greedy else 1.0 for p in params]
        self.unit_temperature = all(t == 1.0 for t in temps)
        self.temperature = torch.tensor(temps, device=device)[:, None]
        self.use_top_p = any(p.top_p < 1.0 for p in params)
        self.top_p = torch.tensor([p.top_p for p in params], device=device)[:, None]

    def __call__(self, logits: Tensor) -> Tensor:
        if self.all_greedy:
            return logits.argmax(dim=-1)
        scaled = logits if self.unit_temperature else logits / self.temperature
        probs = torch.softmax(scaled, dim=-1)
        if self.use_top_p:
            sorted_probs, order = probs.sort(dim=-1, descending=True)
            # Drop a token once the mass before it already reaches top_p (the first always stays).
            drop = (sorted_probs.cumsum(dim=-1) - sorted_probs) >= self.top_p
            sorted_probs = sorted_probs.masked_fill(drop, 0.0)
            probs = torch.zeros_like(probs).scatter_(1, order, sorted_probs)
        if self.streams is None:
            sampled = torch.multinomial(probs, 1)[:, 0]
        else:
            # Inverse CDF with one uniform per row from the row's own stream.
            u = torch.cat([torch.rand(1, generator=g, dtype=torch.float64) for g in self.streams])
            cdf = probs.cumsum(dim=-1)  # (batch, vocab)
            target = u.to(self.device, cdf.dtype)[:, None] * cdf[:, -1:]
            sampled = torch.searchsorted(cdf, target, right=True)[:, 0]
            sampled = sampled.clamp_(max=probs.shape[-1] - 1)
        if self.any_greedy:
            sampled = torch.where(self.greedy, logits.argmax(dim=-1), sampled)
        return sampled
