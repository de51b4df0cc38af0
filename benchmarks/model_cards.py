"""Model cards for the kept models, written from their stored figures (nothing is re-measured).

Every model measured on the hand-written set gets the card columns of issue "a base model that
reads the programs people write": greedy accuracy on ``redqueen/assets/handwritten_code_o.jsonl``
and valid-and-new proposals (a valid proposal whose canonical form is in no training program of
the model). The figures come from the result files that measured them:

- ``results/gpu_tiny_coder/``: ``results/handwritten.json`` (``benchmarks/handwritten.py``); they
  are merged into its ``training.json`` (``handwritten``, ``novelty``) and the card is rewritten
  by :func:`redqueen.tinycoder.card.write_model_card`, so that the card and its figures agree;
- ``results/tiny_coder_<arm>/`` (``idioms``, ``grammar``, ``composed``): the arm's entry of
  ``results/continued_pretraining.json``, scored beside tiny-coder in the same process. These
  models continue tiny-coder rather than start from nothing, so their card is shorter and says so.

The shipped tiny-coder's card carries the same section, appended from its own ``training.json``.

Usage::

    python benchmarks/model_cards.py          # rewrite the cards
    python benchmarks/model_cards.py --check  # exit 1 if a committed card differs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from redqueen.tinycoder.card import outside_the_generator, write_model_card
from redqueen.tinycoder.handwritten import load_handwritten

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
GPU_TINY = RESULTS / "gpu_tiny_coder"
CONTINUED = {arm: RESULTS / f"tiny_coder_{arm}" for arm in ("idioms", "grammar", "composed")}
GPU_TINY_NOTES = (
    "Pretrained on one H100 (bf16 autocast) from the saved lean corpus of mini-coder (150,000"
    " training programs), two epochs; the rates were measured on the GPU, 1,024 prompts a"
    " generation batch."
)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def gpu_tiny_coder_summary() -> dict:
    """gpu-tiny-coder's ``training.json`` with the hand-written and novelty figures of
    ``results/handwritten.json`` merged in (``handwritten``, ``novelty``, ``notes``)."""
    summary = json.loads((GPU_TINY / "training.json").read_text())
    measured = json.loads((RESULTS / "handwritten.json").read_text())
    model = measured["models"]["gpu-tiny-coder"]
    summary["handwritten"] = {
        **model["handwritten"],
        "in_training": measured["corpora"]["gpu-tiny-coder"]["handwritten_in_training"],
    }
    summary["novelty"] = {
        "measured_by": "`benchmarks/handwritten.py` on a CPU (two references from the held-out"
        " split, seed 0, 128 code_o and 64 code_i and code_f proposals)",
        "temperature": 1.0,
        "task_types": {
            t: {k: model["proposals"][f"{t} T=1.0"][k] for k in ("n", "valid", "valid_and_new", "recited_of_valid")}
            for t in ("code_o", "code_i", "code_f")
        },
    }  # fmt: skip
    summary["notes"] = GPU_TINY_NOTES
    return summary


def continued_summary(arm: str) -> tuple[dict, dict]:
    """The arm's model summary (its ``training.json`` with ``handwritten`` and ``novelty``
    rebuilt from the per-problem values) and the arm's entry of ``continued_pretraining.json``."""
    entry = json.loads((RESULTS / "continued_pretraining.json").read_text())["arms"][arm]
    summary = json.loads((CONTINUED[arm] / "training.json").read_text())
    answers = entry["per_problem"]["ours"]["handwritten"]
    idiom_of = {p.id: p.idiom for p in load_handwritten()}
    by_idiom: dict[str, list[bool]] = {}
    for pid, ok in answers.items():
        by_idiom.setdefault(idiom_of[pid], []).append(bool(ok))
    summary["handwritten"] = {
        "n": len(answers),
        "correct": sum(map(bool, answers.values())),
        "accuracy": sum(map(bool, answers.values())) / len(answers),
        "max_new_tokens": 96,
        "by_idiom": {k: sum(v) / len(v) for k, v in sorted(by_idiom.items())},
    }
    drawn = entry["endpoints"]["ours"]["proposals"]
    summary["novelty"] = {
        "measured_by": "`benchmarks/continued_pretraining.py` on a CPU (two references from the"
        " arm's held-out split, 128 code_o proposals; new to this corpus's training split and to"
        " tiny-coder's)",
        "temperature": 1.0,
        "task_types": {
            "code_o": {
                "n": drawn["n"],
                "valid": drawn["valid"],
                "valid_and_new": drawn["valid_and_new"],
                "recited_of_valid": (drawn["valid"] - drawn["valid_and_new"]) / drawn["valid"],
            }
        },
    }
    return summary, entry


