"""The model card (README.md in the model folder), written from a pretraining summary.

Every figure comes from ``training.json`` as :func:`redqueen.tinycoder.pretrain.main` (or
``python -m redqueen.tinycoder.rates --model DIR --write``) measured it; :func:`check_targets`
compares them with the targets a base model for co-evolution should meet, and the card prints
that comparison, met or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["TargetCheck", "check_targets", "outside_the_generator", "write_model_card"]

_TASK_TYPES = ("code_o", "code_i", "code_f")
#: Largest weights file that may ship inside the package.
MAX_WEIGHTS_BYTES = 30_000_000


@dataclass(frozen=True)
class TargetCheck:
    """One target: what was measured, what it should be, and whether it is met."""

    name: str
    measured: str
    target: str
    met: bool


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def check_targets(summary: dict) -> list[TargetCheck]:
    """The in-distribution targets for a base model that leaves teachers room to climb.

    Valid proposals 70-95% per task type; code_o and code_i solved 30-60% at T=1 and pass@k
    >= 0.8; code_f pass@k >= 0.1; the solve rate falls with level; held-out minus training loss
    under 0.3 nats; weights at most 30 MB; for runs that record them, each program learned from
    at most twice and at least 100,000 distinct programs learned from; with a ``side_by_side``
    entry (another model's held-out rates on the same tasks), code_o greedy pass@1 and pass@k
    above that model's; where measured, valid-and-new proposals (valid, and in no training
    program) at least 60% per task type and greedy accuracy on the hand-written set at least 30%.
    """
    rates = summary["rates"]["heldout"]
    k = rates["samples"]
    checks = []
    for t in _TASK_TYPES:
        v = rates["valid_share"][t]
        checks.append(TargetCheck(f"{t} valid proposals", _pct(v), "70-95%", 0.70 <= v <= 0.95))
    for t in ("code_o", "code_i"):
        s = rates["solve_rate"][t]
        checks.append(TargetCheck(f"{t} solved at T=1", f"{s:.3f}", "0.3-0.6", 0.3 <= s <= 0.6))
        p = rates["pass_at_k"][t]
        checks.append(TargetCheck(f"{t} pass@{k}", f"{p:.3f}", ">= 0.8", p >= 0.8))
    for t, v in _valid_and_new(summary).items():
        checks.append(TargetCheck(f"{t} valid-and-new proposals", _pct(v), ">= 60%", v >= 0.60))
    p = rates["pass_at_k"]["code_f"]
    checks.append(TargetCheck(f"code_f pass@{k}", f"{p:.3f}", ">= 0.1", p >= 0.1))
    for t in ("code_o", "code_i"):
        by_level = {int(level): r for level, r in rates["solve_rate_by_level"][t].items()}
        levels = sorted(by_level)
        half = len(levels) // 2
        low = sum(by_level[lv] for lv in levels[:half]) / max(half, 1)
        high = sum(by_level[lv] for lv in levels[half:]) / max(len(levels) - half, 1)
        checks.append(
            TargetCheck(
                f"{t} solve rate falls with level",
                f"lower levels {low:.3f}, upper {high:.3f}",
                "lower > upper",
                half > 0 and low > high,
            )
        )
    gap = summary["loss_gap"]
    checks.append(
        TargetCheck("held-out minus training loss", f"{gap:.3f} nats", "< 0.3", gap < 0.3)
    )
    if "max_times_learned_from" in summary:
        times = summary["max_times_learned_from"]
        checks.append(
            TargetCheck("times a program is learned from", f"at most {times}", "<= 2", times <= 2)
        )
        seen = summary["programs_learned_from"]
        checks.append(
            TargetCheck(
                "distinct programs learned from", f"{seen:,}", ">= 100,000", seen >= 100_000
            )
        )
    other = summary.get("side_by_side")
    if other:
        mine, theirs = rates, other["heldout"]
        for key, label in (("greedy_solve_rate", "greedy pass@1"), ("pass_at_k", f"pass@{k}")):
            a, b = mine[key]["code_o"], theirs[key]["code_o"]
            checks.append(
                TargetCheck(
                    f"code_o {label} above {other['model']}'s (same tasks)",
                    f"{a:.3f} vs {b:.3f}",
                    f"> {b:.3f}",
                    a > b,
                )
            )
    if "handwritten" in summary:
        hw = summary["handwritten"]
        checks.append(
            TargetCheck(
                "hand-written code_o, greedy",
                f"{_pct(hw['accuracy'])} ({hw['correct']}/{hw['n']})",
                ">= 30%",
                hw["accuracy"] >= 0.30,
            )
        )
    size = summary["weights_bytes"]
    checks.append(
        TargetCheck("weights file", f"{size / 1e6:.1f} MB", "<= 30 MB", size <= MAX_WEIGHTS_BYTES)
    )
    return checks


def _rates_table(rates: dict) -> str:
    k = rates["samples"]
    new = rates.get("new_valid_share")
    new_head, new_rule = (" valid and new |", " --- |") if new else ("", "")
    head = (
        f"| task type | proposals parsed | proposals valid |{new_head} answers parsed "
        f"| solved (T=1) | pass@{k} | solved (greedy) |\n| --- | --- | --- |{new_rule} --- "
        "| --- | --- | --- |\n"
    )
    rows = "\n".join(
        f"| {t} | {_pct(rates['parsed_share'][t])} | {_pct(rates['valid_share'][t])} | "
        + (f"{_pct(new[t])} | " if new else "")
        + f"{_pct(rates['answer_parsed_share'][t])} | {_pct(rates['solve_rate'][t])} | "
        f"{_pct(rates['pass_at_k'][t])} | {_pct(rates['greedy_solve_rate'][t])} |"
        for t in _TASK_TYPES
    )
    # JSON turns the level keys into strings; read both.
    by = {t: {int(lv): r for lv, r in rates["solve_rate_by_level"][t].items()} for t in _TASK_TYPES}
    levels = sorted({lv for t in _TASK_TYPES for lv in by[t]})
    header = " | ".join(f"level {lv}" for lv in levels)
    cells = {t: " | ".join(_pct(by[t][lv]) if lv in by[t] else "-" for lv in levels) for t in by}
    by_level = (
        f"\n\nSolved at T=1 by generator level:\n\n| task type | {header} |\n| --- |"
        + " --- |" * len(levels)
        + "\n"
        + "\n".join(f"| {t} | {cells[t]} |" for t in _TASK_TYPES)
    )
    return head + rows + by_level


def write_model_card(folder: str | Path, summary: dict, *, notes: str | None = None) -> Path:
    """Write ``README.md`` into ``folder`` from a pretraining summary (see ``pretrain.main``).

    Args:
        folder: The model folder.
        summary: Corpus, training, loss and rate figures of the run (``training.json``).
        notes: Extra paragraphs (e.g. what was adjusted between runs and why); default the
            summary's ``notes``, so a card rewritten from its figures keeps them.

    Raises:
        KeyError: If the summary lacks a figure the card reports (the key is named).
    """
    rates = summary["rates"]
    notes = summary.get("notes", "") if notes is None else notes
    name = summary.get("name", "tiny-coder")
    programs = summary["programs"]
    levels = ", ".join(f"level {k}: {v}" for k, v in summary["levels"].items())
    loss = summary["loss"]
    targets = "\n".join(
        f"| {c.name} | {c.measured} | {c.target} | {'met' if c.met else 'NOT met'} |"
        for c in check_targets(summary)
    )
    ood = (
        f"## Rates, out of distribution (level {summary['ood_level']})\n\n{_rates_table(rates['ood'])}"
        if "ood" in rates
        else ""
    )
    corpus_text = _corpus_text(summary)
    side = _side_by_side(summary)
    outside = outside_the_generator(summary)
    outside = f"{outside}\n\n" if outside else ""
    text = f"""---
