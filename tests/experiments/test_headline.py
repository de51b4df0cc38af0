"""Headline metrics that measure something: held-out lift, objective skill, ratings labelled as
relative; the CIAO matrix and a one-page summary drawn with the other plots."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from redqueen.experiments.cli import app
from redqueen.experiments.rundir import RunDirectory

cli = CliRunner()
SETTINGS = [
    "steps=4",
    "checkpoint_every=4",
    "population.teachers=3",
    "population.students=3",
    "evolution.snapshot_every=2",
    "environment.tasks_per_teacher=4", "environment.options={hidden: 8}",
]


@pytest.fixture(scope="module")
def surrogate_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("headline") / "run"
    result = cli.invoke(app, ["run", "surrogate", "--out", str(out), *[a for s in SETTINGS for a in ("--set", s)]])
    assert result.exit_code == 0, result.output
    return out


def test_surrogate_logs_held_out_lift_over_the_base_model(surrogate_run):
    rows = RunDirectory(surrogate_run).read_log("metrics")
    for row in rows:
        assert 0.0 <= row["heldout_solve_rate"] <= 1.0 and 0.0 <= row["base_heldout_solve_rate"] <= 1.0
        assert row["heldout_lift"] == pytest.approx(row["heldout_solve_rate"] - row["base_heldout_solve_rate"])
    assert len({row["base_heldout_solve_rate"] for row in rows}) == 1  # the base model is frozen


def test_headline_metric_per_kind_of_run():
    from redqueen.experiments._headline import headline_metric, progress_stats

    assert headline_metric({"heldout_lift", "best_rating"}) == "heldout_lift"
    assert headline_metric({"objective_skill", "best_rating", "solve_rate"}) == "objective_skill"
    assert headline_metric({"base_lift", "solve_rate", "best_rating"}) == "base_lift"
    assert headline_metric({"best_rating"}) is None
    line = progress_stats({"heldout_lift": 0.125, "solve_rate": 0.5, "best_rating": 7.0})
    assert line.startswith("held-out lift +0.125") and "rating (relative) 7" in line
    assert "best 7" not in progress_stats({"best_rating": 7.0})


def test_code_runs_log_the_lift_over_the_base_model_on_the_same_tasks():
    from redqueen.environments._game_stats import base_lift

    played = [SimpleNamespace(solve_rate=0.75, base_solve_rate=0.5),
              SimpleNamespace(solve_rate=0.0, base_solve_rate=0.5),
              SimpleNamespace(solve_rate=None, base_solve_rate=None),  # invalid task
              SimpleNamespace(solve_rate=1.0, base_solve_rate=None)]  # not probed
    assert base_lift(played) == pytest.approx(((0.75 - 0.5) + (0.0 - 0.5)) / 2)
    assert base_lift(played[2:]) is None


def test_plots_include_the_ciao_matrix_and_a_summary(surrogate_run):
    """The end of a run draws its plots as ``redqueen plot`` does (``make_plots``)."""
    from redqueen.experiments.plots import PLOTS, SkipPlot, load_run_data

    plots = surrogate_run / "plots"
    assert (plots / "ciao.png").stat().st_size > 0 and (plots / "summary.png").stat().st_size > 0
    assert not (surrogate_run / "ciao.json").exists()  # drawn without `redqueen ciao`
    data = load_run_data(surrogate_run)
    data.config["environment"]["name"] = "coevolution"  # matches that need the model: not played
    with pytest.raises(SkipPlot, match="redqueen ciao"):
        PLOTS["ciao"](data)


def test_compare_defaults_to_the_headline_metric_and_labels_ratings(surrogate_run, tmp_path):
    from redqueen.experiments.compare import compare, default_metrics

    assert default_metrics([surrogate_run])[0] == "heldout_lift"
    result = compare([surrogate_run], out=tmp_path / "out")
    assert list(result.finals)[0] == "heldout_lift"
    assert "best_rating (relative, inflates)" in result.table
    assert list(result.finals) == ["heldout_lift", "solve_rate", "best_rating"]  # compare.png: the summary


def test_tensorboard_receives_the_hyperparameters(tmp_path):
    from redqueen.experiments.monitor import Monitor, tensorboard_available

    if not tensorboard_available():
        pytest.skip("tensorboard is not installed")
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

    config = {"seed": 3, "evolution": {"selection": "nsga2", "operators": {"svd_merge": 0.5}},
              "objectives": {"teacher": ["rating"]}}
    monitor = Monitor(log_dir=tmp_path, tensorboard=True, config=config)
    monitor.log(0, {"heldout_lift": 0.1, "best_rating": 3.0})
    monitor.log(1, {"heldout_lift": 0.2, "best_rating": 4.0})
    monitor.close()
    events = EventMultiplexer().AddRunsFromDirectory(str(tmp_path / "tensorboard"))
    events.Reload()
    found = {}
    for run in events.Runs():
        for tag, content in events.PluginRunToTagToContent("hparams").get(run, {}).items():
            found[tag] = content
    assert "_hparams_/session_start_info" in found
    text = found["_hparams_/session_start_info"].decode("latin-1")
    assert "evolution.selection" in text and "nsga2" in text and "evolution.operators.svd_merge" in text
    json.dumps(config)  # unchanged, still plain data
