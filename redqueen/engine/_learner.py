"""REINFORCE++ on one adapter at a time: :class:`Learner`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import nullcontext

import torch
from torch import Tensor
from torch.nn import functional as F

from redqueen.engine._batch import RolloutBatch
from redqueen.engine._learner_forward import GROUP_OVERHEAD as _GROUP_OVERHEAD
from redqueen.engine._learner_forward import length_groups, select_cache
from redqueen.engine._learner_probes import kl_from_base, weight_change
from redqueen.engine._learner_stats import LearnerState, LearnerStats, MinibatchUpdate
from redqueen.engine._rollout import Rollout
from redqueen.engine._trainable_host import TrainableHost
from redqueen.engine.backends._common import forward_keywords
from redqueen.settings import LearnerSettings

__all__ = ["Learner", "LearnerConfig", "LearnerState", "LearnerStats", "length_groups"]


#: The learner's settings: the configuration's ``learner`` section is this very class.
LearnerConfig = LearnerSettings


class Learner:
    """REINFORCE++ with a PPO-clipped ratio, one adapter at a time, on the host's adapters.

    One :meth:`step` is one update of one adapter on its own rollouts: token-level policy
    gradient with the rollout's (already whitened) advantage on every completion token, the
    ratio against the rollout's old log-probabilities clipped to ``1 +- clip``, token-mean loss,
    gradient-norm clipping and AdamW over that adapter's LoRA factors only. Each adapter keeps
    its own optimizer state, created on its first step and dropped when the host replaces or
    removes it. On GPUs the forward runs under bfloat16 autocast (factors stay float32); on CPU
    it runs in float32.

    Args:
        host: The host whose adapters are trained in place (an
            :class:`~redqueen.engine.AdapterHost`, or any :class:`TrainableHost`).
        config: Hyper-parameters (default :class:`LearnerConfig()`).
    """

    def __init__(self, host: TrainableHost, config: LearnerConfig | None = None) -> None:
        self.host = host
        self.config = config or LearnerConfig()
        self._optimizers: dict[str, tuple[list[Tensor], torch.optim.AdamW]] = {}
        self.skipped_updates = 0  # steps skipped for a non-finite loss or gradient, since creation
        self._keep_kw, self._cache_kw = forward_keywords(host.model)
        # Rollouts of one prompt (a solver's samples) run their prompt once, on Llama-style
        # models whose cache can be re-indexed by batch row.
        self.share_prompts = self._keep_kw is not None

    # -- the update ------------------------------------------------------------------------

    def step(self, adapter_id: str, rollouts: Sequence[Rollout]) -> LearnerStats:
        """``epochs * minibatches`` policy-gradient updates of ``adapter_id`` on ``rollouts``,
        and the adapter's distance from the base model (``kl_from_base`` of the policy that
        sampled them, ``weight_change`` after the update).

        A non-finite loss or gradient norm skips that update (weights and optimizer state stay
        as they were), ends the step and is reported with ``skipped=True``.

        Raises:
            KeyError: If the host has no such adapter.
            ValueError: If ``rollouts`` is empty.
        """
        if not rollouts:
            raise ValueError("Learner.step: no rollouts")
        cfg = self.config
        params, optimizer = self._optimizer(adapter_id)
        loss, grad_norm, finite = 0.0, math.nan, True
        clipped = drift = 0.0
        trained = updates = 0
        for epoch in range(cfg.epochs):
            # A fixed shuffle per epoch: minibatches differ between epochs, and a resumed run
            # draws the same ones.
            order = (
                torch.arange(len(rollouts))
                if cfg.minibatches == 1
                else torch.randperm(len(rollouts), generator=torch.Generator().manual_seed(epoch))
            )
            for chunk in torch.tensor_split(order, min(cfg.minibatches, len(rollouts))):
                part = [rollouts[i] for i in chunk.tolist()]
                update = self._update(adapter_id, params, optimizer, part)
                loss, grad_norm, finite = update.loss, update.grad_norm, update.finite
                clipped += update.clipped
                drift += update.drift
                trained += update.tokens
                if not finite:
                    break
                updates += 1
            if not finite:
                break
        if updates:
            self.host.adapters_changed([adapter_id])
        if not finite:
            self.skipped_updates += 1
        return LearnerStats(
            loss=loss,
            skipped=not finite,
            grad_norm=grad_norm,
            n_tokens=sum(len(r.token_ids) for r in rollouts),
            clip_fraction=clipped / trained if finite and trained else 0.0,
            approx_kl=drift / trained if finite and trained else 0.0,
            kl_from_base=kl_from_base(
                self.host, self.logprobs, rollouts, batch_size=cfg.micro_batch_size
            ),
            weight_change=weight_change(self.host, adapter_id),
            tokens_trained=trained,
            updates=updates,
        )

    def _update(
        self,
        adapter_id: str,
        params: list[Tensor],
        optimizer: torch.optim.Optimizer,
        rollouts: Sequence[Rollout],
    ) -> MinibatchUpdate:
        """One optimizer step on one minibatch: forward, clipped surrogate, backward, step."""
        cfg, host = self.config, self.host
        n_tokens = sum(len(r.token_ids) for r in rollouts)
        # A rollout with zero advantage adds nothing to the gradient (its clipped surrogate is 0
        # whatever the ratio), so without a KL term it is not run; it still counts in the mean.
        active = list(rollouts) if cfg.kl_coef > 0 else [r for r in rollouts if r.advantage != 0]
        n_active = sum(len(r.token_ids) for r in active)
        for p in params:
            p.grad = None
        loss_sum, clipped, drift = 0.0, 0.0, 0.0
        finite = True
        for start in range(0, len(active), cfg.micro_batch_size):
            batch = RolloutBatch.build(
                active[start : start + cfg.micro_batch_size], host.pad_token_id, host.device
            )
            advantages = batch.advantages
            if cfg.kl_coef > 0:
                advantages = advantages - cfg.kl_coef * self._kl_to_go(batch)
            with host.use_adapter(adapter_id):
                new_logprobs = self.logprobs(batch)
            ratio = torch.exp(new_logprobs - batch.old_logprobs)
            surrogate = torch.minimum(
                ratio * advantages, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * advantages
            )
            loss = -torch.where(batch.mask, surrogate, 0.0).sum() / n_tokens
            if not torch.isfinite(loss):
                finite = False
                loss_sum = float(loss.detach())
                break
            loss.backward()
            loss_sum += float(loss.detach())
            with torch.no_grad():
                outside = (ratio < 1 - cfg.clip) | (ratio > 1 + cfg.clip)
                clipped += float((outside & batch.mask).sum())
                drift += float(
                    torch.where(batch.mask, batch.old_logprobs - new_logprobs, 0.0).sum()
                )
        grad_norm = math.nan
        if finite:
            for p in params:  # zero, not absent: AdamW still applies momentum and decay
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
            finite = math.isfinite(grad_norm)
        if finite:
            optimizer.step()
        for p in params:
            p.grad = None
        return MinibatchUpdate(loss_sum, grad_norm, finite, clipped, drift, n_active)

    def logprobs(self, batch: RolloutBatch) -> Tensor:
        """Log-probabilities of the completion tokens, (batch, completion width), float32,
        under whatever adapter routing is active (:meth:`AdapterHost.use_adapter`); 0 past the
        end of each row's completion (``batch.mask`` is False there).

        Rows that share a prompt (the samples of one task) run it once: the distinct prompts
        go through the model first, their keys and values are copied to every row of their
        prompt, and the completions run on that cache. On the CPU, rows of very different
        lengths run in separate groups (:func:`length_groups`), so a short answer is not
        padded to the longest one. The arithmetic per token is the same as running each row
        whole; gradients reach the shared prompt once per row.
        """
        device = self.host.device
        autocast = (
            torch.autocast(device.type, dtype=torch.bfloat16)
            if device.type == "cuda"
            else nullcontext()
        )
        width = batch.completion_width
        targets = batch.input_ids[:, -width:]
        split = batch.input_ids.shape[1] - width
        prompts = batch.input_ids[:, :split]
        distinct, inverse = torch.unique(prompts, dim=0, return_inverse=True)
        completion = batch.mask.sum(-1).tolist()  # tokens per row
        overhead = _GROUP_OVERHEAD.get(device.type)
        out = torch.zeros(targets.shape, dtype=torch.float32, device=device)
        with autocast:
            if self.share_prompts and len(distinct) < len(prompts):
                head = self._shared_prompt_head(batch, split, inverse)
                groups = length_groups([0] * len(completion), completion, overhead)
                parts = [
                    self._shared_prompt_tail(batch, split, inverse, head, completion, g)
                    for g in groups
                ]
            else:
                prompt = batch.attention_mask[:, :split].sum(-1).tolist()
                groups = length_groups(prompt, completion, overhead)
                parts = [self._whole_rows(batch, split, prompt, completion, g) for g in groups]
        for rows, logits in parts:
            w = logits.shape[1]  # (rows, w, vocab)
            index = torch.tensor(rows, device=device)
            logp = F.log_softmax(logits.float(), dim=-1).gather(-1, targets[index, :w, None])
            out[index, :w] = logp[..., 0]
        return torch.where(batch.mask, out, 0.0)

    def _whole_rows(
        self,
        batch: RolloutBatch,
        split: int,
        prompt: list[int],
        completion: list[int],
        rows: list[int],
    ) -> tuple[list[int], Tensor]:
        """Completion logits of ``rows`` run whole, cut to their longest prompt and completion."""
        w = max(completion[r] for r in rows)
        lo, hi = split - max(prompt[r] for r in rows), split + w
        index = torch.tensor(rows, device=batch.input_ids.device)
        keep = w + 1
        extra = {self._keep_kw: keep} if self._keep_kw is not None else {}
        logits = self.host.model(
            input_ids=batch.input_ids[index, lo:hi],
            attention_mask=batch.attention_mask[index, lo:hi],
            position_ids=batch.position_ids[index, lo:hi],
            use_cache=False,
            **extra,
        ).logits
        # Position t predicts token t + 1: the completion starts at column split.
        return rows, logits[:, -keep:-1, :]

    def _shared_prompt_head(
        self, batch: RolloutBatch, split: int, inverse: Tensor
    ) -> tuple[Tensor, object]:
        """The distinct prompts run once (see :meth:`logprobs`): their last position's logits
        ``(prompts, 1, vocab)`` and their key-value cache."""
        rows = torch.arange(len(inverse), device=inverse.device)
        first = torch.full((int(inverse.max()) + 1,), len(inverse), device=inverse.device)
        first.scatter_reduce_(0, inverse, rows, "amin")  # a row of each distinct prompt
        keep = {str(self._keep_kw): 1}  # share_prompts is only set where the model has it
        head = self.host.model(
            input_ids=batch.input_ids[first, :split],
            attention_mask=batch.attention_mask[first, :split],
            position_ids=batch.position_ids[first, :split],
            use_cache=True,
            **keep,
        )
        return head.logits, getattr(head, "cache", None) or head.past_key_values

    def _shared_prompt_tail(
        self,
        batch: RolloutBatch,
        split: int,
        inverse: Tensor,
        head: tuple[Tensor, object],
        completion: list[int],
        rows: list[int],
    ) -> tuple[list[int], Tensor]:
        """Completion logits of ``rows`` on the shared prompts' cache, cut to their longest."""
        w = max(completion[r] for r in rows)
        index = torch.tensor(rows, device=inverse.device)
        # The prompt's last position predicts the first completion token; completion position
        # t predicts token t + 1 (the last token predicts nothing).
        first = head[0][inverse[index]]  # (rows, 1, vocab)
        if w <= 1:
            return rows, first
        cache = select_cache(head[1], inverse[index])
        tail = self.host.model(
            input_ids=batch.input_ids[index, split : split + w - 1],
            attention_mask=batch.attention_mask[index, : split + w - 1],
            position_ids=batch.position_ids[index, split : split + w - 1],
            use_cache=True,
            **{self._cache_kw: cache},
        )
        return rows, torch.cat([first, tail.logits], dim=1)

    @torch.no_grad()
    def _kl_to_go(self, batch: RolloutBatch) -> Tensor:
        """Sum over the remaining tokens of the per-token KL estimate to the base model."""
        with self.host.use_adapter(None):
            reference = self.logprobs(batch)
        kl = torch.where(batch.mask, batch.old_logprobs - reference, 0.0)
        return kl.flip(-1).cumsum(-1).flip(-1)

    # -- optimizer state -------------------------------------------------------------------

    def _optimizer(self, adapter_id: str) -> tuple[list[Tensor], torch.optim.AdamW]:
        params = self.host.adapter_parameters(adapter_id)
        held = self._optimizers.get(adapter_id)
        if (
            held is not None
            and len(held[0]) == len(params)
            and all(a is b for a, b in zip(held[0], params, strict=True))
        ):
            return held
        cfg = self.config
        optimizer = torch.optim.AdamW(
            params, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay
        )
        self._optimizers[adapter_id] = (params, optimizer)
        return params, optimizer

    def forget(self, adapter_id: str) -> None:
        """Drop an adapter's optimizer state (a replaced adapter starts afresh anyway)."""
        self._optimizers.pop(adapter_id, None)

    def state_dict(self) -> LearnerState:
        """Per-adapter AdamW states of the adapters the host still holds unchanged, and the config."""
        held = set(self.host.adapter_ids)
        states: dict[str, dict[str, object]] = {}
        for adapter_id, (params, optimizer) in self._optimizers.items():
            if adapter_id in held and all(
                a is b
                for a, b in zip(params, self.host.adapter_parameters(adapter_id), strict=False)
            ):
                states[adapter_id] = optimizer.state_dict()
        return {"config": self.config.model_dump(), "optimizers": states}

    def load_state_dict(self, state: LearnerState) -> None:
        """Restore per-adapter optimizer states; the host must already hold those adapters.

        Raises:
            KeyError: If the state names an adapter the host does not hold, or lacks a key.
            ValueError: If a stored state does not fit the adapter's factors.
        """
        if "optimizers" not in state:
            raise KeyError("Learner.load_state_dict: state has no 'optimizers' entry")
        self._optimizers = {}
        for adapter_id, optimizer_state in state["optimizers"].items():
            _, optimizer = self._optimizer(adapter_id)
            optimizer.load_state_dict(optimizer_state)
