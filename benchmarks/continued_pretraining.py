"""tiny-coder continued on natural programs: does it learn to read what people write?

The plan, hypotheses, endpoints and decision rules are in ``benchmarks/CONTINUED_PRETRAINING.md``,
committed before any run. One arm per call, each resumable stage by stage:

1. the corpus: ``redqueen.tinycoder.splits`` with the arm's ``--idiom-share``, excluding the
   canonical forms of tiny-coder's 700 held-out programs (the hand-written set is excluded from
   every corpus anyway);
2. continued pretraining of the shipped tiny-coder (``pretrain --init-from``) on it, one epoch,
   stopped at each quarter of its steps so that the checkpoint is scored (the dose-response);
3. the endpoints of the final model and of tiny-coder in the same run: greedy accuracy on the
   hand-written set, greedy code_o on tiny-coder's held-out programs, code_o proposals at T = 1
   (valid, and valid and new to either model's training corpus), the training / held-out loss
   gap with its standard error; every per-problem value stored.

Writes ``results/continued_pretraining.json`` (the arm's entry replaced, others kept) and the
final model under ``results/tiny_coder_<arm>/``.

Usage::

    python benchmarks/continued_pretraining.py --arm idioms [--workdir runs/continued]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy import stats
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
OUT = RESULTS / "continued_pretraining.json"
TINY = ROOT / "redqueen" / "assets" / "tiny-coder"

#: The arms of the plan (CONTINUED_PRETRAINING.md, "Recipe" and amendment (a)): the idiom share
#: of the corpus's candidates, its training programs and the epochs the token budget may span.
ARMS = {"idioms": (0.9, 12_000, 2), "grammar": (0.0, 30_000, 1), "composed": (0.6, 30_000, 2)}
#: The share of an arm's idiom programs written by composition (``splits --composed-share``).
COMPOSED_SHARE = {"composed": 0.75}
HELDOUT, OOD = 1_000, 200
CORPUS_SEED = 1
TOKENS = 6_000_000
LR = 1e-3
BATCH, SEQ = 8, 1024
DOSES = (0.25, 0.5, 0.75, 1.0)
#: Endpoint sizes.
HELDOUT_PROBLEMS = 256  # tiny-coder's held-out programs answered greedily (code_o)
DOSE_HELDOUT_PROBLEMS = 128  # at the intermediate doses
PROPOSALS = 128  # code_o proposals at T = 1
ANSWER_TOKENS = 96  # the tiny preset's solve budget
PROPOSAL_TOKENS = 320  # the card's
LOSS_BATCHES = 32
#: Targets (issue and card).
TARGETS = {"handwritten": 0.30, "heldout_greedy": 0.15, "valid_and_new": 0.60, "loss_gap": 0.05}
NONINFERIORITY = -0.03


def _run(cmd: list[str]) -> None:
    print("continued_pretraining:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1"))


def _code_version() -> str:
    """The checkout's commit, marked ``+changes`` when the package has uncommitted edits."""
    git = ["git", "-C", str(ROOT)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "redqueen"], capture_output=True, text=True)
    return commit.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def build_corpus(folder: Path, arm: str) -> None:
    if (folder / "train.jsonl").is_file():
        return
    share, train, _ = ARMS[arm]
    _run([
        sys.executable, "-m", "redqueen.tinycoder.splits", "--out", str(folder),
        "--train", str(train), "--heldout", str(HELDOUT), "--ood", str(OOD),
        "--seed", str(CORPUS_SEED), "--idiom-share", str(share),
        "--exclude", str(TINY / "heldout.jsonl"), "--workers", "1",
        *(["--composed-share", str(COMPOSED_SHARE[arm])] if arm in COMPOSED_SHARE else []),
    ])  # fmt: skip


