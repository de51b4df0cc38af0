"""Valid-and-new proposals: a proposal that recites a training program is valid but not new."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.card import check_targets, outside_the_generator, write_model_card
from redqueen.tinycoder.sampling import ProposalSample
from redqueen.verifiers import RejectReason, Validation
from redqueen.verifiers.formats import Proposal

PROGRAM = "def f(xs):\n    return sorted(xs)[0]"
RENAMED = "def f(values):\n    return sorted(values)[0]"
GPU_TINY = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "gpu_tiny_coder"


def _sample(program: str, ok: bool) -> ProposalSample:
    verdict = (
        Validation(ok=True, outputs=("1",))
        if ok
        else Validation(ok=False, reason=RejectReason.RUNTIME_ERROR, detail="boom")
    )
    return ProposalSample((), "", Proposal("code_o", program, ("[1]",)), verdict)


def test_a_proposal_is_new_only_when_valid_and_in_no_known_program() -> None:
    known = {canonical_key(PROGRAM)}
    assert _sample(PROGRAM, ok=True).is_new(set())
    assert not _sample(PROGRAM, ok=True).is_new(known)
    # Renaming does not make a recited program new.
    assert not _sample(RENAMED, ok=True).is_new(known)
    assert not _sample("def f(x):\n    return x + 1", ok=False).is_new(set())
    assert not ProposalSample((), "no program", None, None).is_new(set())


@pytest.mark.slow
def test_rates_count_new_proposals_against_the_known_programs() -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from redqueen.assets import tiny_coder_path
    from redqueen.tinycoder.corpus import load_corpus
    from redqueen.tinycoder.rates import measure_rates
    from redqueen.tinycoder.sampling import sample_proposals
    from redqueen.verifiers import Executor

    path = tiny_coder_path()
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    entries = load_corpus(path / "heldout.jsonl")
    with Executor(workers=2) as executor:
        settings = {"executor": executor, "max_new_tokens": 128, "seed": 3}
        drawn = sample_proposals(
            model, tokenizer, entries, task_type="code_o", n=4, rng=random.Random(3), **settings
        )
        recited = {canonical_key(s.proposal.program) for s in drawn if s.valid}
        assert recited, "tiny-coder proposed no valid program in four tries"

        def rates(known):
            return measure_rates(
                model,
                tokenizer,
                entries,
                n=4,
                samples=1,
                task_types=("code_o",),
                known_keys=known,
                **settings,
            )

        unknown, known = rates(frozenset()), rates(recited)
    # The same proposals: with nothing known every valid one is new, with all of them known none.
    assert unknown.valid_share == known.valid_share
    assert unknown.new_valid_share == {"code_o": unknown.valid_share["code_o"]}
    assert known.new_valid_share == {"code_o": 0.0}


def test_the_card_reports_valid_and_new_and_the_hand_written_set(tmp_path) -> None:
    summary = json.loads((GPU_TINY / "training.json").read_text())
    summary["rates"]["heldout"]["new_valid_share"] = {"code_o": 0.2, "code_i": 0.7, "code_f": 0.1}
    summary["handwritten"] = {
        "n": 4,
        "correct": 2,
        "accuracy": 0.5,
        "parsed_share": 1.0,
        "max_new_tokens": 96,
        "by_idiom": {"loops": 1.0, "strings": 0.0},
    }
    checks = {c.name: c for c in check_targets(summary)}
    assert not checks["code_o valid-and-new proposals"].met
    assert checks["code_i valid-and-new proposals"].met
    assert checks["hand-written code_o, greedy"].met
    assert checks["hand-written code_o, greedy"].measured == "50.0% (2/4)"
    card = write_model_card(tmp_path, summary).read_text()
    assert "| valid and new |" in card and "| code_o | 73.4% | 25.0% | 20.0% |" in card
    assert outside_the_generator(summary) in card
    assert "**50.0%** correct (2/4)" in card
    assert outside_the_generator({}) == ""


def test_novelty_measured_beside_the_rates_reaches_the_card_and_its_targets(tmp_path) -> None:
    summary = json.loads((GPU_TINY / "training.json").read_text())
    summary["rates"]["heldout"].pop("new_valid_share", None)
    summary["novelty"] = {
        "measured_by": "a benchmark",
        "temperature": 1.0,
        "task_types": {
            "code_o": {"n": 8, "valid": 0.5, "valid_and_new": 0.25, "recited_of_valid": 0.5}
        },
    }
    checks = {c.name: c for c in check_targets(summary)}
    assert checks["code_o valid-and-new proposals"].measured == "25.0%"
    assert not checks["code_o valid-and-new proposals"].met
    card = write_model_card(tmp_path, summary).read_text()
    assert "| code_o | 8 | 50.0% | 25.0% | 50.0% |" in card
    assert "| proposals valid | answers parsed |" in card  # no such column in the rates table
