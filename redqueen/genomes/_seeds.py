"""How randomness enters: the ``torch.Generator`` every draw takes, and integer seeds.

Every random draw on genomes takes a ``torch.Generator`` (the same seed gives the same child);
:func:`check_generator` refuses anything else with one line naming the caller. Environments,
interop drivers and studies take an integer ``seed`` and turn it into numpy, torch and Python
generators; :func:`check_seed` and :func:`generator_seed` make that one rule everywhere: any
Python integer is a seed, negative and very large ones included, taken modulo ``2**64`` (numpy's
``SeedSequence`` takes only non-negative integers, torch only 64-bit ones), so ``-1`` and
``2**64 - 1`` give the same run and every seed in ``[0, 2**64)`` is used as it is.
"""

from __future__ import annotations

import operator

import torch

__all__ = ["SEED_MODULUS", "check_generator", "check_seed", "generator_seed"]

#: Seeds are taken modulo this: the range numpy's and torch's generators both accept.
SEED_MODULUS = 2**64


def _type_name(value: object) -> str:
    """``NoneType``, ``numpy.random._generator.Generator``: unambiguous beside ``torch.Generator``."""
    kind = type(value)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def check_generator(rng: object, where: str) -> torch.Generator:
    """Return ``rng`` when it is a ``torch.Generator``.

    Args:
        rng: What the caller passed as ``rng``.
        where: The call, for the message (``mutation 'gaussian'``, ``LoRAGenome.random``).

    Raises:
        TypeError: ``<where>: rng must be a torch.Generator (...), got NoneType``.
    """
    if not isinstance(rng, torch.Generator):
        raise TypeError(
            f"{where}: rng must be a torch.Generator (e.g. torch.Generator().manual_seed(0)), "
            f"got {_type_name(rng)}"
        )
    return rng


def check_seed(seed: object, where: str, name: str = "seed") -> int:
    """Return ``seed`` as a Python int when it is an integer (``int`` or a numpy integer).

    Args:
        seed: What the caller passed.
        where: The call, for the message (``SurrogateEnv``).
        name: The argument's name, for the message.

    Raises:
        TypeError: ``<where>: seed must be an integer, got float``.
    """
    try:
        return operator.index(seed)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{where}: {name} must be an integer, got {type(seed).__name__}") from None


def generator_seed(seed: int) -> int:
    """The non-negative integer that seeds a numpy, torch or Python generator for ``seed``:
    ``seed mod 2**64`` (the seed itself for every seed in ``[0, 2**64)``)."""
    return seed % SEED_MODULUS
