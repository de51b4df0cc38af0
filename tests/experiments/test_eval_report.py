"""Evaluation records: summaries, JSON round trip, markdown, the comparison table."""

from __future__ import annotations

import json

import pytest

from redqueen.experiments.evaluation import (
    EvalReport,
    MemberScore,
    comparison_table,
    split_baselines,
    summarize,
    truncate_at_stops,
)
from redqueen.experiments.evaluation._compare import cached_or_evaluate


def _report(run_dir: str = "runs/a", roles=("student", "student", "teacher")) -> EvalReport:
    problems = ("p0", "p1", "p2", "p3")
    scores = [
        MemberScore(f"m{i}", role, "population", passed, 4, problems[:passed])
        for i, (role, passed) in enumerate(zip(roles, (3, 1, 4), strict=True))
    ]
    scores.append(MemberScore("base", "base", "base", 2, 4, problems[:2]))
    scores.append(MemberScore("sp/solo-0", "baseline", "baseline", 1, 4, problems[:1]))
    return EvalReport(
        suite="humaneval",
        run_dir=run_dir,
        model="tiny-coder",
        problems=problems,
        scores=tuple(scores),
    )


def test_summary_mean_best_weakest() -> None:
    report = _report()
    every = report.summary()
    assert every.n_members == 3
    assert every.mean == pytest.approx((0.75 + 0.25 + 1.0) / 3)
    assert every.best.member == "m2" and every.weakest.member == "m1"
    students = report.headline()
    assert students.n_members == 2 and students.mean == pytest.approx(0.5)
    assert report.base.pass_at_1 == 0.5
    assert [s.member for s in report.baselines] == ["sp/solo-0"]
    assert summarize([]) is None


def test_headline_without_students_uses_every_member() -> None:
    report = _report(roles=("solo", "solo", "solo"))
    assert report.headline().n_members == 3


def test_json_round_trip(tmp_path) -> None:
    report = _report(str(tmp_path))
    json_path, md_path = report.write(tmp_path)
    assert json_path.name == "eval_humaneval.json" and md_path.name == "eval_humaneval.md"
    data = json.loads(json_path.read_text())
    assert data["summary"]["student"]["mean"] == pytest.approx(0.5)
    assert data["scores"][0]["pass_at_1"] == pytest.approx(0.75)
    again = EvalReport.load(json_path)
    assert again.scores == report.scores and again.problems == report.problems
    markdown = md_path.read_text()
    assert "| m0 | student | 0.750 | 3/4 |" in markdown
    assert "base model without adapter: 0.500" in markdown


def test_load_names_missing_field(tmp_path) -> None:
    path = tmp_path / "eval_humaneval.json"
    path.write_text(json.dumps({"suite": "humaneval"}))
    with pytest.raises(ValueError, match="eval_humaneval.json: .*missing field"):
        EvalReport.load(path)


def test_comparison_table_has_paper_columns() -> None:
    population = _report()
    selfplay = _report(roles=("solo", "solo", "solo"))
    table = comparison_table([(population, selfplay)])
    header, _, row = table.strip().splitlines()
    assert "population mean" in header and "population weakest" in header and "baseline" in header
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    # base 50.0, self-play mean over 3 solo members, student mean 50.0, weakest 25.0, best 75.0
    assert cells[1:] == ["50.0", f"{100 * (0.75 + 0.25 + 1.0) / 3:.1f}", "50.0", "25.0", "75.0"]


def test_split_baselines_gives_the_paper_row() -> None:
    population, baseline = split_baselines(_report())
    assert [s.member for s in population.scores] == ["m0", "m1", "m2", "base"]
    assert [s.member for s in baseline.population] == ["sp/solo-0"]
    assert baseline.headline().mean == 0.25
    row = comparison_table([(population, baseline)]).strip().splitlines()[-1]
    assert [cell.strip() for cell in row.strip("|").split("|")][1:3] == ["50.0", "25.0"]


def test_cached_report_is_reused_when_problems_match(tmp_path) -> None:
    from redqueen.experiments.evaluation import HumanEvalSuite

    ids = tuple(p.id for p in HumanEvalSuite().problems(limit=4))
    report = EvalReport(
        suite="humaneval",
        run_dir=str(tmp_path),
        model="tiny-coder",
        problems=ids,
        scores=(MemberScore("m0", "student", "population", 1, 4, ids[:1]),),
    )
    report.write(tmp_path)
    # No config.yaml here: a fresh evaluation would fail, so success means the cache was used.
    assert cached_or_evaluate(tmp_path, "humaneval", limit=4).scores == report.scores


def test_truncate_at_stops_takes_earliest() -> None:
    text = "    return 1\n# note\ndef g():\n    pass"
    assert truncate_at_stops(text, ("\ndef ", "\n#")) == "    return 1"
    assert truncate_at_stops("    return 1\n", ("\ndef ",)) == "    return 1\n"


def test_population_mean_has_a_bootstrap_ci_over_problems() -> None:
    import numpy as np
    from scipy.stats import bootstrap

    report = _report()
    interval = report.mean_interval()
    members = [set(s.solved) for s in report.population]
    shares = np.array([sum(p in m for m in members) / 3 for p in report.problems])
    direct = bootstrap((shares,), np.mean, method="percentile", n_resamples=9999,
                       rng=np.random.default_rng(0)).confidence_interval
    assert interval.mean == pytest.approx(report.summary().mean)
    assert (interval.low, interval.high) == pytest.approx((direct.low, direct.high))
    assert interval.low <= interval.mean <= interval.high and interval.low < interval.high
    data = report.to_dict()
    assert data["summary"]["all"]["mean_ci95"] == pytest.approx([direct.low, direct.high])
    assert "95% CI" in report.to_markdown()


def test_across_runs_gives_a_t_interval_of_the_headline_over_seeds() -> None:
    import numpy as np
    from scipy.stats import sem, t

    from redqueen.experiments.evaluation._report import across_runs

    reports = [_report(f"runs/{i}", roles=roles) for i, roles in
               enumerate([("student", "student", "teacher"), ("student", "teacher", "student"),
                          ("teacher", "student", "student")])]
    means = np.array([r.headline().mean for r in reports])
    interval = across_runs(reports)
    direct = t.interval(0.95, means.size - 1, loc=means.mean(), scale=sem(means))
    assert interval.n == 3 and interval.mean == pytest.approx(means.mean())
    assert (interval.low, interval.high) == pytest.approx(direct)