def continued_card(arm: str) -> str:
    """The card of tiny-coder continued on the arm's corpus."""
    summary, entry = continued_summary(arm)
    loss, gap = summary["loss"], entry["loss_gap"]
    ends = entry["endpoints"]
    rows = []
    for key, label in (("handwritten", "hand-written code_o, greedy"), ("heldout_greedy", "generator held-out code_o, greedy (tiny-coder's)")):
        cells = [f"{e[key]['correct']}/{e[key]['n']}, {_pct(e[key]['accuracy'])} [{_pct(e[key]['wilson95'][0])}, {_pct(e[key]['wilson95'][1])}]" for e in (ends["ours"], ends["tiny-coder"])]  # fmt: skip
        rows.append(f"| {label} | {cells[0]} | {cells[1]} |")
    prop = [ends[m]["proposals"] for m in ("ours", "tiny-coder")]
    rows.append(f"| code_o proposals at T = 1, valid | {_pct(prop[0]['valid'])} | {_pct(prop[1]['valid'])} |")
    rows.append(f"| code_o proposals at T = 1, valid and new | {_pct(prop[0]['valid_and_new'])} | {_pct(prop[1]['valid_and_new'])} |")  # fmt: skip
    decisions = ", ".join(f"`{k}`: {json.dumps(v)}" for k, v in entry["decisions"].items())
    text = f"""---
library_name: transformers
tags: [redqueen, tiny-coder, llama, code]
---

# {summary["name"]}

The shipped tiny-coder ({summary["parameters"] / 1e6:.2f}M parameters, its tokenizer unchanged)
continued by `python -m redqueen.tinycoder.pretrain --init-from` on the `{arm}` arm's corpus of
`benchmarks/CONTINUED_PRETRAINING.md` ({entry["corpus"]["train"]} training programs,
{entry["idiom_share"]} drawn from the natural-program source; excluded: {entry["corpus"]["excluded"]}).
Weights stored in {summary["storage_dtype"]}; `heldout.jsonl` holds the arm's held-out split,
`training.json` every training figure. The tokenizer is tiny-coder's: load it from
`redqueen/assets/tiny-coder`. Nothing here ships; the model is kept so that every endpoint can
be re-scored (`benchmarks/README.md`, "tiny-coder continued on natural programs").

## Training

| | |
| --- | --- |
| steps, epochs | {summary["steps"]}, {summary["epochs"]} |
| batch x sequence | {summary["batch_size"]} x {summary["seq_len"]} tokens ({summary["tokens_seen"]} tokens seen) |
| optimizer | AdamW, peak lr {summary["lr"]}, warm-up + cosine to 10%, weight decay 0.1, grad clip 1.0 |
| loss: training / held-out / OOD | {loss["train"]} / {loss["heldout"]} / {loss["ood"]} |
| held-out minus training loss | {gap["gap"]} (SE {gap["gap_se"]}) |
| device, threads | {summary["device"]}, {summary["cpu_threads"]} ({summary["tokens_per_second"]} tokens/s, {summary["train_seconds"]} s) |

## Endpoints, beside tiny-coder in the same process

| figure | {summary["name"]} | tiny-coder |
| --- | --- | --- |
{chr(10).join(rows)}

Decisions of the plan: {decisions}.

{outside_the_generator(summary)}
"""
    return text


def cards() -> dict[Path, str]:
    """Every card this script writes, by path."""
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        write_model_card(tmp, gpu_tiny_coder_summary())
        out[GPU_TINY / "README.md"] = (Path(tmp) / "README.md").read_text()
    for arm, folder in CONTINUED.items():
        out[folder / "README.md"] = continued_card(arm)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed cards, write nothing")
    args = parser.parse_args()
    made = cards()
    if args.check:
        stale = [str(p.relative_to(ROOT)) for p, text in made.items() if not p.is_file() or p.read_text() != text]
        if stale:
            print("cards that differ from their figures: " + ", ".join(stale), file=sys.stderr)
            sys.exit(1)
        return
    summary = gpu_tiny_coder_summary()
    (GPU_TINY / "training.json").write_text(json.dumps(summary, indent=2) + "\n")
    for path, text in made.items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
