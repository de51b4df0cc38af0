"""The compiled decode backend: static KV cache, stacked multi-LoRA, device sampling, CUDA graphs."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import torch
from torch import Tensor

from redqueen.engine._sampling import Generation, SamplingParams
from redqueen.engine.backends._base import BACKENDS, BackendHost
from redqueen.engine.backends._common import (
    generate_in_chunks,
    generations,
    left_pad,
    prompt_positions,
    text_decoder,
)
from redqueen.engine.backends._decode_state import DecodeState
from redqueen.engine.backends._decoder import StaticDecoder, projection_groups
from redqueen.engine.backends._device_sampler import DeviceSampler
from redqueen.engine.backends._lora_kernel import available as kernel_available
from redqueen.engine.backends._lora_stack import LoRARouting, StackedLoRA
from redqueen.engine.backends._row_ends import RowEnds

__all__ = ["CompiledStaticBackend", "StaticBackend"]

# Decode states (KV cache, buffers, graphs) kept for reuse across calls: a co-evolution step
# decodes in two shapes (proposals, answers); every state holds a whole KV cache.
_KEPT_STATES = 2


@BACKENDS.register("static")
class StaticBackend:
    """Decode mixed-adapter batches with a static KV cache, stacked multi-LoRA and CUDA graphs.

    Same contract and same samples as the ``hf`` backend (same seed, same adapter: the same
    text at temperature 0 and the same per-row draws at temperature 1), built for speed:

    * a static KV cache, written in place, so a decode step has fixed shapes;
    * the projections that read one input (``q, k, v``; ``gate, up``) run as one product over
      fused weights (views, no second copy);
    * the adapters' factors stacked per projection group and applied to the whole batch at
      once (see :class:`~redqueen.engine.backends._lora_stack.StackedLoRA`), by default in
      the dense form (four kernels per group), or in segments, rows grouped by adapter; no
      Python work per adapter during decoding;
    * prompts prefilled in one batched forward;
    * sampling on the device from each row's pre-drawn uniforms (see
      :class:`~redqueen.engine.backends._device_sampler.DeviceSampler`), ends of rows found
      from their tokens every few steps rather than synchronising at every step;
    * on CUDA, the decode step (forward, sampling, bookkeeping) captured once per batch-size
      bucket and cache capacity in a CUDA graph and replayed, one launch per token.

    The ``auto`` backend (the default) picks this one for every Llama/Qwen2-style model; it can also be
    named: ``AdapterHost(..., backend="static")`` or ``model.backend: static`` in a config.

    Runs Llama/Qwen2-style models (see
    :data:`~redqueen.engine.backends._decoder.SUPPORTED_MODEL_TYPES`); other models raise at
    construction, and the ``hf`` backend runs them.

    Args:
        host: The host whose model decodes (an :class:`~redqueen.engine.AdapterHost`, or any
            :class:`~redqueen.engine.backends.BackendHost`).
        dense_lora: Apply the adapters in the dense form (``None``, the default: yes) or in
            segments (``False``); both compute the same deltas.
        compile_step: Compile the decode step with ``torch.compile`` (fuses the small
            element-wise kernels; the first step of each new shape pays the compilation).
            Off by default: not yet measured to pay for itself.
        fused_lora: Apply the adapters with the per-row Triton kernel
            (:func:`~redqueen.engine.backends._lora_kernel.fused_lora`, Punica's BGMV: two
            kernels per group, each row gathering its own adapter's factors) over the dense
            layout. Off by default until timed against the dense form on a GPU
            (``benchmarks/rollout.py``); needs Triton and a CUDA device (or Triton's
            interpreter, ``TRITON_INTERPRET=1``, which the CPU tests use).

    Raises:
        redqueen.engine.backends._decoder.UnsupportedModelError: If the model's architecture
            is not supported.
        ValueError: If ``fused_lora`` is asked for where the kernel cannot run, or with
            ``dense_lora=False``.
    """

    #: Batch sizes a CUDA graph is captured for; a batch runs in the smallest that fits.
    graph_buckets: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    #: Cache capacities are rounded up to a multiple of this on CUDA, so graphs are reused.
    capacity_step: int = 256

    def __init__(
        self,
        host: BackendHost,
        *,
        dense_lora: bool | None = None,
        compile_step: bool = False,
        fused_lora: bool = False,
    ) -> None:
        if fused_lora and not kernel_available():
            raise ValueError(
                "fused_lora needs triton and a CUDA device (or TRITON_INTERPRET=1); "
                "leave it off to use the dense form"
            )
        self.host = host
        self._decode = text_decoder(host.tokenizer)
        self.use_graphs = host.device.type == "cuda"
        self.lora = StackedLoRA(
            projection_groups(host.model),
            dtype=host.dtype,
            device=host.device,
            dense=True if dense_lora is None else dense_lora,
            fused=fused_lora,
        )
        self.decoder = StaticDecoder(host.model, self.lora)
        if compile_step:
            # One compiled graph per batch shape and LoRA layout (compiled at its first step,
            # before any capture); its fused kernels are then captured like the eager ones.
            self.decoder.step = torch.compile(self.decoder.step, dynamic=False)  # type: ignore[method-assign]
        # Fixed shapes (bucketed rows, rounded capacity, whole-cache attention) are what graphs
        # need; they also run eagerly, which is how the CPU tests check the captured step.
        self.static_shapes = self.use_graphs
        # Steps between looks at the sampled tokens: each look waits for the device.
        self.check_every = 16 if self.use_graphs else 1
        # Eager decoding drops ended rows once no more than this share of the batch runs.
        self.shrink_at = 0.75
        self._states: OrderedDict[tuple[int, int], DecodeState] = OrderedDict()
        self._pool = torch.cuda.graph_pool_handle() if self.use_graphs else None

    def adapters_changed(self, adapter_ids: Sequence[str]) -> None:
        """Copy these adapters' factors into the stack again at their next use."""
        self.lora.forget(adapter_ids)

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

    # -- one batch -------------------------------------------------------------------------

    @torch.inference_mode()
    def _generate_batch(
        self,
        prompt_ids: Sequence[Sequence[int]],
        adapter_ids: Sequence[str | None],
        params: Sequence[SamplingParams],
        streams: Sequence[torch.Generator] | None,
    ) -> list[Generation]:
        device = self.host.device
        self._refresh_weights()
        batch, width = len(prompt_ids), max(len(p) for p in prompt_ids)
        max_new = max(p.max_new_tokens for p in params)
        rows, capacity = self._shape(batch, width + max_new)
        # Left-padded prompts; rows beyond the batch (graph buckets) hold one padding token.
        input_ids, valid = left_pad(prompt_ids, self.host.pad_token_id, rows)
        state = self._state(rows, capacity)
        positions = prompt_positions(valid).to(device)
        state.cache.valid.zero_()
        state.cache.valid[:, :width] = valid.to(device)

        row_slots, route = self._route(state, adapter_ids, rows)
        sampler = DeviceSampler(params, streams, steps=max_new, device=device, rows=rows)
        if self.static_shapes:
            state.sampler.load(sampler)
            sampler = state.sampler

        logits = self._prefill(state, input_ids.to(device), positions, route, row_slots)
        state.start(width, positions[:, -1] + 1)
        state.record(*sampler(logits, state.step))
        ends = RowEnds(params, self.host.eos_token_ids, self._decode)
        if self.static_shapes:
            outputs = self._decode_fixed(state, sampler, route, ends, batch)
        else:
            outputs = self._decode_shrinking(state, sampler, route, row_slots, ends, width)
        return self._results(outputs, ends, prompt_ids, params)

    def _refresh_weights(self) -> None:
        """Drop the decode states whose graphs read weights the model no longer holds."""
        if self.decoder.check_weights():
            self._states.clear()  # their graphs read the old weights
            if self.use_graphs:  # and a pool whose graphs are all gone is not captured into
                self._pool = torch.cuda.graph_pool_handle()

    def _route(
        self, state: DecodeState, adapter_ids: Sequence[str | None], rows: int
    ) -> tuple[list[int] | None, LoRARouting | None]:
        """Each row's slot in the LoRA stack and the routing over them (``None``, ``None``
        when no row has an adapter); with fixed shapes, in the state's fixed buffers."""
        slots = self.lora.load([a for a in adapter_ids if a is not None])
        if not slots:
            return None, None
        row_slots = [0 if a is None else slots[a] for a in adapter_ids]
        row_slots += [0] * (rows - len(adapter_ids))
        if not self.static_shapes:
            return row_slots, self.lora.routing(row_slots)
        longest = max(row_slots.count(s) for s in set(row_slots))
        seg = next(b for b in self.graph_buckets + (rows,) if b >= longest)
        route = self.lora.routing(row_slots, seg=min(seg, rows), all_slots=True)
        return row_slots, state.static_routing(route)

    def _decode_fixed(
        self,
        state: DecodeState,
        sampler: DeviceSampler,
        route: LoRARouting | None,
        ends: RowEnds,
        batch: int,
    ) -> tuple[Tensor, Tensor]:
        """Decoding with fixed shapes (a CUDA graph replayed per token, or the same step run
        eagerly), looking at the tokens every :attr:`check_every` steps.

        Returns:
            Tokens and log-probabilities of the batch's rows, ``(batch, max_new)`` each.
        """
        max_new = max(ends.budgets)
        for step in range(1, max_new):
            if step % self.check_every == 0 and self._scan(state, ends, batch, step):
                break
            if self.use_graphs:
                state.graph(sampler, route, self.lora.buffers_version, self._pool).replay()
            else:
                state.advance(self.decoder, sampler, route)
        if not ends.all_ended:
            self._scan(state, ends, batch, max_new)
        return state.outputs(batch, max_new)

    def _prefill(
        self,
        state: DecodeState,
        input_ids: Tensor,
        positions: Tensor,
        route: LoRARouting | None,
        row_slots: list[int] | None,
    ) -> Tensor:
        """Prefill the prompts, each distinct (prompt, adapter) row once.

        Rows that repeat a prompt with the same adapter (the ``n`` samples of a prompt) get
        the same keys and values, so they are computed once and copied.
        """
        keys = [
            (tuple(ids), 0 if row_slots is None else row_slots[row])
            for row, ids in enumerate(input_ids.tolist())
        ]
        first: dict[tuple, int] = {}
        expand = [first.setdefault(key, len(first)) for key in keys]
        if len(first) == len(keys):
            return self.decoder.prefill(input_ids, positions, state.cache, state.rope, route)
        distinct = [keys.index(key) for key in first]  # a row of each, in order
        index = torch.tensor(distinct, device=input_ids.device)
        if row_slots is not None:
            route = self.lora.routing([row_slots[row] for row in distinct])
        return self.decoder.prefill(
            input_ids.index_select(0, index),
            positions.index_select(0, index),
            state.cache,
            state.rope,
            route,
            distinct=index,
            expand=torch.tensor(expand, device=input_ids.device),
        )

    def _decode_shrinking(
        self,
        state: DecodeState,
        sampler: DeviceSampler,
        route: LoRARouting | None,
        row_slots: list[int] | None,
        ends: RowEnds,
        width: int,
    ) -> tuple[Tensor, Tensor]:
        """Eager decoding (CPU) that drops ended rows from the batch as it goes.

        Every step looks at the new tokens; once no more than :attr:`shrink_at` of the batch's
        rows are still running, the ended ones are dropped (their outputs kept), so the rows
        that run on to their budget no longer pay for the whole batch. A row's tokens do not
        depend on the rows beside it, so the samples are those of the full batch.

        Returns:
            Tokens and log-probabilities of every original row, ``(batch, max_new)`` each.
        """
        batch = len(ends.budgets)
        max_new = max(ends.budgets)
        tokens = torch.zeros(batch, max_new, dtype=torch.long)
        logprobs = torch.zeros(batch, max_new, dtype=torch.float32)
        origin = list(range(batch))  # original row of each of the state's rows
        for step in range(1, max_new + 1):
            new = state.tokens_out[:, ends.scanned : step].tolist()
            ends.scan_rows(origin, new)
            if ends.all_ended or step == max_new:
                break
            running = [i for i, row in enumerate(origin) if ends.lengths[row] is None]
            if len(running) <= self.shrink_at * len(origin):
                self._keep_outputs(state, origin, tokens, logprobs, step)
                index = torch.tensor(running, device=state.tokens.device)
                state, sampler = state.select_rows(index), sampler.select_rows(index)
                origin = [origin[i] for i in running]
                if row_slots is not None:
                    route = self.lora.routing([row_slots[row] for row in origin])
            state.advance(self.decoder, sampler, route, kv_len=width + step)
        self._keep_outputs(state, origin, tokens, logprobs, min(step, max_new))
        return tokens, logprobs

    @staticmethod
    def _keep_outputs(
        state: DecodeState, origin: list[int], tokens: Tensor, logprobs: Tensor, steps: int
    ) -> None:
        """Copy the state's first ``steps`` outputs to their original rows."""
        index = torch.tensor(origin)
        tokens[index, :steps] = state.tokens_out[:, :steps].cpu()
        logprobs[index, :steps] = state.logprobs_out[:, :steps].cpu()

    def _shape(self, batch: int, length: int) -> tuple[int, int]:
        """Rows and cache capacity of the decode state for this batch."""
        if not self.static_shapes:
            return batch, length
        rows = next((b for b in self.graph_buckets if b >= batch), batch)
        step = self.capacity_step
        return rows, -(-length // step) * step

    def _state(self, rows: int, capacity: int) -> DecodeState:
        key = (rows, capacity)
        state = self._states.pop(key, None)
        if state is None:
            state = DecodeState(
                self.decoder,
                rows=rows,
                capacity=capacity,
                dtype=self.host.dtype,
                device=self.host.device,
            )
        self._states[key] = state
        while len(self._states) > _KEPT_STATES:
            self._states.popitem(last=False)
        return state

    def _scan(self, state: DecodeState, ends: RowEnds, batch: int, upto: int) -> bool:
        """Hand tokens ``ends.scanned .. upto`` to ``ends``; whether every row has ended."""
        new = state.tokens_out[:batch, ends.scanned : upto].tolist()
        ends.scan(new)
        return ends.all_ended

    def _results(
        self,
        outputs: tuple[Tensor, Tensor],
        ends: RowEnds,
        prompt_ids: Sequence[Sequence[int]],
        params: Sequence[SamplingParams],
    ) -> list[Generation]:
        batch = len(prompt_ids)
        steps = max(p.max_new_tokens for p in params)
        tokens = outputs[0][:batch, :steps].tolist()
        logprobs = outputs[1][:batch, :steps].tolist()
        lengths = ends.final_lengths(steps)
        return generations(
            prompt_ids, params, tokens, logprobs, lengths, ends.finished, self._decode
        )


@BACKENDS.register("static_compiled")
class CompiledStaticBackend(StaticBackend):
    """The ``static`` backend with its decode step compiled (``torch.compile``).

    Same samples as ``static``; on a GPU the compiled step fuses the many small element-wise
    kernels of a decode step (norms, rotary, residuals) before it is captured. Measured on
    one H200 at the Qwen2.5-0.5B shape, batch 64: 1.7x ``static``'s tokens per second without
    adapters and 1.45x with 8 mixed adapters, after a first call that compiles (about 17-26 s
    per batch shape and LoRA layout, a few seconds with a warm compile cache); see
    ``benchmarks/README.md``. Choose it with ``model.backend: static_compiled``.

    Args:
        host: The :class:`~redqueen.engine.AdapterHost` whose model decodes.
    """

    def __init__(self, host: BackendHost) -> None:
        super().__init__(host, compile_step=True)
