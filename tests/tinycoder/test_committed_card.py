"""The committed cards of the pretrained models agree with the figures they were written from.

Nothing is re-measured: the card in ``benchmarks/results/mini_coder/`` must be exactly what
:func:`~redqueen.tinycoder.card.write_model_card` makes of the ``training.json`` beside it, and
that file must carry the targets the card states (the loss gap, the programs learned from, the
side-by-side comparison with tiny-coder on the same tasks).
"""

from __future__ import annotations

import json
from pathlib import Path

from redqueen.tinycoder.card import check_targets, write_model_card

CARD = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "mini_coder"


def test_committed_card_is_what_its_figures_give(tmp_path) -> None:
    summary = json.loads((CARD / "training.json").read_text())
    write_model_card(tmp_path, summary)
    assert (tmp_path / "README.md").read_text() == (CARD / "README.md").read_text()


def test_committed_figures_meet_the_generalisation_targets_and_show_the_comparison() -> None:
    summary = json.loads((CARD / "training.json").read_text())
    checks = {c.name: c for c in check_targets(summary)}
    assert checks["held-out minus training loss"].met
    assert summary["loss_gap"] < 0.3
    assert checks["distinct programs learned from"].met
    assert checks["times a program is learned from"].met
    # Measured side by side with tiny-coder on the same held-out tasks: the shipping decision
    # (keep tiny-coder) rests on this comparison, so it must be in the committed figures.
    assert any("tiny-coder" in name for name in checks)


GPU_TINY = CARD.parent / "gpu_tiny_coder"


def test_committed_gpu_tiny_coder_is_the_model_its_figures_describe() -> None:
    from transformers import AutoModelForCausalLM

    summary = json.loads((GPU_TINY / "training.json").read_text())
    model = AutoModelForCausalLM.from_pretrained(GPU_TINY)
    assert sum(p.numel() for p in model.parameters()) == summary["parameters"] == 3_053_376
    assert (GPU_TINY / "model.safetensors").stat().st_size == summary["weights_bytes"]
    checks = {c.name: c for c in check_targets(summary)}
    assert checks["held-out minus training loss"].met and summary["loss_gap"] < 0.3
    assert summary["max_times_learned_from"] == 2 and summary["programs_learned_from"] == 150_000
    card = (GPU_TINY / "README.md").read_text()
    assert f"{summary['loss_gap']} / {summary['ood_loss_gap']} nats" in card


def test_shipped_tiny_coder_card_ends_with_its_hand_written_and_novelty_figures() -> None:
    from redqueen.assets import tiny_coder_path
    from redqueen.tinycoder.card import outside_the_generator

    folder = tiny_coder_path()
    summary = json.loads((folder / "training.json").read_text())
    section = outside_the_generator(summary)
    assert "hand-written programs" in section and "Valid and new proposals" in section
    assert (folder / "README.md").read_text().endswith(f"\n\n{section}\n")


def test_every_kept_model_card_carries_its_hand_written_and_novelty_figures() -> None:
    """gpu-tiny-coder's and the continued models' cards are what ``benchmarks/model_cards.py``
    makes of the stored figures, and each states both columns."""
    import importlib.util

    script = CARD.parents[1] / "model_cards.py"
    spec = importlib.util.spec_from_file_location("model_cards", script)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    made = module.cards()
    assert len(made) == 4
    for path, text in made.items():
        assert path.read_text() == text, path
        assert "## Outside the generator: hand-written programs" in text
        assert "| task type | proposals | valid | valid and new |" in text
    summary = json.loads((GPU_TINY / "training.json").read_text())
    assert summary["handwritten"]["correct"] == 1 and summary["handwritten"]["n"] == 94
