"""Everything one decode batch shape needs, allocated once: :class:`DecodeState`.

A CUDA graph replays kernels on fixed addresses, so every tensor a decode step reads or writes
lives here, and the step advances its own counters (the token fed back, its position, the cache
column and the output index) on the device. One state serves every call of the same
``(rows, capacity)``; its graphs are captured on first use per sampling mode and LoRA layout (stack buffers and segment shape).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from redqueen.engine.backends._decoder import StaticDecoder
from redqueen.engine.backends._device_sampler import DeviceSampler
from redqueen.engine.backends._lora_stack import LoRARouting

if TYPE_CHECKING:
    # What torch.cuda.graph_pool_handle returns; importing it at run time makes an import cycle.
    from torch.cuda import _POOL_HANDLE

__all__ = ["DecodeState"]


class DecodeState:
    """KV cache, rotary tables, step counters, outputs and captured graphs of one batch shape.

    Args:
        decoder: The decoder whose cache this is.
        rows: Rows of the batch.
        capacity: Most tokens per row, prompt included.
        dtype: Dtype of the cache (the model's).
        device: Where everything lives.
    """

    def __init__(
        self,
        decoder: StaticDecoder,
        *,
        rows: int,
        capacity: int,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        self.decoder = decoder
        self.rows, self.capacity = rows, capacity
        self.cache = decoder.new_cache(rows, capacity, dtype=dtype, device=device)
        self.rope = decoder.rotary_table(capacity, dtype=dtype, device=device)
        self.tokens = torch.zeros(rows, dtype=torch.long, device=device)  # fed in next step
        self.positions = torch.zeros(rows, dtype=torch.long, device=device)
        self.column = torch.zeros(1, dtype=torch.long, device=device)  # cache column to write
        self.step = torch.zeros(1, dtype=torch.long, device=device)  # output index to write
        self.tokens_out = torch.zeros(rows, capacity, dtype=torch.long, device=device)
        self.logprobs_out = torch.zeros(rows, capacity, dtype=torch.float32, device=device)
        # Graph runs sample through this one, loaded with each call's settings.
        self.sampler = DeviceSampler([], None, steps=capacity, device=device, rows=rows)
        self._routes: dict[tuple, LoRARouting] = {}
        self._graphs: dict[tuple, torch.cuda.CUDAGraph] = {}

    def outputs(self, rows: int, steps: int) -> tuple[Tensor, Tensor]:
        """Sampled tokens and their log-probabilities of the first ``rows`` rows and ``steps``."""
        return self.tokens_out[:rows, :steps], self.logprobs_out[:rows, :steps]

    def select_rows(self, index: Tensor) -> DecodeState:
        """A new state holding only the rows at ``index`` (cache, counters and outputs); the
        rotary tables are shared. For eager decoding only: it has no captured graphs."""
        chosen = object.__new__(DecodeState)
        chosen.decoder = self.decoder
        chosen.rows, chosen.capacity = len(index), self.capacity
        cache = self.cache
        chosen.cache = type(cache)(
            keys=[k.index_select(0, index) for k in cache.keys],
            values=[v.index_select(0, index) for v in cache.values],
            valid=cache.valid.index_select(0, index),
        )
        chosen.rope = self.rope
        for name in ("tokens", "positions", "tokens_out", "logprobs_out"):
            setattr(chosen, name, getattr(self, name).index_select(0, index))
        chosen.column, chosen.step = self.column.clone(), self.step.clone()
        chosen.sampler = self.sampler
        chosen._routes, chosen._graphs = {}, {}
        return chosen

    def start(self, width: int, positions: Tensor) -> None:
        """After a prefill of ``width`` columns: the next token sits at ``positions``."""
        self.column.fill_(width)
        self.step.zero_()
        self.positions.copy_(positions)

    def record(self, tokens: Tensor, logprobs: Tensor) -> None:
        """Store the tokens sampled at the current step and feed them to the next one."""
        self.tokens_out.index_copy_(1, self.step, tokens[:, None])
        self.logprobs_out.index_copy_(1, self.step, logprobs[:, None])
        self.tokens.copy_(tokens)
        self.step.add_(1)

    def advance(
        self,
        decoder: StaticDecoder,
        sampler: DeviceSampler,
        route: LoRARouting | None,
        *,
        kv_len: int | None = None,
    ) -> None:
        """One decode step: forward the fed token, sample, record, move the counters on."""
        logits = decoder.step(
            self.tokens, self.positions, self.column, self.cache, self.rope, route, kv_len=kv_len
        )
        self.record(*sampler(logits, self.step))
        self.positions.add_(1)
        self.column.add_(1)

    def static_routing(self, route: LoRARouting) -> LoRARouting:
        """Copy a LoRA routing into this state's fixed buffers for its shapes."""
        masks = route.masks or {}
        key = (
            route.slots,
            route.seg,
            tuple(sorted((w, m.shape) for w, m in masks.items())),
            route.index is None,
        )
        fixed = self._routes.get(key)
        if fixed is None:
            fixed = LoRARouting(
                gather=torch.empty_like(route.gather),
                scatter=torch.empty_like(route.scatter),
                slots=route.slots,
                seg=route.seg,
                masks=None
                if route.masks is None
                else {w: torch.empty_like(m) for w, m in masks.items()},
                index=None if route.index is None else torch.empty_like(route.index),
            )
            self._routes[key] = fixed
        fixed.gather.copy_(route.gather)
        fixed.scatter.copy_(route.scatter)
        if route.index is not None:
            fixed.index.copy_(route.index)  # type: ignore[union-attr]
        for w, m in masks.items():
            fixed.masks[w].copy_(m)  # type: ignore[index]
        return fixed

    def graph(
        self,
        sampler: DeviceSampler,
        route: LoRARouting | None,
        version: int,
        pool: _POOL_HANDLE | None,
    ) -> torch.cuda.CUDAGraph:
        """The captured decode step for this sampling mode and LoRA layout (captured once).

        Capturing runs one warm-up step on a side stream (lazy initialisations must not happen
        inside the capture), then records the step; the counters and the valid-key mask are
        restored afterwards, and the cache column and output slot the warm-up wrote are written
        again by the real step before anything reads them.
        """
        layout = None if route is None else (route.slots, route.seg, version)
        key = (sampler.mode, layout)
        graph = self._graphs.get(key)
        if graph is not None:
            return graph
        counters = (self.tokens, self.positions, self.column, self.step, self.cache.valid)
        saved = [t.clone() for t in counters]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self.advance(self.decoder, sampler, route)
        torch.cuda.current_stream().wait_stream(side)
        for t, s in zip(counters, saved, strict=True):
            t.copy_(s)
        # Graphs over reallocated LoRA buffers can never run again.
        self._graphs = {k: g for k, g in self._graphs.items() if k[1] is None or k[1][2] == version}
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool):
            self.advance(self.decoder, sampler, route)
        for t, s in zip(counters, saved, strict=True):
            t.copy_(s)
        self._graphs[key] = graph
        return graph
