"""Multi-objective evolution of LoRA genomes with pymoo's NSGA-II (ask/tell) on the surrogate task.

Students are scored on two competing objectives, both minimised: mean error on the surrogate
environment's held-out tasks, and the Frobenius norm of the adapter's update (how far it moves
the frozen model: a parsimony pressure); pymoo's NSGA-II evolves them with our ``svd_merge``
crossover and ``lowrank_noise`` mutation, and the lineage records every child.

Usage::

    python examples/multiobjective_nsga2.py [OUT_DIR] [--generations N] [--pop-size N]

Writes ``pareto.png``, ``lineage.csv`` and ``front.json`` (the first front) to OUT_DIR (default: a new temporary
directory) and prints the directory.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from pymoo.algorithms.moo.nsga2 import NSGA2  # noqa: E402

from redqueen.environments.surrogate import SurrogateEnv  # noqa: E402
from redqueen.evo import Individual, Lineage, Population  # noqa: E402
from redqueen.evo.interop_pymoo import PymooBridge  # noqa: E402
from redqueen.genomes import norm  # noqa: E402


def run(out: Path, generations: int = 5, pop_size: int = 8) -> Path:
    """Evolve ``pop_size`` students for ``generations``; write the front, plot and lineage."""
    out.mkdir(parents=True, exist_ok=True)
    population = SurrogateEnv.default_population.updated(teachers=1, students=pop_size, rank=2, alpha=4.0)
    env = SurrogateEnv(population=population, seed=0)
    population, lineage = Population(), Lineage()
    for member in env.population.members("student"):
        ind = population.add(Individual(population.new_id("student"), "student", member.genome, (-1.0, -1.0)))
        lineage.record_birth(ind, 0)

    def evaluate(ind: Individual) -> tuple[float, float]:
        return env.evaluate(ind.genome)["error"], float(norm(ind.genome))

    founders = np.array([evaluate(ind) for ind in population.members("student")])
    bridge = PymooBridge(population=population, lineage=lineage, role="student", evaluate=evaluate, n_obj=2, seed=0)
    algorithm = NSGA2(pop_size=pop_size, sampling=bridge.sampling(), crossover=bridge.crossover("svd_merge"),
                      mutation=bridge.mutation("lowrank_noise", sigma=0.3), eliminate_duplicates=bridge.duplicates())
    bridge.run(algorithm, n_gen=generations, seed=0)

    final = [x[0] for x in algorithm.pop.get("X")]
    values = np.array([ind.fitness.values for ind in final])
    opt = [x[0] for x in algorithm.opt.get("X")]
    (out / "front.json").write_text(json.dumps(
        [{"id": ind.id, "error": ind.fitness.values[0], "update_norm": ind.fitness.values[1],
          "parents": list(ind.parents), "operator": ind.operator} for ind in opt], indent=2))
    lineage.to_csv(out / "lineage.csv")

    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter(founders[:, 1], founders[:, 0], c="0.6", label="founders")
    ax.scatter(values[:, 1], values[:, 0], c="tab:blue", label=f"generation {generations}")
    best = np.array([ind.fitness.values for ind in opt])
    ax.scatter(best[:, 1], best[:, 0], facecolors="none", edgecolors="tab:red", s=90, label="Pareto front")
    ax.set(xlabel="update norm (minimise)", ylabel="mean error (minimise)", title="NSGA-II on LoRA genomes")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "pareto.png", dpi=100)
    plt.close(fig)
    return out


def main() -> None:
    """Parse the command line and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=None)
    parser.add_argument("--generations", type=int, default=5)
    parser.add_argument("--pop-size", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(1)  # tiny tensors: one thread avoids hand-off overhead
    out = args.out or Path(tempfile.mkdtemp(prefix="redqueen-nsga2-"))
    print(run(out, args.generations, args.pop_size))


if __name__ == "__main__":
    main()
