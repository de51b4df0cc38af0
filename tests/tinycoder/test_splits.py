"""The corpus splits: sizes, levels, and no canonical form shared between any two of them."""

from __future__ import annotations

import ast

import pytest

from redqueen.tinycoder import OOD_LEVEL, TRAIN_LEVELS
from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.corpus import CorpusEntry
from redqueen.tinycoder.splits import SPLITS, build_splits, load_splits, main, shared_forms
from redqueen.verifiers import Executor


def test_split_sizes_and_levels(small_splits) -> None:
    splits, _ = small_splits
    assert (len(splits.train), len(splits.heldout), len(splits.ood)) == (120, 60, 12)
    assert {e.level for e in splits.train} <= set(TRAIN_LEVELS)
    assert len({e.level for e in splits.train}) >= len(TRAIN_LEVELS) - 1
    assert {e.level for e in splits.heldout} <= set(TRAIN_LEVELS)
    assert {e.level for e in splits.ood} == {OOD_LEVEL}


def test_training_and_held_out_sets_share_no_canonical_ast(small_splits) -> None:
    splits, _ = small_splits
    everything = splits.train + splits.heldout + splits.ood
    keys = [canonical_key(e.program) for e in everything]
    assert len(set(keys)) == len(keys)
    assert not shared_forms(splits.train, splits.heldout)
    assert not shared_forms(splits.train, splits.ood)
    assert not shared_forms(splits.heldout, splits.ood)
    # The check itself notices a copy with every bound name changed and the formatting redone.
    entry = max(splits.train, key=lambda e: len(e.program))
    copy = CorpusEntry(_renamed(entry.program), entry.level, entry.inputs, entry.outputs)
    assert copy.program != entry.program
    assert shared_forms(splits.train, [copy]) == {canonical_key(entry.program)}


def _renamed(source: str) -> str:
    tree = ast.parse(source)
    bound = {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    bound |= {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.arg += "_renamed"
        elif isinstance(node, ast.Name) and node.id in bound:
            node.id += "_renamed"
    return ast.unparse(tree)


def test_entries_are_valid_non_constant_and_round_trip(small_splits) -> None:
    splits, folder = small_splits
    for entry in splits.heldout[:20] + splits.ood[:5]:
        assert len(set(entry.outputs)) > 1
    assert load_splits(folder) == splits


def test_cli_help_and_missing_split(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "--heldout" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="train.jsonl"):
        load_splits(tmp_path)


def test_excluded_forms_are_in_no_split(small_splits) -> None:
    splits, _ = small_splits
    # The same seed draws the same stream: without the exclusion these would come first.
    excluded = {canonical_key(e.program) for e in splits.train[:20]}
    with Executor(workers=2) as executor:
        again = build_splits(
            n_train=20, n_heldout=5, n_ood=2, seed=11, executor=executor, exclude=excluded
        )
    kept = {canonical_key(e.program) for name in SPLITS for e in getattr(again, name)}
    assert len(kept) == 27 and not kept & excluded


def test_cli_exclude_of_an_unreadable_corpus_is_one_line(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(tmp_path / "s"), "--exclude", str(tmp_path / "none.jsonl")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "none.jsonl" in err[0]
