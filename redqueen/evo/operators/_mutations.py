"""Mutation operators on LoRA genomes: factor noise, spectral perturbation, masking, low-rank noise."""

from __future__ import annotations

from typing import Annotated

import torch
from pydantic import Field
from torch import Tensor

from redqueen.evo.operators._base import (
    MUTATIONS,
    check_range,
    choose_modules,
    edit_spectrum,
    rand,
    randn,
)
from redqueen.genomes import LoRAGenome, compute_dtype, group_by_shape, lowrank_svd, split_factors


def _noisy(t: Tensor, std: float, rng: torch.Generator) -> Tensor:
    return t + randn(t.shape, rng, t) * std if std > 0 else t


def _rms(t: Tensor) -> float:
    return float(t.detach().float().pow(2).mean().sqrt())


def _spread(t: Tensor) -> float:
    """A factor's standard deviation; its RMS when it has a single entry (no spread to take)."""
    return float(t.detach().float().std()) if t.numel() > 1 else _rms(t)


@MUTATIONS.register("gaussian")
def gaussian(
    genome: LoRAGenome,
    *,
    rng: torch.Generator,
    fraction: Annotated[float, Field(gt=0, le=1)] = 0.25,
    sigma: Annotated[float, Field(ge=0)] = 0.1,
) -> LoRAGenome:
    """Layer-selective Gaussian noise: perturb both factors of a random fraction of modules.

    Each chosen factor gets N(0, (sigma * std(factor))^2) noise (a single-entry factor: its
    absolute value in place of the std), so the step size follows the factor's own scale and
    layers of different width are perturbed alike. A factor that is all
    zero (B of a fresh PEFT adapter) has no scale and stays zero; use ``lowrank_noise`` there.

    Args:
        genome: Parent.
        rng: Generator for the module choice and the noise.
        fraction: Share of modules to perturb, in (0, 1] (at least one module).
        sigma: Noise standard deviation relative to each factor's standard deviation.
    """
    fraction = check_range("mutation 'gaussian'", "fraction", fraction, 0.0, 1.0, low_open=True)
    sigma = check_range("mutation 'gaussian'", "sigma", sigma, 0.0, float("inf"))
    chosen = choose_modules(genome, fraction, rng)
    factors = {}
    for name, (a, b) in genome.items():
        if name in chosen:
            a = _noisy(a, sigma * _spread(a), rng)
            b = _noisy(b, sigma * _spread(b), rng)
        factors[name] = (a, b)
    return genome.replace(factors)


@MUTATIONS.register("full_gaussian")
def full_gaussian(
    genome: LoRAGenome,
    *,
    rng: torch.Generator,
    sigma: Annotated[float, Field(ge=0)] = 0.01,
    relative: bool = True,
) -> LoRAGenome:
    """Gaussian noise on every factor of every module (the classic ES step).

    Args:
        genome: Parent.
        rng: Generator for the noise.
        sigma: Noise standard deviation; relative to each factor's RMS when ``relative``
            (adaptive to the factor's scale; zero factors stay zero), absolute otherwise.
        relative: Scale the noise per factor by its RMS.
    """
    sigma = check_range("mutation 'full_gaussian'", "sigma", sigma, 0.0, float("inf"))
    factors = {}
    for name, (a, b) in genome.items():
        std_a = sigma * _rms(a) if relative else sigma
        std_b = sigma * _rms(b) if relative else sigma
        factors[name] = (_noisy(a, std_a, rng), _noisy(b, std_b, rng))
    return genome.replace(factors)


def _rotation(batch: int, size: int, angle: float, rng: torch.Generator, like: Tensor) -> Tensor:
    """Random rotations ``exp(K)`` with ``K`` skew-symmetric of entry scale ``angle``, ``(batch, size, size)``."""
    x = randn((batch, size, size), rng, like) * angle
    return torch.linalg.matrix_exp((x - x.mT) / 2**0.5)


