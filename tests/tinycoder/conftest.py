"""Corpus splits built once for the tinycoder tests (a few hundred programs, sandboxed)."""

from __future__ import annotations

import pytest

from redqueen.tinycoder.splits import CorpusSplits, build_splits
from redqueen.verifiers import Executor


@pytest.fixture(scope="session")
def small_splits(tmp_path_factory) -> tuple[CorpusSplits, object]:
    """(splits, folder): 120 training, 60 held-out and 12 OOD programs, saved to ``folder``."""
    with Executor(workers=2) as executor:
        splits = build_splits(n_train=120, n_heldout=60, n_ood=12, seed=11, executor=executor)
    folder = tmp_path_factory.mktemp("splits")
    splits.save(folder)
    return splits, folder
