"""A selection-scheme study on the surrogate environment: several schemes, several seeds, one plot.

Each scheme picks the parents in ``SurrogateEnv``'s replacement step (ranking for culling stays
``rating_lcb``); every run records the metrics the real environment reports. The study writes the
mean curves of solve rate, teacher reward, genotypic and behavioural diversity per scheme.

Usage::

    python examples/surrogate_study.py [OUT_DIR] [--steps N] [--seeds N] [--schemes a,b,...]

Writes ``study.json`` (per-scheme mean of the final metrics) and ``study.png`` to OUT_DIR
(default: a new temporary directory) and prints the directory.
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

from redqueen.environments.surrogate import SurrogateEnv  # noqa: E402
from redqueen.evo import ReplacementConfig  # noqa: E402

PANELS = ("solve_rate", "teacher_reward", "genotypic_diversity", "behavioural_diversity")
SCHEME_PARAMS = {"tournament": {"tournsize": 2}, "map_elites": {"bins": 4}, "novelty": {"neighbours": 3}}
POPULATION = SurrogateEnv.default_population.updated(teachers=6, students=6, rank=2, alpha=4.0)


def study(out: Path, schemes: list[str], steps: int = 12, seeds: int = 2) -> Path:
    """Run every scheme for ``steps`` steps on ``seeds`` seeds; write JSON and a plot."""
    out.mkdir(parents=True, exist_ok=True)
    curves: dict[str, np.ndarray] = {}
    for scheme in schemes:
        runs = []
        for seed in range(seeds):
            replacement = ReplacementConfig(replace_every=2, cull_fraction=0.34, selection=scheme,
                                            selection_params=SCHEME_PARAMS.get(scheme, {}))
            env = SurrogateEnv(population=POPULATION, replacement=replacement, seed=seed)
            runs.append([[env.step().metrics[k] for k in PANELS] for _ in range(steps)])
        curves[scheme] = np.mean(np.asarray(runs), axis=0)  # (steps, panels)
    summary = {s: dict(zip(PANELS, map(float, c[-1]), strict=True)) for s, c in curves.items()}
    (out / "study.json").write_text(json.dumps({"steps": steps, "seeds": seeds, "final": summary}, indent=2))

    fig, axes = plt.subplots(1, len(PANELS), figsize=(4 * len(PANELS), 3.2))
    for ax, (j, panel) in zip(axes, enumerate(PANELS), strict=True):
        for scheme, c in curves.items():
            ax.plot(np.arange(steps), c[:, j], label=scheme)
        ax.set(title=panel, xlabel="step")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out / "study.png", dpi=90)
    plt.close(fig)
    return out


def main() -> None:
    """Parse the command line and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=None)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--schemes", default="rating_lcb,tournament,novelty,map_elites")
    args = parser.parse_args()
    torch.set_num_threads(1)  # tiny tensors: one thread avoids hand-off overhead
    out = args.out or Path(tempfile.mkdtemp(prefix="redqueen-study-"))
    print(study(out, args.schemes.split(","), args.steps, args.seeds))


if __name__ == "__main__":
    main()
