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
