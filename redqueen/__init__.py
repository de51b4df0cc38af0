"""redqueen: evolutionary computation in which LoRA adapters are genomes.

Subpackages:
    genomes: :class:`~redqueen.genomes.LoRAGenome` and low-rank algebra.
    evo: individuals, populations, lineage, variation operators, selection, the evolution loop.
    fitness: rewards, ratings, matchmaking, objectives, descriptors, diversity.
    environments: co-evolution, self-play and surrogate environments.
    verifiers: the sandboxed Python executor and code task types.
    engine: base-model host with many adapters, generation backends, the learner.
    experiments: configuration, runner, checkpoints, CLI, plots.

Every extension point is a :class:`Registry`; an entry declares its parameters by its typed
signature (or a pydantic model) and what it needs as :class:`Needs`; a parameter mapping that
does not fit raises :class:`ParameterError`.

Messages go through :mod:`logging` (the ``redqueen`` logger and its children); nothing is
printed unless the application configures a handler, as the ``redqueen`` command does.
"""

import importlib
import logging
from typing import Any

__version__ = "0.1.0"

# Every module logs to ``logging.getLogger(__name__)`` under "redqueen"; the command line
# attaches a handler, a library user configures (or silences) "redqueen" as they like.
logging.getLogger(__name__).addHandler(logging.NullHandler())

_REGISTRY_NAMES = ("Needs", "ParameterError", "Registry", "RunFacts")


def __getattr__(name: str) -> Any:
    # Resolved on first use, so that ``import redqueen`` stays light.
    if name in _REGISTRY_NAMES:
        return getattr(importlib.import_module("redqueen._registry"), name)
    raise AttributeError(f"module 'redqueen' has no attribute {name!r}")
