"""Plots drawn from run-directory files; each skips with a note when its data is absent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from redqueen.evo import Individual, Lineage
from redqueen.experiments.plots import PLOTS, RunData, SkipPlot, load_run_data, make_plots
from redqueen.experiments.rundir import RunDirectory, RunDirectoryError

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _write_run(path, *, with_tasks: bool, objectives: int) -> RunDirectory:
    """A small run: two roles, births by two operators (one crossover), three steps of rows."""
    run = RunDirectory(path)
    configured = ["rating", "novelty"] if objectives >= 2 else ["rating"]
    run.write_config({"steps": 3, "environment": {"name": "coevolution"},
                      "objectives": {"teacher": configured, "student": configured}})
    lineage = Lineage()
    founders = [Individual(f"{role}-000{i}", role) for role in ("teacher", "student") for i in range(2)]
    for ind in founders:
        lineage.record_birth(ind, 0)
    child = Individual("teacher-0002", "teacher", parents=("teacher-0000", "teacher-0001"),
                       operator="svd_merge", birth=2)
    mutant = Individual("student-0002", "student", parents=("student-0001",), operator="gaussian", birth=2)
    lineage.record_death("teacher-0000", 2)
    lineage.record_death("student-0000", 2)
    lineage.record_birth(child, 2)
    lineage.record_birth(mutant, 2)
    run.write_lineage(lineage)
    rng = np.random.default_rng(0)
    run.open_logs()
    for step in range(3):
        run.append("metrics", [{"step": step, "seconds": 0.1, "solve_rate": 0.1 * step,
                                "teacher_reward": 0.5, "valid_share": 0.8, "best_rating": 25.0 + step,
                                "genotypic_diversity": 1.0 + step, "behavioural_diversity": 0.3,
                                "qd_score/teacher": 2.0 + step, "coverage/teacher": 0.02 * (step + 1),
                                "archive/teacher": [[0, 1, 2.0], [3, 4, 1.0 + step]],
                                "kl_from_base": 0.01 * step, "weight_change": 0.002 * step,
                                "informative_share": 0.9, "clip_fraction": 0.0,
                                "coverage_cells": 4.0 + step, "new_cells": 4.0 if step == 0 else 1.0,
                                "base_solve_rate": 0.25}])
        if with_tasks:
            run.append("tasks", [{"step": step, "teacher": "teacher-0001", "student": "student-0001",
                                  "task_type": t, "valid": True, "reason": None,
                                  "complexity": float(rng.uniform(1, 9)), "solve_rate": 0.5,
                                  "signature": "abc", "ast_nodes": 20.0 + step, "cyclomatic": 2.0,
                                  "halstead_volume": 30.0, "base_solve_rate": 0.5}
                                 for t in ("code_o", "code_i")])
        living = ["teacher-0001", "student-0001"] + (
            ["teacher-0002", "student-0002"] if step == 2 else ["teacher-0000", "student-0000"])
        rows = []
        for member in living:
            mu = float(rng.normal(25, 2))
            values = {"rating": mu, "novelty": float(rng.uniform()), "size": float(rng.uniform())}
            rows.append({"step": step, "id": member, "role": member.split("-")[0], "mu": mu,
                         "sigma": 3.0, "lcb": mu - 9.0,
                         "objectives": dict(list(values.items())[:objectives])})
        run.append("ratings", rows)
    run.close_logs()
    return run


def test_every_plot_is_written_as_png(tmp_path):
    run = _write_run(tmp_path, with_tasks=True, objectives=2)
    ciao = {"steps": [2, 4], "proposer_role": "teacher", "solver_role": "student", "pairs_per_cell": 2,
            "seed": 0, "solver_score": [[0.5, 0.75], [0.25, 0.5]]}  # as `redqueen ciao` writes it
    (run.path / "ciao.json").write_text(json.dumps(ciao))
    report = make_plots(run.path)
    assert report.notes == []
    names = {p.stem for p in report.written}
    assert names == set(PLOTS) >= {"lineage", "diversity", "performance", "complexity", "ratings",
                                   "pareto", "operators", "archive", "learning", "task_measures",
                                   "coverage", "solve_oscillation", "summary", "ciao"}
    for file in report.written:
        assert file.parent == run.plots_dir
        assert file.read_bytes()[:8] == PNG_MAGIC


def test_plots_without_data_skip_with_a_note(tmp_path):
    run = _write_run(tmp_path, with_tasks=False, objectives=1)
    report = make_plots(run.path, out_dir=tmp_path / "figs")
    skipped = {note.split(":")[0] for note in report.notes}
    assert skipped == {"complexity", "pareto", "task_measures", "ciao"}
    assert all("skipped" in note for note in report.notes)
    assert (tmp_path / "figs" / "lineage.png").is_file()


def test_empty_run_directory_skips_every_plot(tmp_path):
    RunDirectory(tmp_path).write_config({"steps": 1})
    report = make_plots(tmp_path)
    assert report.written == []
    assert len(report.notes) == len(PLOTS)


def test_load_run_data_reads_lineage_ids_and_ancestors(tmp_path):
    run = _write_run(tmp_path, with_tasks=False, objectives=2)
    data = load_run_data(run.path)
    by_name = {row["name"]: row for row in data.lineage}
    uid = {name: row["id"] for name, row in by_name.items()}
    assert by_name["teacher-0002"]["ancestor_list"] == f"[{uid['teacher-0000']},{uid['teacher-0001']}]"
    assert len(data.metrics) == 3 and len(data.ratings) == 12


def test_a_lineage_file_without_ids_is_refused_by_name(tmp_path):
    run = _write_run(tmp_path, with_tasks=False, objectives=1)
    run.lineage_path.write_text('not,a\n"bad', encoding="utf-8")
    with pytest.raises(RunDirectoryError, match="lineage.csv: no 'id' column"):
        load_run_data(run.path)
    run.lineage_path.write_text("garbage,,,\n", encoding="utf-8")  # a header and no rows
    with pytest.raises(RunDirectoryError, match="lineage.csv: no 'id' column"):
        load_run_data(run.path)
    run.lineage_path.write_text("", encoding="utf-8")  # empty reads as no lineage yet
    assert load_run_data(run.path).lineage == []


@pytest.mark.parametrize("name", ["lineage", "operators"])
def test_lineage_plots_need_a_lineage(tmp_path, name):
    with pytest.raises(SkipPlot, match="lineage.csv"):
        PLOTS[name](RunData(path=tmp_path))


def test_pareto_draws_the_configured_objectives(tmp_path):
    run = _write_run(tmp_path, with_tasks=False, objectives=3)  # rows hold rating, novelty, size
    config = run.read_config()
    config["objectives"] = {"teacher": ["size", "rating"], "student": ["rating"]}
    run.write_config(config)
    figure = PLOTS["pareto"](load_run_data(run.path))
    front = figure.axes[0]
    assert (front.get_xlabel(), front.get_ylabel()) == ("size", "rating")
    assert len(figure.axes) == 2  # the single-objective student role is left out
    expected = [[r["objectives"]["size"], r["lcb"]] for r in run.read_log("ratings")
                if r["role"] == "teacher" and r["step"] == 2]
    drawn = np.vstack([c.get_offsets() for c in front.collections[:1]])
    assert np.allclose(sorted(map(tuple, drawn)), sorted(map(tuple, expected)))


def test_single_objective_and_surrogate_runs_skip_pareto_and_complexity(tmp_path):
    run = _write_run(tmp_path, with_tasks=True, objectives=3)
    config = run.read_config()
    config["objectives"] = {"teacher": ["rating"], "student": ["rating"]}
    config["environment"] = {"name": "surrogate"}
    run.write_config(config)
    notes = make_plots(run.path).notes
    assert {note.split(":")[0] for note in notes} == {"complexity", "pareto", "ciao"}  # ciao: no snapshots
    assert any("surrogate" in note for note in notes)


def test_instrument_plots_draw_their_series(tmp_path):
    data = load_run_data(_write_run(tmp_path, with_tasks=True, objectives=1).path)
    measures = PLOTS["task_measures"](data)
    top = measures.axes[0]
    assert top.get_ylabel() == "ast_nodes"
    assert list(top.lines[0].get_ydata()) == [20.0, 21.0, 22.0]  # proposed by the teacher role
    assert top.lines[0].get_label() == "proposed by teacher"
    oscillation = PLOTS["solve_oscillation"](data)
    residual = [bar.get_height() for bar in oscillation.axes[1].patches]
    assert residual == pytest.approx([-0.0333, 0.0, 0.0333], abs=1e-3)  # a linear rise, edge-padded
