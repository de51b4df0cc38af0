"""The pretraining script: a short CPU run end to end, and its schedule and storage rules."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from redqueen.tinycoder._training import _lr_at
from redqueen.tinycoder.card import check_targets, write_model_card
from redqueen.tinycoder.pretrain import PROFILES, parse_args, sequences
from redqueen.tinycoder.pretrain import main as pretrain
from redqueen.tinycoder.rates import main as measure_main

SHORT = ["--profile", "ci", "--max-steps", "12", "--workers", "2"]


@pytest.fixture(scope="module")
def trained(small_splits, tmp_path_factory):
    _, corpus = small_splits
    out = tmp_path_factory.mktemp("model") / "m"
    summary = pretrain(["--out", str(out), "--corpus", str(corpus), *SHORT])
    return out, summary


@pytest.mark.slow
def test_short_cpu_run_writes_a_loadable_float32_model(trained) -> None:
    out, summary = trained
    model = AutoModelForCausalLM.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert model.dtype == torch.float32
    assert summary["storage_dtype"] == "bfloat16"
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == summary["parameters"]
    # bf16 storage: about two bytes a parameter (tied embeddings stored once).
    assert summary["weights_bytes"] < 2.2 * n_params
    assert tokenizer.eos_token_id == model.config.eos_token_id
    assert (out / "heldout.jsonl").is_file() and (out / "ood.jsonl").is_file()


def test_summary_and_card_carry_every_figure(trained) -> None:
    out, summary = trained
    assert json.loads((out / "training.json").read_text()) == json.loads(json.dumps(summary))
    assert summary["programs"] == {"train": 120, "heldout": 60, "ood": 12}
    assert summary["steps"] == 12 and summary["epochs"] == 2
    loss = summary["loss"]
    assert summary["loss_gap"] == pytest.approx(loss["heldout"] - loss["train"], abs=1e-3)
    assert summary["ood_loss_gap"] == pytest.approx(loss["ood"] - loss["train"], abs=1e-3)
    for split in ("heldout", "ood"):
        rates = summary["rates"][split]
        for key in ("valid_share", "solve_rate", "pass_at_k", "greedy_solve_rate"):
            assert set(rates[key]) == {"code_o", "code_i", "code_f"}
            assert all(0.0 <= v <= 1.0 for v in rates[key].values())
        assert rates["samples"] == 2 and rates["solve_rate_by_level"]["code_o"]
        # Valid and new: no more than valid (new to the training split).
        for t, new in rates["new_valid_share"].items():
            assert 0.0 <= new <= rates["valid_share"][t]
    hand = summary["handwritten"]
    assert hand["n"] >= 60 and 0.0 <= hand["accuracy"] <= hand["parsed_share"] <= 1.0
    card = (out / "README.md").read_text()
    for text in ("## Targets", "pass@2", "out of distribution", "loss gap", "by generator level"):
        assert text in card
    assert "| valid and new |" in card and "hand-written programs" in card
    # 14 targets, and valid-and-new per task type and the hand-written set.
    assert len(check_targets(summary)) == 18
    assert "--max-steps 12" in summary["command"]


def test_rates_are_re_measured_by_one_command(trained, tmp_path) -> None:
    out = shutil.copytree(trained[0], tmp_path / "copy")
    (out / "README.md").write_text("stale\n")
    rates = measure_main(
        ["--model", str(out), "--n", "3", "--samples", "1", "--max-new-tokens", "8"]
        + ["--workers", "2", "--write"]
    )
    summary = json.loads((out / "training.json").read_text())
    assert summary["rates"] == json.loads(json.dumps(rates))
    assert summary["rates"]["ood"]["n_tasks"] == 3 and summary["rates"]["heldout"]["samples"] == 1
    assert "## Targets" in (out / "README.md").read_text()


def test_rates_batch_size_changes_batching_not_the_tasks(trained, capsys) -> None:
    out = trained[0]
    args = ["--model", str(out), "--n", "3", "--samples", "2", "--max-new-tokens", "8"]
    by_size = [measure_main([*args, "--workers", "2", "--batch-size", str(b)]) for b in (1, 64)]
    for split in ("heldout", "ood"):
        one, many = (r[split] for r in by_size)
        assert one["n_tasks"] == many["n_tasks"] == 3
        # Greedy answers of the same tasks: one prompt a batch (no padding) or all together.
        assert one["greedy_solve_rate"] == many["greedy_solve_rate"]
    with pytest.raises(SystemExit) as exit_info:
        measure_main([*args, "--batch-size", "0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("--batch-size must be >= 1, got 0")


def test_profiles_and_at_most_two_epochs(capsys) -> None:
    args = parse_args(["--out", "x", "--profile", "full"])
    assert (args.train, args.size, args.epochs, args.device) == (150_000, "small", 2, "cuda")
    assert parse_args(["--out", "x", "--profile", "full", "--train", "10"]).train == 10
    assert parse_args(["--out", "x"]).profile == "ci" and PROFILES["ci"]["size"] == "micro"
    cpu = parse_args(["--out", "x", "--profile", "cpu"])
    assert (cpu.device, cpu.cpu_threads, cpu.documents, cpu.autocast) == ("cpu", 2, "lean", "auto")
    assert (cpu.rates_batch_size, args.rates_batch_size) == (64, 1024)
    with pytest.raises(SystemExit):
        parse_args(["--out", "x", "--rates-batch-size", "0"])
    with pytest.raises(SystemExit):
        parse_args(["--out", "x", "--full-share", "2"])
    with pytest.raises(SystemExit):
        parse_args(["--out", "x", "--epochs", "3"])
    assert "--epochs" in capsys.readouterr().err


def test_unreadable_corpus_is_one_line_and_status_2(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        pretrain(["--out", str(tmp_path / "m"), "--corpus", str(tmp_path / "none")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "train.jsonl" in err[0]


@pytest.mark.slow
def test_a_run_split_in_chunks_resumes_exactly(small_splits, tmp_path, capsys) -> None:
    _, corpus = small_splits
    common = ["--corpus", str(corpus), *SHORT, "--eval-n", "1", "--samples", "1"]
    whole = tmp_path / "whole"
    pretrain(["--out", str(whole), *common])
    split = tmp_path / "split"
    paused = pretrain(["--out", str(split), *common, "--stop-at-step", "5"])
    assert paused == {"paused": True, "step": 5, "total": 12}
    assert not (split / "model.safetensors").exists()
    stop = tmp_path / "split-checkpoint" / "STOP"  # asked from outside: stop at the next step
    stop.touch()
    assert pretrain(["--out", str(split), *common]) == {"paused": True, "step": 5, "total": 12}
    assert not stop.exists()
    again = pretrain(["--out", str(split), *common])
    assert again["steps"] == 12
    a = AutoModelForCausalLM.from_pretrained(whole).state_dict()
    b = AutoModelForCausalLM.from_pretrained(split).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert again["loss"] == json.loads((whole / "training.json").read_text())["loss"]
    # A checkpoint from another schedule is refused, not silently continued.
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        pretrain(["--out", str(split), *common, "--max-steps", "20"])
    assert exit_info.value.code == 2
    assert "remove it" in capsys.readouterr().err.strip().splitlines()[-1]


def test_sequences_and_schedule() -> None:
    stream = torch.arange(10, dtype=torch.int32)
    assert sequences(stream, 4).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    lrs = [_lr_at(s, 100, 1e-3) for s in range(100)]
    assert max(lrs) == pytest.approx(1e-3) and lrs[0] < lrs[4] and lrs[-1] < 2e-4
    assert _lr_at(50, 100, 1e-3, time_fraction=1.0) == pytest.approx(1e-4)


def test_card_compares_with_another_model_on_the_same_tasks(trained, tmp_path) -> None:
    _, summary = trained
    worse = json.loads(json.dumps(summary["rates"]))
    for split in worse.values():
        for key in ("greedy_solve_rate", "pass_at_k"):
            split[key]["code_o"] = -1.0  # below anything measured: the new model must be above
    with_other = {**summary, "side_by_side": {"model": "old-coder", **worse}}
    checks = {c.name: c for c in check_targets(with_other)}
    assert len(checks) == len(check_targets(summary)) + 2
    assert checks["code_o greedy pass@1 above old-coder's (same tasks)"].met
    write_model_card(tmp_path, with_other)
    card = (tmp_path / "README.md").read_text()
    assert "## Side by side with old-coder" in card and "code_o (held out) | greedy pass@1" in card


def test_continued_pretraining_starts_from_the_folder(trained, small_splits, tmp_path) -> None:
    base, _ = trained
    _, corpus = small_splits
    common = ["--corpus", str(corpus), *SHORT, "--eval-n", "0", "--max-steps", "1", "--lr", "0"]
    summary = pretrain(["--out", str(tmp_path / "c"), "--init-from", str(base), *common])
    assert summary["init_from"] == str(base) and summary["size"] == f"from {base.name}"
    # At learning rate 0 the weights are the folder's (stored in bf16 both times).
    a = AutoModelForCausalLM.from_pretrained(base).state_dict()
    b = AutoModelForCausalLM.from_pretrained(tmp_path / "c").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert AutoTokenizer.from_pretrained(tmp_path / "c").get_vocab() == (
        AutoTokenizer.from_pretrained(base).get_vocab()
    )


def test_init_from_a_folder_without_a_model_is_one_line(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--out", str(tmp_path / "m"), "--init-from", str(tmp_path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "config.json" in err[0]
