"""The examples run from their command lines and write what they promise."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import torch

from redqueen.evo import Lineage
from redqueen.evo.selection import SELECTIONS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run_example(name: str, argv: list[str], monkeypatch, capsys) -> str:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    threads = torch.get_num_threads()
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *argv])
    try:
        spec.loader.exec_module(module)
        module.main()
    finally:
        torch.set_num_threads(threads)
    return capsys.readouterr().out.strip()


def test_custom_selection_example_runs(tmp_path, monkeypatch, capsys):
    try:
        printed = _run_example("custom_selection", [str(tmp_path), "--generations", "3"], monkeypatch, capsys)
    finally:
        SELECTIONS._items.pop("boltzmann", None)
    assert printed == str(tmp_path)
    for name in ("lineage.csv", "lineage.png", "diversity.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    lineage = Lineage.from_csv(tmp_path / "lineage.csv")
    children = [r for r in lineage.records if r.parents]
    assert children and all(r.origin_time >= 1 for r in children)


def test_multiobjective_example_finds_a_front(tmp_path, monkeypatch, capsys):
    argv = [str(tmp_path), "--generations", "2", "--pop-size", "4"]
    assert _run_example("multiobjective_nsga2", argv, monkeypatch, capsys) == str(tmp_path)
    front = json.loads((tmp_path / "front.json").read_text())
    assert front and all({"id", "error", "update_norm", "parents"} <= set(row) for row in front)
    for a in front:  # no member of the first front dominates another
        assert not any(b["error"] <= a["error"] and b["update_norm"] <= a["update_norm"] and b != a
                       and (b["error"] < a["error"] or b["update_norm"] < a["update_norm"]) for b in front)
    assert (tmp_path / "pareto.png").stat().st_size > 0
    assert all(p in Lineage.from_csv(tmp_path / "lineage.csv") for row in front for p in row["parents"])


def test_surrogate_study_example_compares_schemes(tmp_path, monkeypatch, capsys):
    argv = [str(tmp_path), "--steps", "2", "--seeds", "1", "--schemes", "rating_lcb,novelty"]
    assert _run_example("surrogate_study", argv, monkeypatch, capsys) == str(tmp_path)
    summary = json.loads((tmp_path / "study.json").read_text())
    assert set(summary["final"]) == {"rating_lcb", "novelty"}
    assert all(0.0 <= row["solve_rate"] <= 1.0 for row in summary["final"].values())
    assert (tmp_path / "study.png").stat().st_size > 0
