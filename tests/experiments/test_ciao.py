"""``redqueen ciao``: snapshots in the run directory, the CIAO matrix, bad input."""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from redqueen.experiments.cli import app
from redqueen.experiments.snapshots import read_snapshots

cli = CliRunner()
SETTINGS = [
    "steps=4",
    "checkpoint_every=3",
    "population.teachers=3",
    "population.students=3",
    "evolution.snapshot_every=2",
    "matchmaking.hall_of_fame_share=0.5",
    "environment.tasks_per_teacher=4", "environment.options={hidden: 8}",
]


def _run(out) -> None:
    args = ["run", "surrogate", "--out", str(out)] + [a for s in SETTINGS for a in ("--set", s)]
    result = cli.invoke(app, args)
    assert result.exit_code == 0, result.output


def test_ciao_plays_every_snapshot_against_every_other(tmp_path):
    out = tmp_path / "run"
    _run(out)
    snapshots = read_snapshots(out)
    assert sorted(snapshots) == [2, 4]
    assert sorted(m.role for m in snapshots[2]) == ["student"] * 3 + ["teacher"] * 3
    assert snapshots[2][0].genome().rank == 4  # a PEFT folder that reads back
    result = cli.invoke(app, ["ciao", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "ciao.json").read_text())
    assert (
        data["steps"] == [2, 4]
        and data["proposer_role"] == "teacher"
        and data["pairs_per_cell"] == 3
    )
    matrix = data["solver_score"]
    assert len(matrix) == 2 and all(
        len(row) == 2 and all(0.0 <= v <= 1.0 for v in row) for row in matrix
    )
    assert (out / "plots" / "ciao.png").stat().st_size > 0
    again = cli.invoke(app, ["ciao", str(out)])
    assert again.exit_code == 0 and json.loads((out / "ciao.json").read_text()) == data  # seeded

    # Bad input: one line, exit 2.
    missing = cli.invoke(app, ["ciao", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    shutil.rmtree(out / "snapshots" / "step_00004" / snapshots[4][0].id)
    broken = cli.invoke(app, ["ciao", str(out)])
    assert (
        broken.exit_code == 2
        and "missing" in broken.output
        and len(broken.output.strip().splitlines()) == 1
    )
    shutil.rmtree(out / "snapshots")
    empty = cli.invoke(app, ["ciao", str(out)])
    assert (
        empty.exit_code == 2 and "no snapshots" in empty.output and "Traceback" not in empty.output
    )


def test_pairs_outside_its_range_is_refused_before_any_match_is_planned(tmp_path, capsys):
    import pytest

    from redqueen.experiments.ciao import MAX_PAIRS, ciao_matrix
    from redqueen.experiments.cli import main

    out = tmp_path / "run"
    _run(out)
    # 10**14 planned a list of matches until memory ran out; -1 played none, a NaN matrix.
    with pytest.raises(SystemExit) as exit_info:
        main(["ciao", str(out), "--pairs", str(10**14)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: Invalid value for '--pairs': Input should be less than or equal to {MAX_PAIRS}"
    ]
    for pairs in (-1, 0, MAX_PAIRS + 1):
        with pytest.raises(ValueError, match=f"pairs must be from 1 to {MAX_PAIRS}, got {pairs}"):
            ciao_matrix(out, pairs=pairs)
    with pytest.raises(TypeError, match="pairs must be an integer, got float"):
        ciao_matrix(out, pairs=2.5)
    assert not (out / "ciao.json").exists()
