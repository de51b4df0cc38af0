"""REINFORCE++ on one adapter at a time: :class:`Learner`."""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor
from torch.nn import functional as F

from redqueen.engine._batch import RolloutBatch
from redqueen.engine._learner_probes import kl_from_base, weight_change
from redqueen.engine._rollout import Rollout

if TYPE_CHECKING:
    from redqueen.engine._host import AdapterHost

__all__ = ["Learner", "LearnerConfig", "LearnerStats"]


@dataclass(frozen=True)
class LearnerConfig:
    """Hyper-parameters of the policy-gradient update.

    Args:
        lr: AdamW learning rate; ``0`` runs the same computation without moving the weights
            (the control of an experiment on what learning adds).
        clip: PPO ratio clip epsilon (the ratio is kept in ``[1 - clip, 1 + clip]``).
        max_grad_norm: Global gradient-norm clip over the adapter's factors.
        weight_decay: AdamW weight decay.
        betas: AdamW betas.
        eps: AdamW epsilon.
        kl_coef: REINFORCE++ per-token KL penalty against the base model (no adapter),
            folded into the returns; ``0`` (the default) skips the reference forward entirely.
        micro_batch_size: Rollouts per forward/backward pass; gradients accumulate across
            micro-batches, so the update does not depend on it.
        epochs: PPO epochs: passes over the step's rollouts, each ratio taken against the
            log-probabilities the rollouts were sampled with.
        minibatches: Optimizer steps per epoch; the rollouts are split into this many
            minibatches (a fixed shuffle per epoch), so one step makes ``epochs * minibatches``
            updates.

    Raises:
        ValueError: If a field is out of range (the field is named).
    """

    lr: float = 1e-4
    clip: float = 0.2
    max_grad_norm: float = 1.0
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    kl_coef: float = 0.0
    micro_batch_size: int = 16
    epochs: int = 1
    minibatches: int = 1

    def __post_init__(self) -> None:
        for name in ("clip", "max_grad_norm", "eps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"LearnerConfig.{name} must be > 0, got {getattr(self, name)}")
        for name in ("lr", "weight_decay", "kl_coef"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"LearnerConfig.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("micro_batch_size", "epochs", "minibatches"):
            if getattr(self, name) < 1:
                raise ValueError(f"LearnerConfig.{name} must be >= 1, got {getattr(self, name)}")
        object.__setattr__(self, "betas", tuple(float(b) for b in self.betas))


@dataclass(frozen=True)
class LearnerStats:
    """What one :meth:`Learner.step` did.

    Args:
        loss: Clipped surrogate loss (token mean) of the last update; ``nan`` or ``inf`` when
            the step was skipped for that reason.
        skipped: ``True`` if the update was not applied (non-finite loss or gradient).
        grad_norm: Gradient norm before clipping (of the last update).
        n_tokens: Completion tokens in the batch (the loss is their mean).
        clip_fraction: Share of tokens whose ratio was clipped, over the tokens of rollouts that
            were run (nonzero advantage, or all with a KL term), over every epoch.
        approx_kl: Mean of ``old - new`` log-probability over the same tokens (policy drift).
        kl_from_base: Mean per-token KL divergence of the adapter's policy (the one that sampled
            the rollouts, before this update) from the base model's, on its rollouts (see
            :func:`~redqueen.engine._learner_probes.kl_from_base`).
        weight_change: ``||dW|| / ||W||`` of the adapter's whole update against the base weights
            it adapts, after the update.
        tokens_trained: Completion tokens run through a forward and backward pass, summed over
            epochs (the learner's compute, for budget-matched comparisons).
        updates: Optimizer steps applied.
    """

    loss: float
    skipped: bool
    grad_norm: float
    n_tokens: int
    clip_fraction: float = 0.0
    approx_kl: float = 0.0
    kl_from_base: float = 0.0
    weight_change: float = 0.0
    tokens_trained: int = 0
    updates: int = 0

    def result(self) -> LearnerStats:
        """These statistics (a local step is done when it returns; see ``StepStats``)."""
        return self


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
        host: The :class:`~redqueen.engine.AdapterHost` whose adapters are trained in place.
        config: Hyper-parameters (default :class:`LearnerConfig()`).
    """

    def __init__(self, host: AdapterHost, config: LearnerConfig | None = None) -> None:
        self.host = host
        self.config = config or LearnerConfig()
        self._optimizers: dict[str, tuple[list[Tensor], torch.optim.AdamW]] = {}
        self.skipped_updates = 0  # steps skipped for a non-finite loss or gradient, since creation
        forward_args = inspect.signature(host.model.forward).parameters
        self._keep_kw = next(
            (k for k in ("logits_to_keep", "num_logits_to_keep") if k in forward_args), None
        )
        # Newer transformers name the key-value cache ``cache``; older ones ``past_key_values``.
        self._cache_kw = "cache" if "cache" in forward_args else "past_key_values"
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
            self.host.backend.adapters_changed([adapter_id])
        if not finite:
            self.skipped_updates += 1
        return LearnerStats(
            loss=loss,
            skipped=not finite,
            grad_norm=grad_norm,
            n_tokens=sum(len(r.token_ids) for r in rollouts),
            clip_fraction=clipped / trained if finite and trained else 0.0,
            approx_kl=drift / trained if finite and trained else 0.0,
            kl_from_base=kl_from_base(self, rollouts),
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
    ) -> _Update:
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
        return _Update(loss_sum, grad_norm, finite, clipped, drift, n_active)

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

    def _shared_prompt_head(self, batch: RolloutBatch, split: int, inverse: Tensor) -> Any:
        """The distinct prompts run once (see :meth:`logprobs`): logits and key-value cache."""
        rows = torch.arange(len(inverse), device=inverse.device)
        first = torch.full((int(inverse.max()) + 1,), len(inverse), device=inverse.device)
        first.scatter_reduce_(0, inverse, rows, "amin")  # a row of each distinct prompt
        keep = {str(self._keep_kw): 1}  # share_prompts is only set where the model has it
        return self.host.model(
            input_ids=batch.input_ids[first, :split],
            attention_mask=batch.attention_mask[first, :split],
            position_ids=batch.position_ids[first, :split],
            use_cache=True,
            **keep,
        )

    def _shared_prompt_tail(
        self,
        batch: RolloutBatch,
        split: int,
        inverse: Tensor,
        head: Any,
        completion: list[int],
        rows: list[int],
    ) -> tuple[list[int], Tensor]:
        """Completion logits of ``rows`` on the shared prompts' cache, cut to their longest."""
        w = max(completion[r] for r in rows)
        index = torch.tensor(rows, device=inverse.device)
        # The prompt's last position predicts the first completion token; completion position
        # t predicts token t + 1 (the last token predicts nothing).
        first = head.logits[inverse[index]]  # (rows, 1, vocab)
        if w <= 1:
            return rows, first
        cache = _select_cache(getattr(head, "cache", None) or head.past_key_values, inverse[index])
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

    def state_dict(self) -> dict[str, Any]:
        """Per-adapter AdamW states of the adapters the host still holds unchanged, and the config."""
        held = set(self.host.adapter_ids)
        states = {}
        for adapter_id, (params, optimizer) in self._optimizers.items():
            if adapter_id in held and all(
                a is b
                for a, b in zip(params, self.host.adapter_parameters(adapter_id), strict=False)
            ):
                states[adapter_id] = optimizer.state_dict()
        return {"config": asdict(self.config), "optimizers": states}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
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


@dataclass(frozen=True)
class _Update:
    """What one optimizer step on one minibatch did (sums, for the step's means)."""

    loss: float
    grad_norm: float
    finite: bool
    clipped: float
    drift: float
    tokens: int


#: What running one more group of rows costs, in padded token positions, per device type. On
#: the CPU a forward and backward of one more group is taken to cost about as much as 32 more
#: tokens of ``tiny`` (an estimate; ``benchmarks/learner_groups.py`` measures the result). On a
#: GPU padding is nearly free and every group is more launches, so rows run together.
_GROUP_OVERHEAD: dict[str, float] = {"cpu": 32.0}


def length_groups(
    prompt: Sequence[int], completion: Sequence[int], overhead: float | None
) -> list[list[int]]:
    """Rows split into groups that run together, so little of a group is padding.

    A group runs padded to its longest prompt plus its longest completion, and each group
    costs ``overhead`` padded positions more. Rows are sorted by length and the contiguous
    grouping of least total cost is found exactly (dynamic programming over the sorted rows).
    ``overhead=None`` keeps every row in one group. Rows with no completion tokens are left
    out (nothing of theirs is scored).
    """
    rows = [r for r in range(len(completion)) if completion[r] > 0]
    if overhead is None or len(rows) <= 1:
        return [rows] if rows else []
    rows.sort(key=lambda r: (prompt[r] + completion[r], completion[r]))
    n = len(rows)
    best = [0.0] + [math.inf] * n  # best[j]: least cost of grouping rows[:j]
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        longest_prompt = longest_completion = 0
        for i in range(j - 1, -1, -1):  # the last group is rows[i:j]
            longest_prompt = max(longest_prompt, prompt[rows[i]])
            longest_completion = max(longest_completion, completion[rows[i]])
            cost = best[i] + overhead + (j - i) * (longest_prompt + longest_completion)
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], n
    while j > 0:
        groups.append(rows[cut[j] : j])
        j = cut[j]
    return groups[::-1]


def _select_cache(cache: Any, index: Tensor) -> Any:
    """A new key-value cache holding rows ``index`` of ``cache`` (gradients flow back)."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return type(cache)([(layer.keys[index], layer.values[index]) for layer in layers])
    # Older transformers: per-layer lists of keys and values.
    return type(cache).from_legacy_cache(
        tuple((k[index], v[index]) for k, v in zip(cache.key_cache, cache.value_cache, strict=True))
    )
