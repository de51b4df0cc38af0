"""The size probe of ``benchmarks/PRETRAIN_SCALING.md``: held-out loss per size at equal time.

For each size the probe measures its training rate (tokens/s over warm steps on this machine),
then trains it for the tokens it processes in T minutes (T = 3 and 8 by default) with the
``cpu`` profile's settings, and reads the held-out loss. Every finished run is written at once
to ``--out`` (default ``benchmarks/results/pretrain_scaling.json``); a run already there is
skipped, so an interrupted probe resumes. ``--plot`` draws ``pretrain_scaling.png``.

Usage::

    python benchmarks/pretrain_scaling.py --corpus out/coder-corpus --work out/scaling
    python benchmarks/pretrain_scaling.py --plot
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import time
from pathlib import Path

import torch
from transformers import LlamaForCausalLM

from redqueen.tinycoder.model import SIZES, tiny_coder_config
from redqueen.tinycoder.pretrain import PROFILES
from redqueen.tinycoder.pretrain import main as pretrain

RESULTS = Path(__file__).resolve().parent / "results"


def measure_rate(size: str, batch: int, seq_len: int, vocab: int, threads: int) -> float:
    """Training tokens/s of ``size`` (float32, AdamW) over 4 steps after 2 warm ones."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    config = tiny_coder_config(
        vocab_size=vocab,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        max_position_embeddings=seq_len,
        **SIZES[size],
    )
    model = LlamaForCausalLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(3, vocab, (batch, seq_len))
    timings = []
    for _ in range(6):
        t0 = time.perf_counter()
        loss = model(input_ids=x, labels=x).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        timings.append(time.perf_counter() - t0)
    return batch * seq_len / (sum(timings[2:]) / len(timings[2:]))


def _write(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def run(args: argparse.Namespace) -> dict:
    profile = PROFILES["cpu"]
    data = json.loads(args.out.read_text()) if args.out.is_file() else {}
    data.setdefault(
        "setup",
        {
            "plan": "benchmarks/PRETRAIN_SCALING.md",
            "corpus": str(args.corpus),
            "batch_size": profile["batch_size"],
            "seq_len": profile["seq_len"],
            "lr": profile["lr"],
            "threads": profile["cpu_threads"],
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        },
    )
    rates = data.setdefault("rates", {})
    runs = data.setdefault("runs", {})
    shared = None
    for size in args.sizes:
        if size not in rates:
            rates[size] = round(
                measure_rate(
                    size,
                    profile["batch_size"],
                    profile["seq_len"],
                    profile["vocab_size"],
                    profile["cpu_threads"],
                )
            )
            _write(args.out, data)
        for minutes in args.minutes:
            key = f"{size}@{minutes:g}min"
            out = args.work / key
            ckpt = args.work / f"{key}-checkpoint"
            if key in runs:
                shared = shared or ckpt
                continue
            tokens = rates[size] * 60 * minutes
            if shared is not None and not ckpt.exists():
                # The tokenizer and the packed first epoch are the same for every run.
                ckpt.mkdir(parents=True)
                shutil.copytree(shared / "tokenizer", ckpt / "tokenizer")
                os.link(shared / "epoch0.pt", ckpt / "epoch0.pt")
            t0 = time.time()
            summary = pretrain(
                [
                    "--profile", "cpu",
                    "--corpus", str(args.corpus),
                    "--out", str(out),
                    "--size", size,
                    "--tokens", str(int(tokens)),
                    "--eval-n", "0",
                    "--loss-batches", "16",
                    "--checkpoint-minutes", "1000",
                ]
            )  # fmt: skip
            shared = ckpt
            runs[key] = {
                "size": size,
                "minutes": minutes,
                "parameters": summary["parameters"],
                "tokens_budget": int(tokens),
                "tokens_seen": summary["tokens_seen"],
                "steps": summary["steps"],
                "train_seconds": summary["train_seconds"],
                "wall_seconds": round(time.time() - t0, 1),
                "loss": summary["loss"],
                "loss_gap": summary["loss_gap"],
                "ood_loss_gap": summary["ood_loss_gap"],
            }
            _write(args.out, data)
    return data


def plot(path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(path.read_text())
    fig, ax = plt.subplots(figsize=(6, 4))
    sizes = sorted({r["size"] for r in data["runs"].values()}, key=list(SIZES).index)
    for size in sizes:
        pts = sorted(
            (r["tokens_seen"], r["loss"]["heldout"], r["minutes"])
            for r in data["runs"].values()
            if r["size"] == size
        )
        params = next(r["parameters"] for r in data["runs"].values() if r["size"] == size)
        ax.plot(
            [p[0] / 1e6 for p in pts],
            [p[1] for p in pts],
            marker="o",
            label=f"{size} ({params / 1e6:.2f}M)",
        )
        for tokens, loss, minutes in pts:
            ax.annotate(f"{minutes:g} min", (tokens / 1e6, loss), fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("training tokens (millions, log scale)")
    ax.set_ylabel("held-out loss (nats per trained token)")
    ax.set_title("Size probe on 2 CPU cores (labels: training minutes)")
    ax.legend()
    fig.tight_layout()
    figure = path.with_suffix(".png")
    fig.savefig(figure, dpi=120)
    return figure


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", type=Path, help="splits from redqueen.tinycoder.splits")
    p.add_argument("--work", type=Path, default=Path("out/scaling"), help="model folders")
    p.add_argument("--sizes", nargs="+", default=["mini", "tiny", "base"], choices=sorted(SIZES))
    p.add_argument("--minutes", nargs="+", type=float, default=[3.0, 8.0])
    p.add_argument("--out", type=Path, default=RESULTS / "pretrain_scaling.json")
    p.add_argument("--plot", action="store_true", help="only draw the figure")
    args = p.parse_args()
    if args.plot:
        print(plot(args.out))
        return
    if args.corpus is None:
        p.error("--corpus is required to run the probe")
    run(args)
    print(plot(args.out))


if __name__ == "__main__":
    main()