library_name: transformers
tags: [redqueen, tiny-coder, llama, code]
---

# {name}

A {summary["parameters"] / 1e6:.2f}M-parameter Llama-architecture causal LM (size
`{summary["size"]}`, tied embeddings, byte-level BPE vocabulary of {summary["vocab_size"]}),
weights stored in {summary["storage_dtype"]} ({summary["weights_bytes"] / 1e6:.1f} MB) and loaded
as float32. It was pretrained from scratch by `python -m redqueen.tinycoder.pretrain` on a
procedurally generated corpus of small typed Python functions rendered in exactly the
teacher/student prompt formats of `redqueen.verifiers.formats`.

Load it like any hub model: `AutoModelForCausalLM.from_pretrained(folder)`. `heldout.jsonl` and
`ood.jsonl` beside the weights hold the held-out programs (with inputs and sandboxed outputs) on
which the rates below were measured; `training.json` holds every figure of the run. Re-measure
the rates with `python -m redqueen.tinycoder.rates --model FOLDER --write`.

## Targets (in-distribution held-out set)

| figure | measured | target | |
| --- | --- | --- | --- |
{targets}

## Corpus

- {programs["train"]} training programs ({levels}), {programs["heldout"]} held out from the same
  generator and levels, {programs["ood"]} out-of-distribution programs of level
  {summary["ood_level"]} (harder than any in training). No two programs in or across the splits
  share a canonical form (names and formatting normalised).
{corpus_text}

