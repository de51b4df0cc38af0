"""pymoo drives LoRA genomes: Sampling, Crossover, Mutation and duplicate elimination over
object variables (one :class:`~redqueen.evo.Individual` per solution), lineage kept.

Example (NSGA-II with pymoo's ask/tell)::

    bridge = PymooBridge(population=pop, lineage=lin, role="student", evaluate=fn, n_obj=2, seed=0)
    algorithm = NSGA2(pop_size=8, sampling=bridge.sampling(), crossover=bridge.crossover("svd_merge"),
                      mutation=bridge.mutation("gaussian"), eliminate_duplicates=True)
    bridge.run(algorithm, n_gen=5, seed=0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import torch
from pymoo.algorithms.base.genetic import GeneticAlgorithm
from pymoo.core.crossover import Crossover
from pymoo.core.duplicate import DefaultDuplicateElimination, ElementwiseDuplicateElimination
from pymoo.core.individual import Individual as Solution
from pymoo.core.mutation import Mutation
from pymoo.core.problem import Problem
from pymoo.core.sampling import Sampling

from redqueen.evo._individual import Individual
from redqueen.evo._interop import LineageKeeper
from redqueen.evo._lineage import Lineage
from redqueen.evo._population import Population
from redqueen.genomes import check_seed, generator_seed

#: A pymoo genetic algorithm (NSGA2, GA, ...), handed back as it came.
AlgorithmT = TypeVar("AlgorithmT", bound=GeneticAlgorithm)


class PymooBridge(LineageKeeper):
    """Builds pymoo operators over our individuals and keeps Population and Lineage current.

    Args:
        population: Population holding the founders of ``role``.
        lineage: Lineage with the founders' births.
        role: Role evolved.
        evaluate: ``fn(individual) -> objective values``; maximised or minimised per the
            individuals' fitness weights (pymoo itself always minimises ``-weights * values``).
        n_obj: Number of objectives.
        seed: Seeds the operators' ``torch.Generator``; any integer (taken modulo ``2**64``).
    """

    def __init__(
        self,
        *,
        population: Population,
        lineage: Lineage,
        role: str,
        evaluate: Callable[[Individual], Sequence[float]],
        n_obj: int,
        seed: int = 0,
    ) -> None:
        seed = generator_seed(check_seed(seed, type(self).__name__))
        super().__init__(population=population, lineage=lineage, role=role,
                         torch_rng=torch.Generator().manual_seed(seed))
        self._evaluate, self.n_obj = evaluate, int(n_obj)

    def problem(self) -> Problem:
        """The pymoo problem: one object variable (an Individual), ``n_obj`` objectives."""
        return GenomeProblem(self)

    def sampling(self) -> Sampling:
        """Initial solutions: the living members of the role."""
        return GenomeSampling(self)

    def crossover(self, name: str, **params: float) -> Crossover:
        """Our crossover ``name`` (two parents, one child)."""
        return GenomeCrossover(self, name, params)

    def mutation(self, name: str, **params: float) -> Mutation:
        """Our mutation ``name``."""
        return GenomeMutation(self, name, params)

    def duplicates(self, atol: float = 1e-6) -> ElementwiseDuplicateElimination:
        """Duplicate elimination comparing genomes (same object, or low-rank distance <= ``atol``)."""
        return GenomeDuplicates(atol)

    def adopt(self, algorithm: AlgorithmT) -> AlgorithmT:
        """Make a pymoo genetic algorithm's duplicate elimination work on our individuals.

        pymoo's default (``eliminate_duplicates=True``, also NSGA2's default) measures distances
        between numeric design vectors, which object variables lack; it is replaced by
        :meth:`duplicates`, which compares genomes. Other eliminations are left alone.
        Returns ``algorithm``.
        """
        default = getattr(algorithm, "eliminate_duplicates", None)
        if type(default) is DefaultDuplicateElimination:
            ours = self.duplicates()
            algorithm.eliminate_duplicates = ours
            for part in (getattr(algorithm, "initialization", None), getattr(algorithm, "mating", None)):
                if part is not None and getattr(part, "eliminate_duplicates", None) is default:
                    part.eliminate_duplicates = ours
        return algorithm

    def run(self, algorithm: AlgorithmT, *, n_gen: int, seed: int = 0) -> AlgorithmT:
        """Run ``algorithm`` for ``n_gen`` generations with ask/tell, recording lineage; returns it.

        The algorithm's duplicate elimination is adopted first (see :meth:`adopt`).
        """
        problem = self.problem()
        self.adopt(algorithm)
        algorithm.setup(problem, termination=("n_gen", n_gen), seed=seed)
        while algorithm.has_next():
            offspring = algorithm.ask()
            algorithm.evaluator.eval(problem, offspring)
            algorithm.tell(infills=offspring)
            self.survive([x[0] for x in algorithm.pop.get("X")])
        return algorithm


class GenomeProblem(Problem):
    """Evaluates individuals with the bridge's function; records births of new children."""

    def __init__(self, bridge: PymooBridge) -> None:
        super().__init__(n_var=1, n_obj=bridge.n_obj, vtype=object)
        self.bridge = bridge

    def _evaluate(self, X: np.ndarray, out: dict[str, object], *args: object, **kwargs: object) -> None:
        rows = []
        for (ind,) in X:
            self.bridge.born(ind)
            values = tuple(float(v) for v in self.bridge._evaluate(ind))
            ind.fitness.values = values
            rows.append(ind.fitness.wvalues)
        out["F"] = -np.asarray(rows, dtype=float)  # pymoo minimises


