"""The examples run and write what they promise."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from redqueen.evo import Lineage
from redqueen.evo.selection import SELECTIONS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_custom_selection_example_runs(tmp_path, monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("custom_selection", EXAMPLES / "custom_selection.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    monkeypatch.setattr(sys, "argv", ["custom_selection.py", str(tmp_path), "--generations", "3"])
    try:
        module.main()
    finally:
        torch.set_num_threads(threads)
        SELECTIONS._items.pop("boltzmann", None)
    assert capsys.readouterr().out.strip() == str(tmp_path)
    for name in ("lineage.csv", "lineage.png", "diversity.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    lineage = Lineage.from_csv(tmp_path / "lineage.csv")
    children = [r for r in lineage.records if r.parents]
    assert children and all(r.origin_time >= 1 for r in children)
