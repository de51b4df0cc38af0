"""The default backend: batched decoding with the host's PyTorch model and a KV cache."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from redqueen.engine._sampling import Generation, SamplingParams
from redqueen.engine.backends._base import BACKENDS, BackendHost
from redqueen.engine.backends._common import (
    forward_keywords,
    generate_in_chunks,
    generations,
    invert_cdf,
    left_pad,
    prompt_positions,
    text_decoder,
    token_logprobs,
    top_p_filter,
)
from redqueen.engine.backends._row_ends import RowEnds

__all__ = ["HFBackend"]


@BACKENDS.register("hf")
class HFBackend:
    """Decode mixed-adapter batches with the host's own model (any HF causal LM).

    Prompts are left-padded into one batch (chunked by the host's ``max_batch_size``); each
    row's adapter factors are gathered once per batch; decoding reuses the model's KV cache
    (``past_key_values``) and computes logits for the last position only. Rows stop on an
    end-of-sequence token, on one of their stop strings, or at their own token budget
    (:class:`~redqueen.engine.backends._row_ends.RowEnds`); the batch stops when every row has.

    Args:
        host: The host whose model decodes (an :class:`~redqueen.engine.AdapterHost`, or any
            :class:`~redqueen.engine.backends.BackendHost`).
    """

    def __init__(self, host: BackendHost) -> None:
        self.host = host
        self._keep_kw, self._cache_kw = forward_keywords(host.model)
        self._decode = text_decoder(host.tokenizer)

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
        input_ids, valid = left_pad(prompt_ids, host.pad_token_id)
        attention = valid.long().to(device)
        positions = prompt_positions(valid).to(device)
        sampler = _Sampler(params, device, streams)
        ends = RowEnds(params, set(host.eos_token_ids), self._decode)
        max_new = max(ends.budgets)
        tokens = torch.zeros((len(prompt_ids), max_new), dtype=torch.long, device=device)
        logprobs = torch.zeros((len(prompt_ids), max_new), dtype=torch.float32, device=device)
        with host.route_rows(adapter_ids):
            logits, cache = self._forward(
                input_ids=input_ids.to(device), attention_mask=attention, position_ids=positions
            )
            for step in range(max_new):
                logits = logits.float()
                next_tokens = sampler(logits)  # (batch,)
                tokens[:, step] = next_tokens
                logprobs[:, step] = token_logprobs(logits, next_tokens)
                ends.scan([[t] for t in next_tokens.tolist()])
                if step + 1 == max_new or ends.all_ended:
                    break
                attention = torch.cat([attention, attention.new_ones(len(prompt_ids), 1)], dim=1)
                positions = positions[:, -1:] + 1
                logits, cache = self._forward(
                    input_ids=next_tokens[:, None],
                    attention_mask=attention,
                    position_ids=positions,
                    **{self._cache_kw: cache},
                )
        return generations(
            prompt_ids,
            params,
            tokens.tolist(),
            logprobs.tolist(),
            ends.final_lengths(max_new),
            ends.finished,
            self._decode,
        )


class _Sampler:
    """Per-row temperature, top-p and greedy choice over float32 logits (batch, vocab).

    Seeded rows draw one uniform per step from their own stream, the draws
    :class:`~redqueen.engine.backends._device_sampler.DeviceSampler` takes up front.
    """

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
            probs = top_p_filter(probs, self.top_p)
        if self.streams is None:
            sampled = torch.multinomial(probs, 1)[:, 0]
        else:
            # Inverse CDF with one uniform per row from the row's own stream.
            u = torch.cat([torch.rand(1, generator=g, dtype=torch.float64) for g in self.streams])
            sampled = invert_cdf(probs, u.to(self.device)[:, None])
        if self.any_greedy:
            sampled = torch.where(self.greedy, logits.argmax(dim=-1), sampled)
        return sampled