def pretrain_command(model_dir: Path, corpus: Path, arm: str, threads: int) -> list[str]:
    epochs = ARMS[arm][2]
    return [
        sys.executable, "-m", "redqueen.tinycoder.pretrain", "--profile", "cpu",
        "--out", str(model_dir), "--init-from", str(TINY), "--corpus", str(corpus),
        "--epochs", str(epochs), "--tokens", str(TOKENS), "--lr", str(LR),
        "--batch-size", str(BATCH), "--seq-len", str(SEQ), "--cpu-threads", str(threads),
        "--eval-n", "0", "--workers", "1", "--loss-batches", str(LOSS_BATCHES),
        "--name", model_dir.name,
    ]  # fmt: skip


def checkpoint_model(work: Path) -> LlamaForCausalLM:
    """The model of a paused run's checkpoint."""
    model = AutoModelForCausalLM.from_pretrained(TINY).float()
    state = torch.load(work / "state.pt", weights_only=True)
    model.load_state_dict(state["model"])
    return model.eval()


def greedy_heldout(model, tokenizer, entries, executor) -> list[bool]:
    """Greedy code_o on ``entries`` (first input pair), one verdict per problem."""
    from redqueen.tinycoder.corpus import entry_task
    from redqueen.tinycoder.sampling import generate_texts
    from redqueen.verifiers import AnswerStatus, check_answers
    from redqueen.verifiers.formats import parse_solution, solve_prompt

    tasks = [entry_task(e, "code_o", 0) for e in entries]
    texts = generate_texts(
        model, tokenizer, [solve_prompt(t) for t in tasks], max_new_tokens=ANSWER_TOKENS,
        temperature=0.0, seed=0, batch_size=64,
    )  # fmt: skip
    answers = [parse_solution("code_o", t) for t in texts]
    statuses = check_answers(list(zip(tasks, answers, strict=True)), executor)
    return [s == AnswerStatus.CORRECT for s in statuses]


def handwritten(model, tokenizer, executor) -> dict[str, bool]:
    from redqueen.tinycoder.rates import measure_handwritten
    from redqueen.verifiers import AnswerStatus

    score = measure_handwritten(model, tokenizer, executor, max_new_tokens=ANSWER_TOKENS)
    return {
        i: s == AnswerStatus.CORRECT.value for i, s in zip(score.ids, score.statuses, strict=True)
    }


def proposals(model, tokenizer, entries, executor, known: set[bytes]) -> list[dict]:
    from redqueen.tinycoder.sampling import sample_proposals

    drawn = sample_proposals(
        model, tokenizer, entries, task_type="code_o", n=PROPOSALS, rng=random.Random(0),
        executor=executor, temperature=1.0, seed=0, max_new_tokens=PROPOSAL_TOKENS,
    )  # fmt: skip
    return [
        {"parsed": s.proposal is not None, "valid": s.valid, "new": s.is_new(known)} for s in drawn
    ]


@torch.no_grad()
def loss_gap(model, tokenizer, corpus: Path, ckpt: Path) -> dict[str, float]:
    """Held-out minus training loss on the arm's corpus (lean documents as trained: the
    training split's are the run's own epoch, read from its checkpoint folder), with the
    standard error over the batches of each split; the means are the run's own ``loss``."""
    from redqueen.tinycoder._documents import _Data
    from redqueen.tinycoder.pretrain import parse_args
    from redqueen.tinycoder.splits import load_splits

    args = parse_args(["--out", "unused", "--profile", "cpu", "--batch-size", str(BATCH)])
    return measure_gap(model, _Data(load_splits(corpus), tokenizer, args, ckpt))


