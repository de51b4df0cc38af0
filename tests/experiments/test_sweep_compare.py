"""Sweeps on Ray Tune and comparisons with t bands (scipy.stats), checked by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import bootstrap, mannwhitneyu, sem, t
from typer.testing import CliRunner

from redqueen.experiments.cli import app
from redqueen.experiments.compare import compare, find_conditions
from redqueen.experiments.rundir import RunDirectory
from redqueen.experiments.sweep import condition_name, parse_grid

runner = CliRunner()


def _fake_runs(root, values: dict[str, list[list[float]]], *, matched: bool = True):
    """condition -> per seed, the metric's values at steps 0, 1, 2 ...; written as run directories
    (``matched=False``: each condition on seeds of its own, so the runs cannot be paired)."""
    for number, (condition, per_seed) in enumerate(values.items()):
        for seed, series in enumerate(per_seed):
            run = RunDirectory(root / condition / f"seed{seed}")
            run.path.mkdir(parents=True)
            run.write_config({"seed": seed if matched else 100 * number + seed})
            run.open_logs()
            run.append("metrics", [{"step": step, "best_rating": v} for step, v in enumerate(series)])
            run.close_logs()
    return [root / condition for condition in values]


def _direct(samples):
    data = np.asarray(samples, float)
    return t.interval(0.95, data.size - 1, loc=data.mean(), scale=sem(data))


def test_bands_and_final_values_match_a_direct_t_interval(tmp_path):
    rng = np.random.default_rng(7)
    values = {"tournament": rng.normal(1.0, 0.5, (4, 5)).tolist(),
              "nsga2": rng.normal(2.0, 0.5, (4, 5)).tolist()}
    dirs = _fake_runs(tmp_path, values, matched=False)
    result = compare(dirs, metrics=["best_rating"], out=tmp_path / "out")
    for band in result.bands["best_rating"]:
        runs = np.array(values[band.condition])
        assert band.steps == [0.0, 1.0, 2.0, 3.0, 4.0] and band.runs == 4
        for step in range(5):
            assert band.mean[step] == pytest.approx(runs[:, step].mean())
            assert (band.low[step], band.high[step]) == pytest.approx(_direct(runs[:, step]))
            assert band.low[step] < band.mean[step] < band.high[step]
    for final in result.finals["best_rating"]:
        last = np.array(values[final.condition])[:, -1]
        assert final.values == pytest.approx(last.tolist())
        assert (final.interval.low, final.interval.high) == pytest.approx(_direct(last))
    (test,) = result.tests["best_rating"]
    assert test.method == "Mann-Whitney U" and test.p == pytest.approx(
        mannwhitneyu(np.array(values[test.a])[:, -1], np.array(values[test.b])[:, -1]).pvalue)
    saved = json.loads((tmp_path / "out" / "compare.json").read_text())["best_rating"]
    assert saved["bands"][0]["low"] == pytest.approx(result.bands["best_rating"][0].low)
    assert (tmp_path / "out" / "compare.png").read_bytes()[:4] == b"\x89PNG"


def test_two_seeds_get_the_right_n_a_caveat_and_intervals_that_cover():
    """With 2 seeds per condition the table names n = 2 (not 3), its smallest possible p (1/3),
    warns that there are few seeds, and the interval keeps its 95% coverage where a percentile
    bootstrap covers about half the time."""
    import tempfile
    from pathlib import Path

    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as tmp:
        dirs = _fake_runs(Path(tmp), {"a": [[0.0, 1.0], [0.0, 2.0]], "b": [[0.0, 3.0], [0.0, 5.0]]}, matched=False)
        compare(dirs, metrics=["best_rating"], out=Path(tmp) / "out")
        table = (Path(tmp) / "out" / "compare.md").read_text()
    assert "n = 3" not in table and "0.1 for" not in table
    assert "a vs b: p = 0.333 (Mann-Whitney U, n = 2 vs 2; smallest possible p 0.333; Holm 0.333)" in table
    assert "Caveat: fewer than 5 seeds in a (n = 2), b (n = 2)" in table
    from redqueen.experiments.stats import t_ci

    draws = rng.normal(0.0, 1.0, (2000, 2))
    covered = np.mean([(i := t_ci(d)).low <= 0.0 <= i.high for d in draws])
    boot = np.mean([ci.low <= 0.0 <= ci.high for ci in (
        bootstrap((d,), np.mean, method="percentile", n_resamples=199, rng=np.random.default_rng(0)).confidence_interval
        for d in draws[:200])])
    assert 0.93 <= covered <= 0.97 and boot < 0.7


def test_grid_and_conditions_bad_input(tmp_path):
    assert parse_grid(["a.b=1,2", "c=x"]) == {"a.b": ["1", "2"], "c": ["x"]}
    assert parse_grid(["ops={svd_merge: 1.0, gaussian: 0.5},{ties: 1.0}", "w=[1, 2],'a,b'"]) == {
        "ops": ["{svd_merge: 1.0, gaussian: 0.5}", "{ties: 1.0}"], "w": ["[1, 2]", "'a,b'"]}
    assert condition_name({"evolution.selection": "nsga2", "x": "{a: 1}"}) == "evolution.selection=nsga2,x=_a__1_"
    for bad in (["a.b"], ["=1,2"], ["a=1,,2"], ["a=1", "a=2"]):
        with pytest.raises(ValueError, match="--grid"):
            parse_grid(bad)
    with pytest.raises(ValueError, match="not a sweep directory"):
        find_conditions([tmp_path])
    result = runner.invoke(app, ["sweep", "surrogate", "--grid", "evolution.selectio=a,b", "--out", str(tmp_path / "s")])
    assert result.exit_code == 2 and "evolution.selectio" in result.stderr and not (tmp_path / "s").exists()
    dirs = _fake_runs(tmp_path / "runs", {"a": [[1.0, 2.0]]})
    result = runner.invoke(app, ["compare", str(dirs[0]), "--metric", "no_such_metric"])
    assert result.exit_code == 2 and "no_such_metric" in result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_sweep_two_schemes_three_seeds_on_ray_then_compare(tmp_path):
    pytest.importorskip("ray.tune", reason="Ray Tune is not installed (the dev extra installs it)")
    import ray

    if ray.is_initialized():  # an earlier test's cluster: this one needs its own 2-CPU instance
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # both sweeps share it
    try:
        _sweep_then_compare(tmp_path)
    finally:
        ray.shutdown()


def _sweep_then_compare(tmp_path):
    out = tmp_path / "study"
    args = ["sweep", "surrogate", "--seeds", "3", "--grid", "evolution.selection=tournament,truncation",
            "--set", "steps=2", "--set", "population.teachers=3", "--set", "population.students=3",
            "--set", "evolution.replace_every=1", "--no-plots", "--out", str(out)]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    groups = find_conditions([out])
    assert sorted(groups) == ["evolution.selection=tournament", "evolution.selection=truncation"]
    runs = [run for paths in groups.values() for run in paths]
    assert len(runs) == 6
    for run in runs:
        config = RunDirectory(run).read_config()
        assert config["evolution"]["selection"] in run.parent.name and f"seed{config['seed']}" == run.name
        assert len(RunDirectory(run).read_log("metrics")) == 2
    before = {run: (run / "metrics.jsonl").read_bytes() for run in runs}
    again = runner.invoke(app, args)  # resumable: finished runs are kept as they are
    assert again.exit_code == 0, again.output
    assert all((run / "metrics.jsonl").read_bytes() == data for run, data in before.items())
    shown = runner.invoke(app, ["compare", str(out), "--metric", "best_rating", "--metric", "solve_rate"])
    assert shown.exit_code == 0, shown.output
    assert "| selection=truncation | 3 |" in shown.stdout
    bands = json.loads((out / "compare" / "compare.json").read_text())["best_rating"]["bands"]
    for band in bands:
        seeds = [RunDirectory(r).read_log("metrics") for r in groups[band["condition"]]]
        last = [rows[-1]["best_rating"] for rows in seeds]
        assert band["steps"] == [0.0, 1.0] and band["mean"][-1] == pytest.approx(np.mean(last))
        expected = (last[0], last[0]) if len(set(last)) == 1 else _direct(last)
        assert (band["low"][-1], band["high"][-1]) == pytest.approx(expected)
    assert (out / "compare" / "compare.png").is_file()


PLUGIN = '''
from collections.abc import Sequence

import numpy as np

from redqueen.evo import Individual
from redqueen.evo.selection import SELECTIONS


@SELECTIONS.register("fitness_uniform_outside")
def fitness_uniform_outside(individuals: Sequence[Individual], k: int, *, rng: np.random.Generator) -> list[int]:
    """Uniform over fitness levels (Hutter & Legg 2006), as an outside researcher wrote it."""
    values = np.array([ind.fitness.wvalues[0] for ind in individuals])
    targets = rng.uniform(values.min(), values.max(), size=k)
    return [int(np.argmin(np.abs(values - t))) for t in targets]
'''


@pytest.mark.slow
def test_sweep_loads_an_outside_selection_plugin_in_every_trial_then_compare(tmp_path):
    pytest.importorskip("ray.tune", reason="Ray Tune is not installed (the dev extra installs it)")
    import ray

    plugin = tmp_path / "fusel.py"
    plugin.write_text(PLUGIN)
    out = tmp_path / "study"
    args = ["sweep", "surrogate", "--plugin", str(plugin), "--seeds", "2",
            "--grid", "evolution.selection=tournament,fitness_uniform_outside",
            "--set", "steps=2", "--set", "evolution.replace_every=1", "--no-plots", "--out", str(out)]
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        # Without the plug-in the grid names an unknown scheme: refused before any trial.
        refused = runner.invoke(app, [a for a in args if a not in ("--plugin", str(plugin))])
        assert refused.exit_code == 2 and "fitness_uniform_outside" in refused.stderr
        done = runner.invoke(app, args)
        assert done.exit_code == 0, done.output
    finally:
        ray.shutdown()
    assert json.loads((out / "sweep.json").read_text())["plugins"] == [str(plugin.resolve())]
    runs = [run for paths in find_conditions([out]).values() for run in paths]
    assert len(runs) == 4
    for run in runs:  # every trial records the plug-in it ran with, so `resume` can find it
        assert RunDirectory(run).read_plugins() == [str(plugin.resolve())]
    shown = runner.invoke(app, ["compare", str(out), "--metric", "best_rating"])
    assert shown.exit_code == 0, shown.output
    assert "selection=fitness_uniform_outside" in shown.stdout
