"""What every surrogate environment shares: the frozen MLP and the league they keep.

The surrogate environment (:mod:`redqueen.environments.surrogate`) and the surrogate games
(:mod:`redqueen.environments.games`) both carry LoRA genomes on a small frozen tanh MLP and
keep their members in one :class:`redqueen.evo.League`. This module holds the parts they
share, written once: :class:`FrozenMLP` (the "base model"), :func:`surrogate_league` (the
league, seeded as both have always seeded it), :func:`league_state` /
:func:`load_league_state` (their flat checkpoint layout) and :func:`one_thread`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from redqueen.evo import League, ReplacementConfig
from redqueen.fitness import Objectives, PFSPMatchmaker
from redqueen.genomes import LoRAGenome, generator_seed

Factors = Mapping[str, tuple[torch.Tensor, torch.Tensor]]


class FrozenMLP:
    """A frozen three-layer tanh MLP whose linear layers carry LoRA factors.

    Args:
        inputs: Input width.
        hidden: Hidden width.
        outputs: Output width.
        gen: Draws the frozen weights (``layers.0``, ``layers.1``, ``layers.2``, in that order).
    """

    def __init__(self, *, inputs: int, hidden: int, outputs: int, gen: torch.Generator) -> None:
        self.shapes = {
            "layers.0": (hidden, inputs),
            "layers.1": (hidden, hidden),
            "layers.2": (outputs, hidden),
        }
        self.base = {
            n: (torch.randn(o, i, generator=gen) / i**0.5, 0.1 * torch.randn(o, generator=gen))
            for n, (o, i) in self.shapes.items()
        }

    def __call__(
        self, x: torch.Tensor, genome: LoRAGenome | None, factors: Factors | None = None
    ) -> torch.Tensor:
        """The MLP with ``genome``'s LoRA updates (or ``factors`` with its scaling): ``(n, in) -> (n, out)``."""
        factors = (
            factors if factors is not None else (dict(genome.items()) if genome is not None else {})
        )
        scaling = genome.scaling if genome is not None else 0.0
        last = len(self.shapes) - 1
        h = x
        for i, name in enumerate(self.shapes):
            w, b = self.base[name]
            out = h @ w.T + b
            if name in factors:
                a, bb = factors[name]
                out = out + scaling * (h @ a.T) @ bb.T  # (n, r) -> (n, out)
            h = torch.tanh(out) if i < last else out
        return h


def surrogate_league(
    *,
    roles: Sequence[str],
    replacement: ReplacementConfig | None,
    matchmaker: PFSPMatchmaker | None,
    objectives: Mapping[str, Objectives],
    seed: int,
) -> League:
    """An empty league: pairing on ``default_rng(seed)``, evolution on ``default_rng(seed + 2)``."""
    return League(
        roles=roles,
        objectives=objectives,
        pairing_rng=np.random.default_rng(generator_seed(seed)),
        evolution_rng=np.random.default_rng(generator_seed(seed + 2)),
        replacement=replacement,
        matchmaker=matchmaker,
    )


def league_state(league: League) -> dict[str, Any]:
    """Population, lineage, ratings, evolution loop and pairing RNG as flat plain data."""
    state = league.state_dict()
    return {
        "population": state["population"],
        "lineage": state["lineage"],
        "ratings": state["ratings"],
        "evolution": state["evolution"],
        "rng": league.pairing_rng.bit_generator.state,
    }


def load_league_state(league: League, state: Mapping[str, Any]) -> None:
    """Restore what :func:`league_state` returned (extra keys are ignored)."""
    league.load_state_dict(
        {k: state[k] for k in ("population", "lineage", "ratings", "evolution")}, describe=False
    )
    league.pairing_rng.bit_generator.state = state["rng"]


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread: the tensors are tiny, so thread hand-offs cost more than they save."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