@MUTATIONS.register("spectral")
def spectral(
    genome: LoRAGenome,
    *,
    rng: torch.Generator,
    sigma: Annotated[float, Field(ge=0)] = 0.1,
    rotation: Annotated[float, Field(ge=0)] = 0.05,
) -> LoRAGenome:
    """Spectral mutation: log-normal noise on singular values and small rotations of singular vectors.

    With ``dW = U S V^T`` per module, the child has ``S' = S * exp(sigma z)`` and
    ``U' = U exp(K_u)``, ``V' = V exp(K_v)`` with small random skew-symmetric ``K`` (scale
    ``rotation``). The update keeps its column and row spaces and its rank, and the perturbation
    is relative to each direction's strength. A zero update stays zero.

    Args:
        genome: Parent.
        rng: Generator for the noise.
        sigma: Standard deviation of the log singular-value noise.
        rotation: Scale of the rotation generators (radians, roughly).
    """
    sigma = check_range("mutation 'spectral'", "sigma", sigma, 0.0, float("inf"))
    rotation = check_range("mutation 'spectral'", "rotation", rotation, 0.0, float("inf"))

    def edit(names: list[str], u: Tensor, s: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        batch, q = s.shape
        s = s * torch.exp(sigma * randn((batch, q), rng, s))
        return (
            u @ _rotation(batch, q, rotation, rng, u),
            s,
            v @ _rotation(batch, q, rotation, rng, v),
        )

    return edit_spectrum(genome, edit)


@MUTATIONS.register("component_mask")
def component_mask(
    genome: LoRAGenome,
    *,
    rng: torch.Generator,
    k: Annotated[int, Field(ge=1)] = 1,
    fraction: Annotated[float, Field(gt=0, le=1)] = 1.0,
) -> LoRAGenome:
    """Drop ``k`` random singular triplets from the update of a fraction of modules.

    A structural mutation: it removes whole directions of the update rather than blurring them.
    The freed rank is zero-padded, so a later merge or training step can refill it.

    Args:
        genome: Parent.
        rng: Generator for the module and component choice.
        k: Triplets to drop per chosen module, in [1, rank].
        fraction: Share of modules to mask, in (0, 1].
    """
    k = int(check_range("mutation 'component_mask'", "k", k, 1, genome.rank))
    fraction = check_range(
        "mutation 'component_mask'", "fraction", fraction, 0.0, 1.0, low_open=True
    )
    chosen = choose_modules(genome, fraction, rng)

    def edit(names: list[str], u: Tensor, s: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        scores = rand(s.shape, rng, s.device)
        drop = scores.topk(min(k, s.shape[-1]), dim=-1).indices
        return u, s.scatter(-1, drop, 0.0), v

    return edit_spectrum(genome, edit, chosen)


@MUTATIONS.register("lowrank_noise")
def lowrank_noise(
    genome: LoRAGenome,
    *,
    rng: torch.Generator,
    q: Annotated[int, Field(ge=1)] = 1,
    sigma: Annotated[float, Field(ge=0)] = 0.1,
    floor: Annotated[float, Field(ge=0)] = 1e-3,
    fraction: Annotated[float, Field(gt=0, le=1)] = 1.0,
) -> LoRAGenome:
    """Add a random rank-``q`` update to chosen modules and re-truncate to rank ``r`` (QR-core SVD).

    Noise on the factors does nothing to ``dW = B A`` while ``B = 0`` (a fresh PEFT adapter);
    this operator perturbs the update itself, so it also diversifies a population that starts
    from zero. The added update has Frobenius norm ``max(sigma * ||dW||_F, floor)`` per module.

    Args:
        genome: Parent.
        rng: Generator for the module choice and the noise.
        q: Rank of the added noise, >= 1.
        sigma: Noise norm relative to the module's update norm.
        floor: Smallest noise norm (absolute), used where the update is zero or tiny.
        fraction: Share of modules to perturb, in (0, 1].
    """
    where = "mutation 'lowrank_noise'"
    q = int(check_range(where, "q", q, 1, float("inf")))
    sigma = check_range(where, "sigma", sigma, 0.0, float("inf"))
    floor = check_range(where, "floor", floor, 0.0, float("inf"))
    fraction = check_range(where, "fraction", fraction, 0.0, 1.0, low_open=True)
    chosen = choose_modules(genome, fraction, rng)
    factors = dict(genome.items())
    for names in group_by_shape(genome.shapes).values():
        names = [n for n in names if n in chosen]
        if not names:
            continue
        cd = compute_dtype(genome.dtype)
        b = torch.stack([genome.factors(n)[1] for n in names]).to(cd) * genome.scaling
        a = torch.stack([genome.factors(n)[0] for n in names]).to(cd)
        m, out_f, in_f = b.shape[0], b.shape[1], a.shape[2]
        p = randn((m, out_f, q), rng, b)
        r = randn((m, q, in_f), rng, a)
        # Frobenius norms from Gram matrices, never from the dense products.
        dw_norm = ((b.mT @ b) * (a @ a.mT)).sum((-1, -2)).clamp_min(0).sqrt()
        noise_norm = ((p.mT @ p) * (r @ r.mT)).sum((-1, -2)).clamp_min(1e-30).sqrt()
        target = torch.clamp(sigma * dw_norm, min=floor)
        p = p * (target / noise_norm).view(-1, 1, 1)
        u, s, v = lowrank_svd(torch.cat([b, p], -1), torch.cat([a, r], -2), rank=genome.rank)
        new_a, new_b = split_factors(
            u, s, v, rank=genome.rank, scaling=genome.scaling, dtype=genome.dtype
        )
        factors.update({n: (new_a[i], new_b[i]) for i, n in enumerate(names)})
    return genome.replace(factors)
