"""A new selection scheme in a few lines, run on the surrogate environment, lineage and diversity plotted.

Usage::

    python examples/custom_selection.py [OUT_DIR] [--generations N]

Writes ``lineage.csv``, ``lineage.png`` and ``diversity.png`` to OUT_DIR (default: a new
temporary directory) and prints the directory.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from redqueen.environments.surrogate import SurrogateEnv  # noqa: E402
from redqueen.evo import ReplacementConfig  # noqa: E402
from redqueen.evo.selection import SELECTIONS  # noqa: E402


# --- the new scheme: one registered function, DEAP-style ------------------------------------
@SELECTIONS.register("boltzmann", overwrite=True)
def boltzmann(individuals, k, *, rng, temperature: float = 1.0, c: float = 3.0):
    """Boltzmann selection on conservative skill: P(i) ~ exp(lcb_i / T).

    de la Maza & Tidor, "An analysis of selection procedures with particular attention paid to
    proportional and Boltzmann selection", ICGA 1993.
    """
    lcb = np.array([ind.rating[0] - c * ind.rating[1] for ind in individuals])
    weights = np.exp((lcb - lcb.max()) / temperature)
    return list(rng.choice(len(individuals), size=k, p=weights / weights.sum()))


# --- run it ---------------------------------------------------------------------------------
def run(out: Path, generations: int = 8) -> Path:
    """Evolve 2 roles x 6 members for ``generations`` replacements; write CSV and plots to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    replacement = ReplacementConfig(replace_every=1, cull_fraction=0.34, selection="boltzmann",
                                    selection_params={"temperature": 2.0},
                                    operators={"svd_merge": 0.5, "lowrank_noise": 0.5})
    population = SurrogateEnv.default_population.updated(teachers=6, students=6, rank=2, alpha=4.0)
    env = SurrogateEnv(population=population, replacement=replacement, seed=0)
    history = [env.step().metrics for _ in range(generations)]
    env.lineage.update_fitness(env.population.living)
    env.lineage.to_csv(out / "lineage.csv")
    _plot_lineage(env, out / "lineage.png")
    _plot_diversity(history, env, out / "diversity.png")
    return out


def _plot_lineage(env: SurrogateEnv, path: Path) -> None:
    graph = env.lineage.to_networkx()
    rows: dict[tuple[str, int], int] = {}
    pos = {}
    for name, data in graph.nodes(data=True):
        key = (data["role"], data["origin_time"])
        rows[key] = rows.get(key, 0) + 1
        offset = 0.0 if data["role"] == "teacher" else 10.0
        pos[name] = (data["origin_time"], offset + rows[key])
    fig, ax = plt.subplots(figsize=(7, 4))
    for parent, child in graph.edges:
        ax.plot(*zip(pos[parent], pos[child], strict=True), color="0.7", lw=0.8)
    for role, color in (("teacher", "tab:red"), ("student", "tab:blue")):
        names = [n for n, d in graph.nodes(data=True) if d["role"] == role]
        alive = [graph.nodes[n]["destruction_time"] is None for n in names]
        ax.scatter([pos[n][0] for n in names], [pos[n][1] for n in names], c=color, label=role,
                   edgecolors=["k" if a else "none" for a in alive], s=30)
    ax.set(xlabel="birth step", yticks=[], title="lineage (black ring: alive)")
    ax.legend(loc="center left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _plot_diversity(history: list[dict[str, float]], env: SurrogateEnv, path: Path) -> None:
    steps = [m["step"] for m in history]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for key in ("genotypic_diversity", "behavioural_diversity", "solve_rate"):
        ax.plot(steps, [m[key] for m in history], marker="o", label=key)
    ax.set(xlabel="step", title=f"phylogenetic diversity {env.lineage.phylogenetic_diversity():.0f} edges")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    """Parse the command line and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=None)
    parser.add_argument("--generations", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(1)  # tiny tensors: one thread avoids hand-off overhead
    out = args.out or Path(tempfile.mkdtemp(prefix="redqueen-custom-selection-"))
    print(run(out, args.generations))


if __name__ == "__main__":
    main()