class GenomeSampling(Sampling):
    """Starts from the role's living members."""

    def __init__(self, bridge: PymooBridge) -> None:
        super().__init__()
        self.bridge = bridge

    def _do(self, problem: Problem, n_samples: int, *args: object, **kwargs: object) -> np.ndarray:
        members = self.bridge.population.members(self.bridge.role)
        if len(members) < n_samples:
            raise ValueError(f"GenomeSampling: role {self.bridge.role!r} has {len(members)} members, pymoo asked for {n_samples}")
        X = np.empty((n_samples, 1), dtype=object)
        for i, ind in enumerate(members[:n_samples]):
            X[i, 0] = ind
        return X


class GenomeCrossover(Crossover):
    """Our crossover as a pymoo crossover over object variables (2 parents -> 1 child)."""

    def __init__(self, bridge: PymooBridge, name: str, params: dict[str, float]) -> None:
        super().__init__(n_parents=2, n_offsprings=1, prob=1.0, vtype=object)
        self.bridge, self.name, self.params = bridge, name, params

    def _do(self, problem: Problem, X: np.ndarray, *args: object, **kwargs: object) -> np.ndarray:
        _, n_matings, _ = X.shape  # (parents, matings, 1)
        Y = np.empty((1, n_matings, 1), dtype=object)
        for k in range(n_matings):
            Y[0, k, 0] = self.bridge.vary(self.name, [X[0, k, 0], X[1, k, 0]], self.params)
        return Y


class GenomeMutation(Mutation):
    """Our mutation as a pymoo mutation over object variables."""

    def __init__(self, bridge: PymooBridge, name: str, params: dict[str, float]) -> None:
        super().__init__(prob=1.0, vtype=object)
        self.bridge, self.name, self.params = bridge, name, params

    def _do(self, problem: Problem, X: np.ndarray, *args: object, **kwargs: object) -> np.ndarray:
        Y = np.empty_like(X)
        for i, (ind,) in enumerate(X):
            Y[i, 0] = self.bridge.vary(self.name, [ind], self.params)
        return Y


class GenomeDuplicates(ElementwiseDuplicateElimination):
    """Two solutions are duplicates when their genomes are the same object or equal updates."""

    def __init__(self, atol: float = 1e-6) -> None:
        super().__init__()
        self.atol = float(atol)

    def is_equal(self, a: Solution, b: Solution) -> bool:
        from redqueen.genomes import distance

        ga, gb = a.X[0].genome, b.X[0].genome
        return ga is gb or float(distance(ga, gb)) <= self.atol
