"""The REINFORCE step of the surrogate games: learning from sampled actions and their rewards."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

from redqueen.genomes import LoRAGenome

Centre = Callable[[LoRAGenome, Mapping[str, tuple[torch.Tensor, torch.Tensor]]], torch.Tensor]


def reinforce_step(
    genome: LoRAGenome,
    centre: Centre,
    actions: torch.Tensor,
    advantage: torch.Tensor,
    *,
    exploration: float,
    lr: float,
    max_grad_norm: float,
) -> LoRAGenome:
    """One score-function (REINFORCE) step of a Gaussian policy; returns the new genome.

    The policy samples actions ``N(centre(genome), exploration^2 I)``; the step ascends
    ``mean(advantage * log pi(action))`` with respect to the LoRA factors, the gradient clipped
    to ``max_grad_norm``. Only the sampled actions and their (whitened) advantages are used,
    never a gradient of the game's rule, as in REINFORCE++ on the code game.

    Args:
        genome: The member's genome (not modified).
        centre: ``(genome, factors) -> (dim,)``: the policy mean with those factors.
        actions: Sampled actions, ``(m, dim)``.
        advantage: Their whitened advantages, ``(m,)``.
        exploration: Std of the policy.
        lr: Step size.
        max_grad_norm: Gradient norm clip.
    """
    factors = {
        n: (a.clone().requires_grad_(), b.clone().requires_grad_()) for n, (a, b) in genome.items()
    }
    mean = centre(genome, factors)
    log_prob = -((actions - mean) ** 2).sum(1) / (2 * exploration**2)  # (m,), up to a constant
    loss = -(advantage * log_prob).mean()
    params = [t for pair in factors.values() for t in pair]
    grads = torch.autograd.grad(loss, params)
    squares = sum((g**2).sum() for g in grads)
    assert isinstance(squares, torch.Tensor)  # a genome has factors, so there are gradients
    norm = torch.sqrt(squares)
    scale = lr * min(1.0, max_grad_norm / float(norm + 1e-12))
    it = iter(grads)
    return genome.replace(
        {
            n: ((a - scale * next(it)).detach(), (b - scale * next(it)).detach())
            for n, (a, b) in factors.items()
        }
    )
