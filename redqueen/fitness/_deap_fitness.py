"""A DEAP fitness with per-instance weights: :class:`Fitness`."""

from __future__ import annotations

from collections.abc import Sequence

import deap.base

__all__ = ["Fitness"]


class Fitness(deap.base.Fitness):
    """A DEAP fitness whose weights belong to the instance, not to a class made by ``creator``.

    DEAP keeps ``weights`` on a class built at run time with ``creator.create``; such classes
    break pickling and IDEs. This subclass stores the weights per instance and otherwise keeps
    DEAP's protocol (``values``, ``wvalues``, ``valid``, ``dominates``, lexicographic
    comparisons, ``del fitness.values``), so ``deap.tools.selNSGA2``, ``selTournament``,
    ``selLexicase`` and ``selSPEA2`` run on :class:`Individual` unchanged.

    Args:
        weights: One weight per objective; positive maximises, negative minimises.
        values: Optional initial (unweighted) values.

    Raises:
        ValueError: If ``weights`` is empty.
    """

    def __init__(self, weights: Sequence[float] = (1.0,), values: Sequence[float] = ()) -> None:
        weights = tuple(float(w) for w in weights)
        if not weights:
            raise ValueError("Fitness.weights must hold at least one weight")
        self.weights = weights
        super().__init__(tuple(values))

    def __deepcopy__(self, memo: dict[int, object]) -> Fitness:
        clone = Fitness(self.weights)
        clone.wvalues = self.wvalues
        return clone

    __copy__ = __deepcopy__

    def __reduce__(self) -> tuple[type[Fitness], tuple[tuple[float, ...], tuple[float, ...]]]:
        return (Fitness, (self.weights, self.values if self.valid else ()))

    def __repr__(self) -> str:
        return f"Fitness(weights={self.weights!r}, values={self.values if self.valid else ()!r})"
