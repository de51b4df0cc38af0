"""Evolution core: individuals, populations, lineage, selection, the evolution loop, interop.

- :class:`Individual` (with a DEAP-compatible :class:`Fitness`), :class:`Population`.
- :class:`Lineage`: every birth and death; ALife phylogeny CSV; networkx; phylogenetic diversity.
- :mod:`redqueen.evo.selection`: ``select(name, individuals, k, *, rng)`` and :data:`SELECTIONS`.
- :mod:`redqueen.evo.operators`: variation operators on LoRA genomes.
- :class:`EvolutionLoop`, :class:`ReplacementConfig`: replacement every few steps, ask/tell.
- :mod:`redqueen.evo.interop_deap`, :mod:`redqueen.evo.interop_pymoo`: DEAP and pymoo drive our genomes.
"""

from __future__ import annotations

from redqueen.evo._individual import Fitness, Individual
from redqueen.evo._lineage import Lineage, LineageRecord
from redqueen.evo._loop import EvolutionLoop, ReplacementConfig
from redqueen.evo._population import Population

__all__ = ["EvolutionLoop", "Fitness", "Individual", "Lineage", "LineageRecord", "Population", "ReplacementConfig"]
