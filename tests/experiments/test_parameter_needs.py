"""Requirements that depend on a plug-in's parameters are checked at load, before any run
directory exists; a run that fails before its first checkpoint says there is nothing to resume."""

from __future__ import annotations

from typer.testing import CliRunner

from redqueen.experiments.cli import app

cli = CliRunner()

SCHEME = '''
from collections.abc import Sequence
from typing import Annotated

import numpy as np
from pydantic import Field

from redqueen import Needs
from redqueen.evo import Individual
from redqueen.evo.selection import SELECTIONS


def _objective_exists(params, facts):
    if params["objective"] >= facts.objectives:
        return f"objective: {params['objective']} is not below the {facts.objectives} objectives per role"
    return None


@SELECTIONS.register("best_on", needs=Needs(check=_objective_exists))
def best_on(
    individuals: Sequence[Individual], k: int, *, rng: np.random.Generator,
    objective: Annotated[int, Field(ge=0)] = 0,
) -> list[int]:
    """The best member on one objective, k times."""
    best = max(range(len(individuals)), key=lambda i: individuals[i].fitness.wvalues[objective])
    return [best] * k
'''


def _run(tmp_path, *extra):
    plugin = tmp_path / "best_on.py"
    plugin.write_text(SCHEME)
    out = tmp_path / "run"
    args = ["run", "surrogate", "--plugin", str(plugin), "--out", str(out), "--no-plots",
            "--set", "steps=2", "--set", "evolution.replace_every=1",
            "--set", "evolution.selection=best_on", *extra]
    return cli.invoke(app, args), out


def test_a_parameter_the_run_cannot_satisfy_is_refused_before_the_run_directory(tmp_path):
    result, out = _run(tmp_path, "--set", "evolution.selection_params={objective: 1}")
    assert result.exit_code == 2
    line = result.stderr.strip().splitlines()[-1]
    assert "evolution.selection_params" in line and "objective: 1 is not below the 1" in line
    assert not out.exists()
    ok, out = _run(tmp_path, "--set", "evolution.selection_params={objective: 0}")
    assert ok.exit_code == 0, ok.output
    assert (out / "metrics.jsonl").is_file()


def test_a_run_that_fails_before_its_first_checkpoint_says_there_is_nothing_to_resume(tmp_path):
    result, out = _run(tmp_path, "--set", "checkpoint_every=0",
                       "--set", "evolution.selection_params={objective: 0}",
                       "--set", "evolution.operators={explode_early: 1.0}",
                       "--plugin", str(_exploding(tmp_path)))
    assert result.exit_code == 2
    line = result.stderr.strip().splitlines()[-1]
    assert "no children today" in line and "nothing to resume" in line
    assert "starts it over from step 0" in line and f"remove {out}" in line


def _exploding(tmp_path):
    plugin = tmp_path / "explode_early.py"
    plugin.write_text(
        "from redqueen.evo.operators import MUTATIONS\n\n\n"
        "@MUTATIONS.register('explode_early')\n"
        "def explode_early(genome, *, rng):\n"
        "    raise RuntimeError('no children today')\n"
    )
    return plugin
