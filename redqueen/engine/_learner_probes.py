"""How far an adapter has moved from the base model: :func:`kl_from_base`, :func:`weight_change`
and :func:`exact_kl_from_base`.

Both are logged after every learner step, so that a run shows whether its inner loop learns
at all: a learning-rate-0 control gives exactly 0 for both (with ``peft`` founders, B = 0).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from redqueen.engine._batch import RolloutBatch
from redqueen.engine._lora_layer import MultiLoRALinear
from redqueen.engine._rollout import Rollout
from redqueen.engine._trainable_host import TrainableHost

__all__ = ["exact_kl_from_base", "kl_from_base", "weight_change"]

#: Squared norm of each frozen base weight, computed once per layer.
_BASE_NORMS: weakref.WeakKeyDictionary[MultiLoRALinear, float] = weakref.WeakKeyDictionary()


@torch.no_grad()
def kl_from_base(
    host: TrainableHost,
    logprobs: Callable[[RolloutBatch], Tensor],
    rollouts: Sequence[Rollout],
    *,
    batch_size: int,
) -> float:
    """Mean per-token KL(policy || base model) of the policy that sampled ``rollouts``.

    The rollouts' own tokens are a sample from the policy, and their log-probabilities
    ``log p`` were stored when they were sampled, so one forward pass of the base model
    (``log q``) suffices: per token, ``k3 = (q / p - 1) - log(q / p)``, Schulman's estimator,
    unbiased for the KL divergence and never negative; the mean is over completion tokens.
    This is the policy before this step's update: a step-``t`` value reflects the updates of
    steps ``0 .. t - 1``.

    Args:
        host: The host holding the base model.
        logprobs: The learner's log-probabilities of a batch's completion tokens under the
            active routing (:meth:`~redqueen.engine.Learner.logprobs`; its forward is reused).
        rollouts: The adapter's rollouts of this step.
        batch_size: Rollouts per forward pass.

    Returns:
        Nats per token (0 if the rollouts have no completion tokens).
    """
    total, count = 0.0, 0
    for start in range(0, len(rollouts), batch_size):
        chunk = rollouts[start : start + batch_size]
        batch = RolloutBatch.build(chunk, host.pad_token_id, host.device)
        with host.use_adapter(None):
            log_ratio = logprobs(batch) - batch.old_logprobs  # log(q / p), (batch, width)
        k3 = torch.expm1(log_ratio) - log_ratio
        total += float(torch.where(batch.mask, k3, 0.0).sum())
        count += int(batch.mask.sum())
    return total / count if count else 0.0


@torch.no_grad()
def weight_change(host: TrainableHost, adapter_id: str) -> float:
    """``||dW|| / ||W||`` of one adapter over every module it adapts (Frobenius norms).

    ``dW = s B A`` is never formed: ``||B A||^2 = <B^T B, A A^T>``, an inner product of two
    ``r x r`` Gram matrices, the same low-rank algebra the genome distances use. Numerator and
    denominator are summed over modules before the ratio, so large modules weigh more.

    Args:
        host: The host holding the adapter.
        adapter_id: The adapter.

    Returns:
        The relative size of the adapter's update (0 for a zero update).
    """
    delta, base = 0.0, 0.0
    for layer in host.model.modules():
        if not isinstance(layer, MultiLoRALinear) or adapter_id not in layer.adapters:
            continue
        a, b, scaling = layer.adapters[adapter_id]  # A (r, in), B (out, r)
        a, b = a.float(), b.float()
        delta += scaling**2 * float(((b.T @ b) * (a @ a.T)).sum())
        if layer not in _BASE_NORMS:
            _BASE_NORMS[layer] = float(layer.weight.float().pow(2).sum())
        base += _BASE_NORMS[layer]
    return (max(delta, 0.0) ** 0.5) / (base**0.5) if base > 0 else 0.0


@torch.no_grad()
def exact_kl_from_base(
    host: TrainableHost,
    adapter_id: str,
    sequences: Sequence[Sequence[int]],
    *,
    batch_size: int = 16,
) -> float:
    """Mean exact KL(adapter || base model) of the next-token distributions over ``sequences``.

    Unlike :func:`kl_from_base` (a one-sample estimate on the adapter's own rollouts, cheap
    and heavy-tailed), this sums over the whole vocabulary at every position of a fixed
    reference set, so two adapters can be compared at the same KL: the quantity to match when
    a random-adapter null is scaled to a trained adapter's size.

    Args:
        host: The host holding the base model and the adapter.
        adapter_id: The adapter.
        sequences: Token id sequences (e.g. prompt and answer); every position but the last
            of each predicts the next token and counts once.
        batch_size: Sequences per forward pass.

    Returns:
        Nats per position (0 if no sequence has two tokens).

    Raises:
        KeyError: If the host has no adapter ``adapter_id``.
    """
    if adapter_id not in host.adapter_ids:
        raise KeyError(f"exact_kl_from_base: no adapter {adapter_id!r}")
    rows = [list(s) for s in sequences if len(s) >= 2]
    total, count = 0.0, 0
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        width = max(len(r) for r in chunk)
        ids = torch.full((len(chunk), width), host.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(chunk), width), dtype=torch.long)
        for i, r in enumerate(chunk):
            ids[i, : len(r)] = torch.tensor(r)
            attention[i, : len(r)] = 1
        ids, attention = ids.to(host.device), attention.to(host.device)
        logp = {}
        for name in (adapter_id, None):
            with host.use_adapter(name):
                logits = host.model(input_ids=ids, attention_mask=attention, use_cache=False).logits
            logp[name] = torch.log_softmax(logits[:, :-1].float(), dim=-1)  # (batch, width-1, vocab)
        kl = (logp[adapter_id].exp() * (logp[adapter_id] - logp[None])).sum(-1)  # (batch, width-1)
        valid = attention[:, 1:].bool()
        total += float(torch.where(valid, kl, 0.0).sum())
        count += int(valid.sum())
    return total / count if count else 0.0
