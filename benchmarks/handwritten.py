"""Why the base models do not read the programs people write: the measurements before training.

For each model (the shipped ``tiny-coder``, ``gpu-tiny-coder``, and ``mini-coder`` when its
weights are present):

1. greedy code_o answers to the hand-written set (``redqueen/assets/handwritten_code_o.jsonl``,
   never trained on) in the environment's own prompt and parser, every answer stored;
2. teacher proposals prompted with two reference triplets from the model's own held-out
   programs, as the card's rates prompt them: code_o at several sampling temperatures (the same
   prompts at each), code_i and code_f at T = 1. Each proposal is parsed and validated in the
   sandbox; for each one the script keeps why it failed (the parser's step, or the failing
   validation check and, for runtime errors, the exception type), and for a valid one whether
   its canonical key is in the model's training corpus (recited), is one of its prompt's
   references (copied) or is new.

The training corpora are rebuilt, not stored: tiny-coder's from its generator as it was when
the model was made (commit ``4c82463``, read from the project's history; the rebuild must
reproduce the 700 held-out programs shipped beside the model exactly), gpu-tiny-coder's from
the splits of mini-coder's corpus (``redqueen.tinycoder.splits``, seed 0; the training split's
level counts must equal its ``training.json``'s). That corpus was built before the hand-written
set existed, so the rebuild must not drop the set's canonical forms as corpus builds now do:
with them dropped the stream shifts and the level counts differ by a few programs.

Usage::

    python -c "import redqueen.tinycoder.corpus as c, redqueen.tinycoder.splits as s; \\
        c.handwritten_keys = frozenset; s.main()" --out /tmp/mini-corpus --workers 1  # 15-30 min
    python benchmarks/handwritten.py --gpu-corpus /tmp/mini-corpus [--models tiny-coder ...]

Writes ``benchmarks/results/handwritten.json``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from redqueen.assets import tiny_coder_path
from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.card import outside_the_generator, write_model_card
from redqueen.tinycoder.corpus import CorpusEntry, load_corpus
from redqueen.tinycoder.gold import GoldPool
from redqueen.tinycoder.handwritten import load_handwritten
from redqueen.tinycoder.rates import measure_handwritten
from redqueen.tinycoder.sampling import ProposalSample, sample_proposals
from redqueen.verifiers import Executor, validate_programs
from redqueen.verifiers.formats import N_CODE_F_INPUTS, PROPOSE_STOP

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: The commit whose generator made the shipped tiny-coder's corpus (its card says so).
TINY_CODER_COMMIT = "4c82463"
#: tiny-coder's corpus: 14,000 programs, the last 700 held out (its training.json).
TINY_CODER_PROGRAMS, TINY_CODER_HELDOUT = 14_000, 700


def _distinct_inputs(program, rng: random.Random, n: int) -> tuple[str, ...]:
    """``n`` distinct inputs as the old pipeline drew them (the same code as today's corpus)."""
    seen: list[str] = []
    for _ in range(n * 6):
        candidate = program.random_input(rng)
        if candidate not in seen:
            seen.append(candidate)
        if len(seen) == n:
            break
    while len(seen) < n:
        seen.append(program.random_input(rng))
    return tuple(seen)


def tiny_coder_training_corpus(workers: int = 1) -> list[CorpusEntry]:
    """tiny-coder's 13,300 training programs, rebuilt with the generator of its commit.

    The old pipeline drew programs from a seeded stream (levels 1-6 uniformly, six inputs
    each), kept the valid, non-constant ones with a source not seen before, and held out the
    last 700 of 14,000. Gold outputs here come from a :class:`GoldPool`.

    Raises:
        RuntimeError: If the rebuilt held-out programs differ from the shipped ``heldout.jsonl``.
    """
    with tempfile.TemporaryDirectory() as tmp:
        package = Path(tmp) / "tiny_coder_generator"
        package.mkdir()
        (package / "__init__.py").write_text("")
        for name in ("programs", "_grammar"):
            source = subprocess.run(
                ["git", "show", f"{TINY_CODER_COMMIT}:redqueen/engine/tinycoder/{name}.py"],
                cwd=ROOT,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            text = source.replace("redqueen.engine.tinycoder", "tiny_coder_generator")
            (package / f"{name}.py").write_text(text)
        sys.path.insert(0, tmp)
        try:
            old = importlib.import_module("tiny_coder_generator.programs")
        finally:
            sys.path.remove(tmp)
    rng = random.Random(0)
    generator = old.ProgramGenerator(rng=random.Random(rng.getrandbits(64)))
    levels = list(range(1, old.MAX_LEVEL + 1))
    entries: list[CorpusEntry] = []
    seen: set[str] = set()
    with Executor(workers=1) as fallback, GoldPool(workers=workers, fallback=fallback) as pool:
        while len(entries) < TINY_CODER_PROGRAMS:
            batch = []
            for _ in range(512):
                program = generator.program(rng.choice(levels))
                batch.append((program, _distinct_inputs(program, rng, N_CODE_F_INPUTS)))
            verdicts = validate_programs([(p.source, list(i)) for p, i in batch], pool)
            for (program, inputs), verdict in zip(batch, verdicts, strict=True):
                if not verdict.ok or program.source in seen or len(set(verdict.outputs)) == 1:
                    continue
                seen.add(program.source)
                entries.append(CorpusEntry(program.source, program.level, inputs, verdict.outputs))
                if len(entries) == TINY_CODER_PROGRAMS:
                    break
    split = TINY_CODER_PROGRAMS - TINY_CODER_HELDOUT
    if entries[split:] != load_corpus(tiny_coder_path() / "heldout.jsonl"):
        raise RuntimeError("the rebuilt tiny-coder corpus does not end in its shipped held-out set")
    return entries[:split]


def gpu_training_corpus(folder: Path, summary: dict) -> tuple[list[CorpusEntry], list]:
    """(training, held-out) splits of gpu-tiny-coder's corpus, checked against its levels.

    Raises:
        RuntimeError: If the training split's level counts differ from ``summary["levels"]``.
    """
    train = load_corpus(folder / "train.jsonl")
    levels = Counter(str(e.level) for e in train)
    if dict(sorted(levels.items())) != summary["levels"]:
        raise RuntimeError(f"{folder}: level counts {dict(levels)} are not {summary['levels']}")
    return train, load_corpus(folder / "heldout.jsonl")


_ERROR_TYPE = re.compile(r"input \d+: ([A-Za-z_]+(?:Error|Exception|Interrupt|Exit))")
# The parser's two patterns (``redqueen.verifiers.formats``), to say which step failed.
_PROG = re.compile(r"<prog>\n(.*?)\n</prog>", re.DOTALL)
_IN = re.compile(r"^<in>(.*)</in>$", re.MULTILINE)


def why_unparsed(task_type: str, text: str) -> str:
    """The step of ``parse_proposal`` a proposal failed at, in the parser's order."""
    body = text.split(PROPOSE_STOP, 1)[0]
    match = _PROG.search(body)
    if match is None:
        return "no <prog> block"
    try:
        tree = ast.parse(match.group(1).strip("\n"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "program is not Python"
    if not any(isinstance(node, ast.FunctionDef) and node.name == "f" for node in tree.body):
        return "program defines no f"
    inputs = _IN.findall(body, match.end())
    if len(inputs) < (N_CODE_F_INPUTS if task_type == "code_f" else 1):
        return "too few <in> lines"
    return "an input is not an argument list"


def describe(sample: ProposalSample, task_type: str, known: set[bytes], heldout: set) -> dict:
    """One proposal's fate, as flags and a reason."""
    if sample.proposal is None:
        return {"parsed": False, "valid": False, "reason": why_unparsed(task_type, sample.text)}
    assert sample.verdict is not None
    if not sample.verdict.ok:
        reason = str(sample.verdict.reason)
        if reason == "runtime_error":
            found = _ERROR_TYPE.search(sample.verdict.detail)
            reason += f": {found.group(1) if found else 'other'}"
        return {"parsed": True, "valid": False, "reason": reason}
    key = canonical_key(sample.proposal.program)
    return {
        "parsed": True,
        "valid": True,
        "recited": key in known,
        "copied": key in {canonical_key(r.program) for r in sample.references},
        "heldout": key in heldout,
        "new": key not in known,
        "lines": sample.proposal.program.count("\n") + 1,
    }


def summarise(rows: list[dict]) -> dict:
    """Shares over all proposals, recitation over the valid ones, and reasons counted."""
    n = len(rows)
    valid = [r for r in rows if r["valid"]]
    return {
        "n": n,
        "parsed": sum(r["parsed"] for r in rows) / n,
        "valid": len(valid) / n,
        "valid_and_new": sum(r["new"] for r in valid) / n,
        "recited_of_valid": sum(r["recited"] for r in valid) / max(len(valid), 1),
        "copied_of_valid": sum(r["copied"] for r in valid) / max(len(valid), 1),
        "mean_lines_of_valid": sum(r["lines"] for r in valid) / max(len(valid), 1),
        "reject_reasons_parsed": dict(
            Counter(r["reason"] for r in rows if r["parsed"] and not r["valid"]).most_common()
        ),
        "unparsed_reasons": dict(
            Counter(r["reason"] for r in rows if not r["parsed"]).most_common()
        ),
    }


def measure_model(folder: Path, train, heldout, args, executor) -> dict:
    """Hand-written answers and proposals of one model (see the module docstring)."""
    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    score = measure_handwritten(model, tokenizer, executor)
    row: dict = {
        "handwritten": score.summary(),
        "handwritten_answers": {
            i: {"answer": a, "status": s}
            for i, a, s in zip(score.ids, score.answers, score.statuses, strict=True)
        },
        "proposals": {},
    }
    known = {canonical_key(e.program) for e in train}
    held = {canonical_key(e.program) for e in heldout}
    runs = [("code_o", t, args.n) for t in args.temperatures]
    runs += [(t, 1.0, args.n_other) for t in ("code_i", "code_f")]
    for task_type, temperature, n in runs:
        drawn = sample_proposals(
            model,
            tokenizer,
            heldout,
            task_type=task_type,
            n=n,
            rng=random.Random(0),
            executor=executor,
            temperature=temperature,
            seed=0,
            max_new_tokens=args.max_new_tokens,
        )
        rows = [describe(s, task_type, known, held) for s in drawn]
        figures = summarise(rows)
        row["proposals"][f"{task_type} T={temperature}"] = {**figures, "each": rows}
        print(folder.name, task_type, temperature, figures["valid"], flush=True)
    return row


#: Heading of the section appended to a card written before it existed.
_OUTSIDE = "## Outside the generator"
#: The notes of gpu-tiny-coder's card, kept in its training.json from now on.
_GPU_NOTES = (
    "Pretrained on one H100 (bf16 autocast) from the saved lean corpus of mini-coder (150,000 "
    "training programs), two epochs; the rates were measured on the GPU, 1,024 prompts a "
    "generation batch."
)


def card_figures(row: dict, in_training: list[str], n: int, n_other: int) -> dict:
    """The ``handwritten`` and ``novelty`` entries of a model's training.json."""
    at_one = {t: row["proposals"][f"{t} T=1.0"] for t in ("code_o", "code_i", "code_f")}
    return {
        "handwritten": {**row["handwritten"], "in_training": in_training},
        "novelty": {
            "measured_by": f"`benchmarks/handwritten.py` on a CPU (two references from the "
            f"held-out split, seed 0, {n} code_o and {n_other} code_i and code_f proposals)",
            "temperature": 1.0,
            "task_types": {
                t: {k: v[k] for k in ("n", "valid", "valid_and_new", "recited_of_valid")}
                for t, v in at_one.items()
            },
        },
    }


def write_cards(result: dict, n: int, n_other: int) -> None:
    """Record the figures in each measured model's training.json and card.

    gpu-tiny-coder's card is rewritten whole from its figures; the shipped tiny-coder's card
    was written by an older pipeline, so the section is appended to it (replacing an earlier
    one), made by the same function from the same figures.
    """
    # The repository's folders (the package may be imported from elsewhere).
    folders = {
        "tiny-coder": ROOT / "redqueen" / "assets" / "tiny-coder",
        "gpu-tiny-coder": RESULTS / "gpu_tiny_coder",
    }
    for name, folder in folders.items():
        row = result["models"].get(name)
        if not row or "handwritten" not in row:
            continue
        path = folder / "training.json"
        summary = json.loads(path.read_text())
        summary.update(
            card_figures(row, result["corpora"][name]["handwritten_in_training"], n, n_other)
        )
        if name == "gpu-tiny-coder":
            summary.setdefault("notes", _GPU_NOTES)
        path.write_text(json.dumps(summary, indent=2) + "\n")
        if name == "gpu-tiny-coder":
            write_model_card(folder, summary)
        else:
            card = (folder / "README.md").read_text().split(f"\n{_OUTSIDE}", 1)[0].rstrip()
            (folder / "README.md").write_text(f"{card}\n\n{outside_the_generator(summary)}\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--models",
        nargs="*",
        default=["tiny-coder", "gpu-tiny-coder", "mini-coder"],
        help="measure these (their entries in --out are replaced, the others kept)",
    )
    p.add_argument("--gpu-corpus", type=Path, help="splits of mini-coder's corpus (GPU models)")
    p.add_argument("--n", type=int, default=128, help="code_o proposals per temperature")
    p.add_argument("--n-other", type=int, default=64, help="code_i and code_f proposals (T=1)")
    p.add_argument("--temperatures", type=float, nargs="+", default=[0.6, 0.8, 1.0, 1.2])
    p.add_argument("--max-new-tokens", type=int, default=320, help="proposal budget (the card's)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workers", type=int, default=1, help="sandbox and gold workers")
    p.add_argument("--out", type=Path, default=RESULTS / "handwritten.json")
    p.add_argument(
        "--write-cards",
        action="store_true",
        help="record the figures in the models' training.json and cards (from --out)",
    )
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(args.threads)
    gpu_folder = RESULTS / "gpu_tiny_coder"
    folders = {
        "tiny-coder": tiny_coder_path(),
        "gpu-tiny-coder": gpu_folder,
        "mini-coder": RESULTS / "mini_coder",
    }
    result: dict = json.loads(args.out.read_text()) if args.out.is_file() else {}
    result["setup"] = {
        "handwritten": f"{len(load_handwritten())} programs, greedy, 96 new tokens",
        "proposals": f"code_o {args.n} per temperature (the same prompts), code_i and code_f "
        f"{args.n_other} at T=1; 2 references from the model's held-out split; "
        f"{args.max_new_tokens} new tokens; seed 0",
        "temperatures": args.temperatures,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
    }
    result.setdefault("corpora", {})
    result.setdefault("models", {})
    for name in args.models:
        t0 = time.time()
        folder = folders[name]
        if not (folder / "model.safetensors").is_file():
            result["models"][name] = {"skipped": f"no weights in {folder.relative_to(ROOT)}"}
            continue
        if name == "tiny-coder":
            train = tiny_coder_training_corpus(args.workers)
            heldout = load_corpus(folder / "heldout.jsonl")
            source = f"rebuilt with the generator of {TINY_CODER_COMMIT}"
        else:
            if args.gpu_corpus is None:
                p.error(f"{name} needs --gpu-corpus")
            summary = json.loads((folder / "training.json").read_text())
            train, heldout = gpu_training_corpus(args.gpu_corpus, summary)
            source = "rebuilt by redqueen.tinycoder.splits, seed 0"
        keys = {canonical_key(e.program) for e in train}
        result["corpora"][name] = {
            "train": len(train),
            "source": source,
            # Forms a model read in training (with the generator's inputs): none is excluded
            # from corpora built before the set existed.
            "handwritten_in_training": [
                h.id for h in load_handwritten() if canonical_key(h.program) in keys
            ],
        }
        with Executor(workers=args.workers) as executor:
            result["models"][name] = measure_model(folder, train, heldout, args, executor)
        result["models"][name]["seconds"] = round(time.time() - t0, 1)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    if args.write_cards:
        write_cards(result, args.n, args.n_other)


if __name__ == "__main__":
    main()
