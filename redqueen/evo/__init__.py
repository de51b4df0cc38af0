"""Evolution core: individuals, populations, lineage, selection, the evolution loop, interop.

- :class:`Individual` (with a DEAP-compatible :class:`Fitness`), :class:`Population`;
  :func:`descriptor_matrix`, the members' behaviour descriptors as one matrix.
- :class:`Lineage`: every birth and death; ALife phylogeny CSV; networkx; phylogenetic diversity.
- :mod:`redqueen.evo.selection`: ``select(name, individuals, k, *, rng)`` and :data:`SELECTIONS`.
- :mod:`redqueen.evo.operators`: variation operators on LoRA genomes.
- :class:`EvolutionLoop`: the one owner of births and deaths (founding, replacement with a
  fair first rating for newborns, snapshots), ask/tell; :class:`ReplacementConfig`, its schema;
  :class:`MemberListener`, how an environment follows births and deaths;
  :class:`SelectionArchives`, the archives a selection scheme keeps per role (novelty, MAP-Elites).
- :class:`League`: the one owner of an environment's members (population, lineage, ratings,
  PFSP pairing, the match rule, replacement, hall of fame); :class:`StepOutcome`.
- :class:`HallOfFame`, :class:`FrozenMember`: frozen snapshots of past members.
- :func:`cull_study`, :class:`CullRecord`: who the replacement loop culls, by age and by a
  hidden skill, on a game whose answer is known (the neutral game at ``skill_sd=0``).
- :mod:`redqueen.evo.interop_deap`, :mod:`redqueen.evo.interop_pymoo`: DEAP and pymoo drive our genomes.
"""

from __future__ import annotations

from redqueen.evo._cull_study import CullRecord, cull_study
from redqueen.evo._hall_of_fame import FrozenMember, HallOfFame
from redqueen.evo._individual import Fitness, Individual, descriptor_matrix
from redqueen.evo._league import League, StepOutcome
from redqueen.evo._lineage import Lineage, LineageRecord
from redqueen.evo._loop import EvolutionLoop, MemberListener
from redqueen.evo._population import Population
from redqueen.evo._replacement import NEWBORN_RULES, ReplacementConfig, newborn_rating
from redqueen.evo._selection_archives import SelectionArchives

__all__ = [
    "NEWBORN_RULES",
    "CullRecord",
    "EvolutionLoop",
    "Fitness",
    "FrozenMember",
    "HallOfFame",
    "Individual",
    "League",
    "Lineage",
    "LineageRecord",
    "MemberListener",
    "Population",
    "ReplacementConfig",
    "SelectionArchives",
    "StepOutcome",
    "cull_study",
    "descriptor_matrix",
    "newborn_rating",
]