## Training

| | |
| --- | --- |
| epochs (each program learned from at most this often) | {summary["epochs"]} |
| steps | {summary["steps"]} |
| batch x sequence | {summary["batch_size"]} x {summary["seq_len"]} tokens ({summary["tokens_seen"]} tokens seen) |
| optimizer | AdamW, peak lr {summary["lr"]}, warm-up + cosine to 10%, weight decay 0.1, grad clip 1.0 |
| loss: training / held-out / OOD | {loss["train"]} / {loss["heldout"]} / {loss["ood"]} |
| loss gap: held-out / OOD minus training | {summary["loss_gap"]} / {summary["ood_loss_gap"]} nats |
| device, seed | {summary["device"]}, {summary["seed"]} |
| training time | {summary["train_seconds"]} s (whole run {summary.get("total_seconds", "n/a")} s) |
| command | `{summary.get("command", "n/a")}` |

## Rates, in distribution (held-out programs)

Sampling at temperature {rates["heldout"]["temperature"]} with no top-k/top-p cut (as the
environment samples); {rates["heldout"]["n_proposals"]} teacher proposals per task type, each
prompted with {rates["heldout"]["references"]} reference triplets; {rates["heldout"]["n_tasks"]}
student tasks per task type, {rates["heldout"]["samples"]} sampled answers each. "Valid" means
the proposal parses and passes `validate_program`; "solved" means `check_answer` returns CORRECT.

{_rates_table(rates["heldout"])}

{ood}

{outside}{side}

