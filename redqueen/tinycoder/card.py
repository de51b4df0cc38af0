"""The tiny-coder model card (README.md in the model folder), written from the run's summary."""

from __future__ import annotations

from pathlib import Path

__all__ = ["write_model_card"]

_TASK_TYPES = ("code_o", "code_i", "code_f")


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def write_model_card(folder: str | Path, summary: dict, *, notes: str = "") -> Path:
    """Write ``README.md`` into ``folder`` from a pretraining summary (see ``pretrain.main``).

    Args:
        folder: The model folder.
        summary: Corpus, training and rate figures of the run.
        notes: Extra paragraphs (e.g. what was adjusted between runs and why).

    Raises:
        KeyError: If the summary lacks a figure the card reports (the key is named).
    """
    rates = summary["rates"]
    rows = "\n".join(
        f"| {t} | {_pct(rates['parsed_share'][t])} | {_pct(rates['valid_share'][t])} | "
        f"{_pct(rates['answer_parsed_share'][t])} | {_pct(rates['solve_rate'][t])} | "
        f"{_pct(rates['greedy_solve_rate'][t])} |"
        for t in _TASK_TYPES
    )
    levels = ", ".join(f"level {k}: {v}" for k, v in summary["levels"].items())
    text = f"""---
library_name: transformers
tags: [redqueen, tiny-coder, llama, code]
---

# tiny-coder

A {summary["parameters"] / 1e6:.2f}M-parameter Llama-architecture causal LM (fp32, tied embeddings,
byte-level BPE vocabulary of {summary["vocab_size"]}) that ships inside `redqueen` as the default base
model. It was pretrained from scratch by `python -m redqueen.tinycoder.pretrain` on a
procedurally generated corpus of small typed Python functions rendered in exactly the
teacher/student prompt formats of `redqueen.verifiers.formats`, so that a CPU-only co-evolution
run starts from a model that already speaks the environment's language but still has much to learn.

Load it like any hub model: `AutoModelForCausalLM.from_pretrained(redqueen.assets.tiny_coder_path())`.
`heldout.jsonl` beside the weights holds the held-out programs (with inputs and sandboxed
outputs) on which the starting rates below were measured; `training.json` holds every figure
of the run.

## Corpus

- {summary["programs"]} generated programs ({summary["train_programs"]} for training,
  {summary["eval_programs"]} held out for the rates below); {levels}.
- Programs over ints, strings, lists of ints and dicts (arithmetic, slicing, sorting, loops,
  conditionals, comprehensions, a helper function at the higher levels); six inputs each; outputs
  computed by the sandboxed executor (`validate_program`, two runs in separate processes);
  programs with constant outputs were dropped.
- {summary["documents"]} training documents ({summary["train_tokens"]} tokens): for every program a
  teacher proposal (conditioned on 1-3 reference triplets from other programs) and a student
  answer, for each of code_o, code_i and code_f.

## Training

| | |
| --- | --- |
| steps | {summary["steps"]} (requested {summary["steps_requested"]}) |
| batch x sequence | {summary["batch_size"]} x {summary["seq_len"]} tokens ({summary["tokens_seen"]} tokens seen) |
| optimizer | AdamW, peak lr {summary["lr"]}, warm-up + cosine to 10%, weight decay 0.1, grad clip 1.0 |
| final training loss (mean of the last logged steps) | {summary["final_loss"]} |
| held-out loss | {summary["eval_loss"]} |
| device, seed | {summary["device"]}, {summary["seed"]} |
| training time | {summary["train_seconds"]} s (whole run {summary.get("total_seconds", "n/a")} s) |

## Starting rates

Measured on held-out programs, sampling at temperature {rates["temperature"]} with no top-k/top-p cut
(as the environment samples); {rates["n_proposals"]} teacher proposals per task type, each prompted
with {rates["references"]} reference triplets; {rates["n_tasks"]} student tasks per task type.
"Valid" means the proposal parses and passes `validate_program`; "solved" means `check_answer`
returns CORRECT.

| task type | proposals parsed | proposals valid | answers parsed | solved (T=1) | solved (greedy) |
| --- | --- | --- | --- | --- | --- |
{rows}

{notes}
"""
    path = Path(folder) / "README.md"
    path.write_text(text.rstrip() + "\n", encoding="utf-8")
    return path