@torch.no_grad()
def measure_gap(model, data) -> dict[str, float]:
    """Held-out minus training loss over :data:`LOSS_BATCHES` batches of :data:`BATCH`
    sequences of each split of ``data`` (the training split's first epoch as trained), on the
    model's device, with the standard error of the difference."""
    device = next(model.parameters()).device
    per: dict[str, list[float]] = {}
    for name in ("train", "heldout"):
        ids, mask = data.held(name) if name == "heldout" else data.epoch(0)
        losses = []
        for b in range(LOSS_BATCHES):
            batch = ids[b * BATCH : (b + 1) * BATCH].long().to(device)
            m = mask[b * BATCH : (b + 1) * BATCH].to(device)
            if len(batch) == 0:
                break
            losses.append(
                model(input_ids=batch, labels=batch.masked_fill(m == 0, -100)).loss.item()
            )
        per[name] = losses
    t, h = np.array(per["train"]), np.array(per["heldout"])
    enough = min(len(t), len(h)) > 1
    se = math.sqrt(t.var(ddof=1) / len(t) + h.var(ddof=1) / len(h)) if enough else float("nan")
    return {
        "train": round(float(t.mean()), 4),
        "heldout": round(float(h.mean()), 4),
        "gap": round(float(h.mean() - t.mean()), 4),
        "gap_se": round(se, 4),
        "batches": [len(t), len(h)],
    }


def wilson(k: int, n: int) -> list[float]:
    lo, hi = stats.binomtest(k, n).proportion_ci(method="wilson")
    return [round(lo, 4), round(hi, 4)]


def paired(ours: list[bool], anchor: list[bool]) -> dict:
    """Paired difference of two accuracies on the same problems: the estimate, its 95% normal
    interval (the variance of a paired difference, from the discordant pairs) and the exact
    McNemar p-value."""
    a = np.array(ours, bool)
    b = np.array(anchor, bool)
    n = len(a)
    only_ours, only_anchor = int((a & ~b).sum()), int((~a & b).sum())
    diff = (only_ours - only_anchor) / n
    var = ((only_ours + only_anchor) / n - diff**2) / n
    half = 1.96 * math.sqrt(max(var, 0.0))
    discordant = only_ours + only_anchor
    p = stats.binomtest(only_ours, discordant).pvalue if discordant else 1.0
    return {
        "difference": round(diff, 4),
        "ci95": [round(diff - half, 4), round(diff + half, 4)],
        "only_ours": only_ours,
        "only_anchor": only_anchor,
        "mcnemar_p": round(float(p), 5),
    }


def score(model, tokenizer, heldout, executor, known, n_heldout: int, full: bool) -> dict:
    row: dict = {"handwritten": handwritten(model, tokenizer, executor)}
    row["heldout_greedy"] = greedy_heldout(model, tokenizer, heldout[:n_heldout], executor)
    if full:
        row["proposals"] = proposals(model, tokenizer, heldout, executor, known)
    return row


def figures(row: dict) -> dict:
    hw = list(row["handwritten"].values())
    out = {
        "handwritten": {"correct": sum(hw), "n": len(hw), "accuracy": round(sum(hw) / len(hw), 4),
                        "wilson95": wilson(sum(hw), len(hw))},
        "heldout_greedy": {"correct": sum(row["heldout_greedy"]), "n": len(row["heldout_greedy"]),
                           "accuracy": round(sum(row["heldout_greedy"]) / len(row["heldout_greedy"]), 4),
                           "wilson95": wilson(sum(row["heldout_greedy"]), len(row["heldout_greedy"]))},
    }  # fmt: skip
    if "proposals" in row:
        drawn = row["proposals"]
        valid = sum(p["valid"] for p in drawn)
        new = sum(p["valid"] and p["new"] for p in drawn)
        out["proposals"] = {
            "n": len(drawn),
            "parsed": round(sum(p["parsed"] for p in drawn) / len(drawn), 4),
            "valid": round(valid / len(drawn), 4),
            "valid_and_new": round(new / len(drawn), 4),
            "valid_and_new_wilson95": wilson(new, len(drawn)),
        }
    return out