{notes}
"""
    path = Path(folder) / "README.md"
    path.write_text(text.rstrip() + "\n", encoding="utf-8")
    return path


def _valid_and_new(summary: dict) -> dict[str, float]:
    """Valid-and-new proposal shares per task type: from the held-out rates where they were
    measured with them, else from a ``novelty`` entry measured beside them."""
    measured = summary["rates"]["heldout"].get("new_valid_share")
    if measured:
        return measured
    novelty = summary.get("novelty") or {}
    return {t: v["valid_and_new"] for t, v in novelty.get("task_types", {}).items()}


def outside_the_generator(summary: dict) -> str:
    """The card's section on what the generator's held-out split cannot show: greedy accuracy
    on the hand-written code_o set (``summary["handwritten"]``, from
    :func:`~redqueen.tinycoder.rates.measure_handwritten`), per idiom; and, where measured
    beside the rates (``summary["novelty"]``), how many valid proposals are new to the training
    corpus and how many recite it. Empty without either.

    Cards written before these existed (the shipped ``tiny-coder``'s) carry this section
    appended, made by this function from their ``training.json``.
    """
    parts = []
    hw = summary.get("handwritten")
    if hw:
        idioms = " | ".join(hw["by_idiom"])
        cells = " | ".join(_pct(v) for v in hw["by_idiom"].values())
        parts.append(
            "## Outside the generator: hand-written programs\n\n"
            f"Greedy code_o answers to the {hw['n']} hand-written programs of\n"
            "`redqueen/assets/handwritten_code_o.jsonl` (common builtins and methods, slices,\n"
            "comprehensions, loops, dict counters, whole words, larger integers; kept out of\n"
            "every corpus built since the set exists),\n"
            f"in the environment's prompt and parser, {hw['max_new_tokens']} new tokens: "
            f"**{_pct(hw['accuracy'])}** correct ({hw['correct']}/{hw['n']})"
            + (f", {_pct(hw['parsed_share'])} parsed." if "parsed_share" in hw else ".")
            + (
                f" {len(hw['in_training'])} of the programs share a canonical form with a program"
                " of this model's training corpus (built before the set), with the generator's"
                " inputs: " + ", ".join(hw["in_training"]) + "."
                if hw.get("in_training")
                else ""
            )
            + "\n\n"
            f"| idiom | {idioms} |\n| --- |" + " --- |" * len(hw["by_idiom"]) + "\n"
            f"| correct | {cells} |"
        )
    novelty = summary.get("novelty")
    if novelty:
        rows = "\n".join(
            f"| {t} | {v['n']} | {_pct(v['valid'])} | {_pct(v['valid_and_new'])} | "
            f"{_pct(v['recited_of_valid'])} |"
            for t, v in novelty["task_types"].items()
        )
        parts.append(
            "## Valid and new proposals\n\n"
            "A valid proposal is new when no program of the model's training corpus shares its\n"
            f"canonical form. Measured by {novelty['measured_by']}, at temperature\n"
            f"{novelty['temperature']}:\n\n"
            "| task type | proposals | valid | valid and new | valid ones recited from the corpus |"
            "\n| --- | --- | --- | --- | --- |\n" + rows
        )
    return "\n\n".join(parts)


def _corpus_text(summary: dict) -> str:
    """The corpus paragraph: how gold outputs were computed and how documents were rendered."""
    if summary.get("gold") == "pool":
        gold = (
            "- Gold outputs from `GoldPool` (the generator's programs run in worker processes with\n"
            "  time and memory limits, each input twice under different hash seeds, judged by\n"
            "  `validate_programs`); programs with constant outputs were dropped."
        )
    else:
        gold = (
            "- Gold outputs from the sandboxed executor (`validate_programs`, two runs in separate\n"
            "  processes); programs with constant outputs were dropped."
        )
    if summary.get("documents") == "lean":
        share = summary["full_share"]
        docs = (
            f"- One document per program per epoch, rendered afresh each epoch: with probability\n"
            f"  {1 - share:.2f} the program once with all its inputs and outputs; otherwise one of\n"
            f"  the six prompt formats (teacher or student, code_o, code_i or code_f), of which only\n"
            f"  the completion is trained on. In a {summary.get('rename_share', 0.0):.2f} share of the\n"
            f"  documents the programs carry new identifier names (same canonical form, same\n"
            f"  outputs). {summary['tokens_per_epoch']} tokens per epoch,\n"
            f"  {summary['tokens_per_program']} per program ({summary['trained_tokens_per_program']}"
            f" of them trained on)."
        )
    else:
        docs = (
            f"- {summary['documents_per_epoch']} documents ({summary['tokens_per_epoch']} tokens)"
            " per epoch,\n  rendered afresh each epoch: for every program a teacher proposal"
            " (conditioned on 1-3 references\n  from other programs) and a student answer, for"
            " each of code_o, code_i and code_f."
        )
    return f"{gold}\n{docs}"


def _side_by_side(summary: dict) -> str:
    """The held-out rates of this model and of ``summary["side_by_side"]["model"]``, measured on
    the same tasks with the same seed (empty without that entry)."""
    other = summary.get("side_by_side")
    if not other:
        return ""
    name = summary.get("name", "this model")
    lines = [
        f"## Side by side with {other['model']} (same held-out tasks, same seed)",
        "",
        f"| task type | figure | {name} | {other['model']} |",
        "| --- | --- | --- | --- |",
    ]
    for split in ("heldout", "ood"):
        if split not in other or split not in summary["rates"]:
            continue
        mine, theirs = summary["rates"][split], other[split]
        k = mine["samples"]
        for t in (t for t in _TASK_TYPES if t in theirs["greedy_solve_rate"]):
            for key, label in (
                ("greedy_solve_rate", "greedy pass@1"),
                ("solve_rate", "solved at T=1"),
                ("pass_at_k", f"pass@{k}"),
                ("valid_share", "valid proposals"),
                ("new_valid_share", "valid and new proposals"),
            ):
                if not (mine.get(key) and theirs.get(key)):
                    continue
                lines.append(
                    f"| {t} ({'held out' if split == 'heldout' else 'OOD'}) | {label} | "
                    f"{_pct(mine[key][t])} | {_pct(theirs[key][t])} |"
                )
    return "\n".join(lines)
