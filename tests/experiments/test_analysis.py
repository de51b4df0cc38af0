"""Analysis across runs: the tidy table, windows, paired tests with Holm, bounded intervals, labels."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import ttest_rel
from typer.testing import CliRunner

from redqueen.experiments.cli import app
from redqueen.experiments.compare import compare
from redqueen.experiments.rundir import RunDirectory

cli = CliRunner()


def _write_run(path, config, rows):
    run = RunDirectory(path)
    run.path.mkdir(parents=True)
    run.write_config(config)
    run.open_logs()
    run.append("metrics", rows)
    run.close_logs()


def _config(selection, seed, operators=None):
    return {"seed": seed, "steps": 3, "environment": {"name": "surrogate", "options": {}},
            "evolution": {"selection": selection, "operators": operators or {"svd_merge": 0.5, "gaussian": 0.5}},
            "objectives": {"teacher": ["rating"]}}


def _paired_study(root, n=5):
    """Two conditions over the same seeds: a large seed effect, a small consistent gain for nsga2."""
    rng = np.random.default_rng(11)
    seed_effect = rng.normal(0.0, 1.0, n)
    gain = 0.3 + rng.uniform(0.0, 0.1, n)
    for condition, shift in (("tournament", 0.0), ("nsga2", 1.0)):
        for seed in range(n):
            last = seed_effect[seed] + shift * gain[seed]
            _write_run(root / condition / f"seed{seed}", _config(condition, seed),
                       [{"step": s, "objective_skill": last - 0.5 + 0.25 * s, "solve_rate": 0.9} for s in range(3)])
    return [root / "tournament", root / "nsga2"], seed_effect, gain


def test_load_runs_returns_one_tidy_table_with_config_columns(tmp_path):
    from redqueen.experiments import load_runs

    dirs, _, _ = _paired_study(tmp_path, n=2)
    table = load_runs(dirs)
    assert len(table) == 2 * 2 * 3  # conditions x seeds x steps
    for column in ("run", "condition", "step", "objective_skill", "solve_rate", "seed",
                   "evolution.selection", "evolution.operators.svd_merge", "environment.name"):
        assert column in table.columns, column
    assert sorted(table["evolution.selection"].unique()) == ["nsga2", "tournament"]
    assert set(table["step"]) == {0, 1, 2}
    assert table.groupby("condition")["run"].nunique().to_dict() == {"nsga2": 2, "tournament": 2}
    assert table.loc[0, "objectives.teacher"] == '["rating"]'  # lists as JSON text, hashable


def test_window_aggregates_the_last_steps(tmp_path):
    _write_run(tmp_path / "a" / "seed0", {"seed": 0}, [{"step": s, "x": float(s)} for s in range(6)])
    _write_run(tmp_path / "a" / "seed1", {"seed": 1}, [{"step": s, "x": 2.0 * s} for s in range(6)])
    last = compare([tmp_path / "a"], metrics=["x"], out=tmp_path / "o1")
    window = compare([tmp_path / "a"], metrics=["x"], out=tmp_path / "o2", window=3)
    assert last.finals["x"][0].values == [5.0, 10.0]
    assert window.finals["x"][0].values == pytest.approx([4.0, 8.0])  # mean of steps 3, 4, 5
    assert "last 3 steps" in window.table
    result = cli.invoke(app, ["compare", str(tmp_path / "a"), "-m", "x", "--window", "2", "--out", str(tmp_path / "o3")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "o3" / "compare.json").read_text())["x"]["final"][0]["values"] == [4.5, 9.0]
    bad = cli.invoke(app, ["compare", str(tmp_path / "a"), "-m", "x", "--window", "0"])
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_paired_test_when_seeds_match_and_holm_across_comparisons(tmp_path):
    dirs, seed_effect, gain = _paired_study(tmp_path)
    result = compare(dirs, metrics=["objective_skill"], out=tmp_path / "out")
    (test,) = result.tests["objective_skill"]
    assert test.paired and test.method == "paired t"
    a = seed_effect + 0.25
    b = seed_effect + gain + 0.25
    expected = ttest_rel(a, b).pvalue if test.a == "tournament" else ttest_rel(b, a).pvalue
    assert test.p == pytest.approx(expected) and test.p < 0.05
    from scipy.stats import mannwhitneyu

    assert mannwhitneyu(a, b).pvalue > 0.05  # unpaired, the seed effect hides the gain
    assert test.p_holm == pytest.approx(test.p)  # one comparison: Holm leaves it alone
    assert "paired t" in result.table and "Holm" in result.table

    # Three conditions: three comparisons, Holm-adjusted p-values are >= the raw ones.
    for seed in range(5):
        _write_run(tmp_path / "random" / f"seed{seed}", _config("random", seed),
                   [{"step": 2, "objective_skill": float(seed_effect[seed])}])
    three = compare([*dirs, tmp_path / "random"], metrics=["objective_skill"], out=tmp_path / "out3")
    tests = three.tests["objective_skill"]
    assert len(tests) == 3 and all(t.p_holm >= t.p for t in tests)
    smallest = min(tests, key=lambda t: t.p)
    assert smallest.p_holm == pytest.approx(min(1.0, 3 * smallest.p))

    # Seeds that do not match: unpaired (Mann-Whitney U).
    _write_run(tmp_path / "other" / "seed7", _config("x", 7), [{"step": 2, "objective_skill": 1.0}])
    _write_run(tmp_path / "other" / "seed8", _config("x", 8), [{"step": 2, "objective_skill": 2.0}])
    mixed = compare([dirs[0], tmp_path / "other"], metrics=["objective_skill"], out=tmp_path / "out4")
    (unpaired,) = mixed.tests["objective_skill"]
    assert not unpaired.paired and unpaired.method == "Mann-Whitney U"


def test_rate_intervals_stay_inside_zero_and_one(tmp_path):
    for seed, rates in enumerate(([0.0, 0.0], [0.0, 0.9], [0.0, 0.05])):
        _write_run(tmp_path / "c" / f"seed{seed}", {"seed": seed},
                   [{"step": s, "solve_rate": r, "unbounded": r - 0.5} for s, r in enumerate(rates)])
    result = compare([tmp_path / "c"], metrics=["solve_rate", "unbounded"], out=tmp_path / "out")
    (final,) = result.finals["solve_rate"]
    assert 0.0 <= final.interval.low <= final.interval.mean <= final.interval.high <= 1.0
    assert final.interval.low == 0.0  # the t interval reaches below 0: truncated at the bound
    (band,) = result.bands["solve_rate"]
    assert all(0.0 <= v <= 1.0 for v in band.low + band.high)
    (free,) = result.finals["unbounded"]
    assert free.interval.low < -0.5  # a metric with no known bounds keeps its t interval


def test_condition_labels_are_short_and_readable(tmp_path):
    from redqueen.experiments.analysis import condition_labels
    from redqueen.experiments.sweep import condition_name

    ugly = {}
    for operators in ({"gaussian": 0.5, "svd_merge": 0.5}, {"gaussian": 1.0}):
        name = condition_name({"evolution.operators": json.dumps(operators).replace('"', "")})
        ugly[name] = operators
        for seed in range(2):
            _write_run(tmp_path / name / f"seed{seed}", _config("tournament", seed, operators),
                       [{"step": 0, "solve_rate": 0.5}])
    result = compare([tmp_path / name for name in ugly], metrics=["solve_rate"], out=tmp_path / "out")
    labels = condition_labels({name: [tmp_path / name / "seed0"] for name in ugly})
    assert sorted(labels.values()) == ["gaussian=0.5, svd_merge=0.5", "gaussian=1, svd_merge=-"]
    assert all(len(label) <= 40 and not label.startswith("_") for label in labels.values())
    assert "gaussian=1, svd_merge=-" in result.table and "_gaussian" not in result.table


def test_export_table_writes_csv_and_parquet(tmp_path):
    dirs, _, _ = _paired_study(tmp_path / "study", n=2)
    out = tmp_path / "table.csv"
    result = cli.invoke(app, ["export-table", *map(str, dirs), "--out", str(out)])
    assert result.exit_code == 0, result.output
    import pandas as pd

    table = pd.read_csv(out)
    assert len(table) == 12 and "evolution.selection" in table.columns
    parquet = tmp_path / "table.parquet"
    result = cli.invoke(app, ["export-table", *map(str, dirs), "--out", str(parquet)])
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert result.exit_code == 2 and "pyarrow" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    else:
        assert result.exit_code == 0 and len(pd.read_parquet(parquet)) == 12
    bad = cli.invoke(app, ["export-table", str(dirs[0]), "--out", str(tmp_path / "t.xlsx")])
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_export_table_into_a_run_it_reads_is_refused_and_the_run_kept(tmp_path):
    dirs, _, _ = _paired_study(tmp_path / "study", n=2)
    run = dirs[0] / "seed0"
    (run / "lineage.csv").write_text("id,name\n0,teacher-0000\n")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    for out in (run / "lineage.csv", run / "table.csv"):  # lineage.csv was replaced by the table
        result = cli.invoke(app, ["export-table", str(dirs[0]), "--out", str(out)])
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert lines == [f"error: {out}: inside run directory {run}, whose files are its records; "
                         "write the table elsewhere"]
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