def explore(arm: str, workdir: Path) -> dict:
    """Exploratory, not in the plan (added after the dose-response showed no hand-written gain):
    greedy code_o on the arm's own held-out programs, idiom programs (level 0) and the
    grammar's apart, for the final model and tiny-coder; whether a model that does not read the
    hand-written set reads the idiom source's own unseen programs says if the gap is one of
    capacity or of distribution."""
    from redqueen.tinycoder.splits import load_splits
    from redqueen.verifiers import Executor

    work = workdir / arm
    held = load_splits(work / "corpus").heldout
    parts = {
        "idiom_heldout": [e for e in held if e.level == 0][:HELDOUT_PROBLEMS],
        "grammar_heldout": [e for e in held if e.level > 0][:HELDOUT_PROBLEMS],
    }
    tokenizer = AutoTokenizer.from_pretrained(TINY)
    out: dict = {"note": explore.__doc__.split(":", 1)[0]}
    with Executor(workers=1) as executor:
        for name, folder in (("tiny-coder", TINY), ("ours", work / f"tiny-coder-{arm}")):
            model = AutoModelForCausalLM.from_pretrained(folder).eval()
            out[name] = {}
            for part, entries in parts.items():
                if not entries:
                    continue
                ok = greedy_heldout(model, tokenizer, entries, executor)
                out[name][part] = {
                    "correct": sum(ok),
                    "n": len(ok),
                    "wilson95": wilson(sum(ok), len(ok)),
                }
    return out


