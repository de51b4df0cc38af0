"""Base model sizes trained on the same corpus and schedule: losses and rates side by side.

Reads finished model folders of ``python -m redqueen.tinycoder.pretrain`` (their
``training.json``, rates included) and writes one table of what each learned, next to
reference models measured on the same held-out code_o tasks (``results/base_models.json``:
tiny-coder and mini-coder, 128 tasks, seed 0). Proportions carry Wilson 95% intervals over the
128 tasks or proposals (one seed of sampling: the intervals are for the task draw, not for
retraining). ``--plot`` draws the figure.

Usage::

    python benchmarks/pretrain_sizes.py --models out/gpu-tiny-coder out/gpu-base-coder \\
        out/gpu-small-coder --out benchmarks/results/pretrain_sizes_h100.json --plot
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
#: The code_o figures compared across models (held-out split).
FIGURES = ("greedy_solve_rate", "pass_at_k", "solve_rate", "valid_share")


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion ``successes / n``."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _code_o(rates: dict) -> dict:
    """The held-out code_o figures of one model with their intervals."""
    row = {}
    for key in FIGURES:
        value = rates[key]["code_o"]
        # solve_rate is over tasks x samples; its interval is over tasks (conservative).
        n = rates["n_proposals"] if key == "valid_share" else rates["n_tasks"]
        low, high = wilson(value * n, n)
        row[key] = {"value": round(value, 4), "low": round(low, 4), "high": round(high, 4)}
    return row


def collect(models: list[Path]) -> dict:
    """One entry per model folder, and the reference models."""
    out: dict = {"models": {}, "references": {}}
    for folder in models:
        s = json.loads((folder / "training.json").read_text())
        out["models"][s["name"]] = {
            "size": s["size"],
            "parameters": s["parameters"],
            "tokens_seen": s["tokens_seen"],
            "epochs": s["epochs"],
            "train_seconds": s["train_seconds"],
            "tokens_per_second": s["tokens_per_second"],
            "machine": s.get("machine", s.get("device")),
            "loss": s["loss"],
            "loss_gap": s["loss_gap"],
            "ood_loss_gap": s["ood_loss_gap"],
            "weights_bytes": s["weights_bytes"],
            "command": s.get("command"),
            "heldout_code_o": _code_o(s["rates"]["heldout"]),
            "ood_code_o": _code_o(s["rates"]["ood"]) if "ood" in s["rates"] else None,
        }
    refs = json.loads((RESULTS / "base_models.json").read_text())
    for label, entry in refs["models"].items():
        name = "tiny-coder" if label == "tiny-coder" else Path(entry["path"]).name
        out["references"][name] = {
            "parameters": entry["parameters"],
            "heldout_code_o": _code_o(entry["heldout"]),
            "setup": refs["setup"],
        }
    return out


def plot(result: dict, path: Path) -> None:
    """Held-out code_o greedy pass@1, pass@8 and valid proposals per model, with intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(n, e) for n, e in result["references"].items()]
    rows += sorted(result["models"].items(), key=lambda item: item[1]["parameters"])
    labels = [f"{n.removesuffix('-coder')}\n{e['parameters'] / 1e6:.1f}M" for n, e in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=False)
    titles = {
        "greedy_solve_rate": "greedy pass@1",
        "pass_at_k": "pass@8 at T=1",
        "valid_share": "valid proposals",
    }
    for ax, key in zip(axes, titles, strict=True):
        values = [e["heldout_code_o"][key] for _, e in rows]
        x = range(len(rows))
        colours = ["0.6"] * len(result["references"]) + ["C0"] * len(result["models"])
        ax.bar(x, [v["value"] for v in values], color=colours)
        ax.errorbar(
            x,
            [v["value"] for v in values],
            yerr=[
                [v["value"] - v["low"] for v in values],
                [v["high"] - v["value"] for v in values],
            ],
            fmt="none",
            ecolor="k",
            capsize=3,
        )
        ax.set_xticks(list(x), labels, fontsize=7)
        ax.set_title(f"held-out code_o: {titles[key]}")
        ax.set_ylim(0, 1 if key == "valid_share" else 0.6)
    fig.suptitle(
        "grey: reference models (CPU-measured); blue: sizes trained on one corpus (95% Wilson)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, nargs="+", required=True, help="model folders")
    parser.add_argument("--out", type=Path, default=RESULTS / "pretrain_sizes.json")
    parser.add_argument("--plot", action="store_true", help="draw the figure beside --out")
    args = parser.parse_args(argv)
    missing = [str(m) for m in args.models if not (m / "training.json").is_file()]
    if missing:
        parser.error(f"no training.json in {', '.join(missing)}")
    result = collect(args.models)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.plot:
        plot(result, args.out.with_suffix(".png"))
    return result


if __name__ == "__main__":
    main()