def save_arm(arm: str, entry: dict) -> None:
    """Write ``entry`` as the arm's, keeping the other arms as the file has them now (the arms
    run side by side, each in its own process)."""
    result = json.loads(OUT.read_text()) if OUT.is_file() else {"arms": {}}
    result["arms"][arm] = entry
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(OUT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", choices=sorted(ARMS), required=True)
    parser.add_argument("--workdir", type=Path, default=ROOT / "runs" / "continued")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument(
        "--tiny-corpus",
        type=Path,
        help="tiny-coder's rebuilt training corpus (.jsonl; benchmarks/handwritten.py rebuilds it)",
    )
    parser.add_argument(
        "--explore", action="store_true", help="only the exploratory measure of a finished arm"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.explore:
        entry = json.loads(OUT.read_text())["arms"][args.arm]
        entry["exploratory"] = explore(args.arm, args.workdir)
        if args.arm == "composed":  # amendment (a) named this measure before the arm ran
            entry["exploratory"]["note"] = "Pre-specified secondary endpoint of amendment (a)"
        save_arm(args.arm, entry)
        print(json.dumps(entry["exploratory"], indent=2))
        return
    from redqueen.tinycoder.canonical import canonical_key
    from redqueen.tinycoder.corpus import load_corpus
    from redqueen.tinycoder.splits import load_splits
    from redqueen.verifiers import Executor

    work = args.workdir / args.arm
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus"
    build_corpus(corpus, args.arm)
    model_dir = work / f"tiny-coder-{args.arm}"
    ckpt = work / f"{model_dir.name}-checkpoint"
    saved = json.loads(OUT.read_text())["arms"] if OUT.is_file() else {}
    entry = saved.get(args.arm, {"idiom_share": ARMS[args.arm][0], "doses": {}})
    entry.setdefault("composed_share", COMPOSED_SHARE.get(args.arm, 0.0))
    entry.setdefault("code_version", _code_version())
    heldout = load_corpus(TINY / "heldout.jsonl")
    tokenizer = AutoTokenizer.from_pretrained(TINY)
    cmd = pretrain_command(model_dir, corpus, args.arm, args.threads)
    with Executor(workers=1) as executor:
        total = None
        for dose in DOSES:
            key = f"{dose:.2f}"
            if dose < 1.0 and key in entry["doses"]:
                continue
            if dose < 1.0:
                if total is None:  # the run's step count, from a checkpoint at step 0
                    if not (ckpt / "state.pt").is_file():
                        _run([*cmd, "--stop-at-step", "0"])
                    total = int(torch.load(ckpt / "state.pt", weights_only=True)["total"])
                step = round(dose * total)
                _run([*cmd, "--stop-at-step", str(step)])
                model = checkpoint_model(ckpt)
            else:
                if not (model_dir / "training.json").is_file():
                    _run(cmd)
                model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
                step = json.loads((model_dir / "training.json").read_text())["steps"]
            row = score(model, tokenizer, heldout, executor, set(), DOSE_HELDOUT_PROBLEMS, False)
            entry["doses"][key] = {"step": step, "tokens": step * BATCH * SEQ, **figures(row)}
            save_arm(args.arm, entry)
            print("continued_pretraining: dose", key, entry["doses"][key], flush=True)

        # The endpoints, ours and the anchor's in the same run.
        splits = load_splits(corpus)
        known = {canonical_key(e.program) for e in splits.train}
        if args.tiny_corpus is not None:
            known |= {canonical_key(e.program) for e in load_corpus(args.tiny_corpus)}
        rows = {}
        for name, folder in (("tiny-coder", TINY), ("ours", model_dir)):
            model = AutoModelForCausalLM.from_pretrained(folder).eval()
            rows[name] = score(model, tokenizer, heldout, executor, known, HELDOUT_PROBLEMS, True)
        ours = AutoModelForCausalLM.from_pretrained(model_dir).eval()
        gap = loss_gap(ours, tokenizer, corpus, ckpt)
    summary = json.loads((model_dir / "training.json").read_text())
    entry.update(
        corpus={"train": len(splits.train), "heldout": len(splits.heldout),
                "idiom_programs": sum(e.level == 0 for e in splits.train), "seed": CORPUS_SEED,
                "excluded": "tiny-coder's 700 held-out programs and the hand-written set"},
        training={k: summary.get(k) for k in ("steps", "tokens_seen", "train_seconds",
                                               "tokens_per_second", "lr", "cpu_threads", "loss")},
        novelty_known=("this corpus's training split and tiny-coder's" if args.tiny_corpus
                       else "this corpus's training split only"),
        endpoints={name: figures(row) for name, row in rows.items()},
        paired={k: paired(list(rows["ours"][k].values()) if k == "handwritten" else rows["ours"][k],
                          list(rows["tiny-coder"][k].values()) if k == "handwritten"
                          else rows["tiny-coder"][k]) for k in ("handwritten", "heldout_greedy")},
        loss_gap=gap,
        per_problem=rows,
        machine=f"{os.cpu_count()} cores, {args.threads} torch thread(s)",
        finished=time.strftime("%Y-%m-%d %H:%M"),
    )  # fmt: skip
    ours_fig = entry["endpoints"]["ours"]
    entry["targets"] = {
        "handwritten": ours_fig["handwritten"]["accuracy"] >= TARGETS["handwritten"],
        "heldout_greedy": ours_fig["heldout_greedy"]["accuracy"] >= TARGETS["heldout_greedy"],
        "valid_and_new": ours_fig["proposals"]["valid_and_new"] >= TARGETS["valid_and_new"],
        "loss_gap": gap["gap"] + 1.96 * gap["gap_se"] < TARGETS["loss_gap"],
    }
    control = saved.get("grammar", {}).get("per_problem", {}).get("ours", {})
    if args.arm != "grammar" and control:
        # Amendment (a): the same 94 problems, greedy, against the grammar control's stored answers.
        ours_hw = rows["ours"]["handwritten"]
        entry["paired_vs_grammar"] = {
            "handwritten": paired(
                [ours_hw[i] for i in sorted(ours_hw)], [control["handwritten"][i] for i in sorted(ours_hw)]
            )
        }
    entry["decisions"] = {
        "reads_more_handwritten": entry["paired"]["handwritten"]["mcnemar_p"] < 0.05
        and entry["paired"]["handwritten"]["difference"] > 0,
        "heldout_not_worse": entry["paired"]["heldout_greedy"]["ci95"][0] > NONINFERIORITY,
        "ships": all(entry["targets"].values()),
    }
    save_arm(args.arm, entry)
    print(
        json.dumps(
            {k: entry[k] for k in ("endpoints", "paired", "loss_gap", "targets", "decisions")},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
