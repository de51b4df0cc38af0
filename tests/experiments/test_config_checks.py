"""A configuration is checked against the registries and its environment at load: a bad
parameter, an unmet need or a key nothing reads exits 2 with one line, before any folder exists."""

from __future__ import annotations

import sys

import pytest
import yaml
from typer.testing import CliRunner

from redqueen.experiments._config_checks import check_config, set_keys
from redqueen.experiments.cli import EXIT_BAD_INPUT, app
from redqueen.experiments.config import PRESETS, ConfigError, load_config

runner = CliRunner()


def _bad_run(tmp_path, args: list[str]) -> str:
    out = tmp_path / "runs" / "bad"
    result = runner.invoke(app, ["run", *args, "--out", str(out), "--no-plots"])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()  # nothing made, not even the parent folder
    return lines[0].removeprefix("error: ")


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (
            ["evolution.operator_params={gaussian: {sigmaa: 0.1}}"],
            "evolution.operator_params.gaussian.sigmaa: unknown parameter (known: fraction, sigma)",
        ),
        (
            ["evolution.operator_params={gaussian: {sigma: -0.1}}"],
            "evolution.operator_params.gaussian.sigma: input should be greater than or equal to 0 (got -0.1)",
        ),
        (
            ["evolution.selection_params={tournsize_typo: 3}"],
            "evolution.selection_params.tournsize_typo: unknown parameter (known: tournsize)",
        ),
        (
            ["evolution.selection=nsga2"],
            "evolution.selection: 'nsga2' needs at least 2 objectives per role, objectives.teacher has 1 (rating)",
        ),
        (
            ["evolution.ranking=spea2", "objectives.teacher=[rating, solve_rate]"],
            "evolution.ranking: 'spea2' needs at least 2 objectives per role, objectives.student has 1 (rating)",
        ),
        (
            [
                "evolution.operators={task_vector: 1.0}",
                "evolution.operator_params={task_vector: {n_parents: 3}}",
            ],
            "evolution.operator_params.task_vector.n_parents: crossover 'task_vector' takes exactly 2 parents, got 3",
        ),
        (
            ["evolution.operator_params={svd_merge: {n_parents: 1}}"],
            "evolution.operator_params.svd_merge.n_parents: crossover 'svd_merge' takes at least 2 parents, got 1",
        ),
        (
            ["evolution.operator_params={gaussian: {n_parents: 2}}"],
            "evolution.operator_params.gaussian.n_parents: a mutation takes one parent",
        ),
        (
            ["objectives.student=[rating, nope]"],
            "objectives.student: unknown objective 'nope' (known: error, novelty, rating, rating_lcb, "
            "rating_mu, solve_rate, student_reward)",
        ),
        (
            ["learner.lr=0.1", "learner.epochs=2"],
            "learner: not read by environment 'surrogate' (set: lr, epochs)",
        ),
        (["model.name=gpt2"], "model.name: not read by environment 'surrogate'"),
        (
            ["environment.executor.timeout=9"],
            "environment.executor: not read by environment 'surrogate' (set: timeout)",
        ),
        (["population.solo=2"], "population.solo: not read by environment 'surrogate'"),
        (
            ["evolution.elitism=9"],
            "evolution.elitism: 9 elites, but the teacher role has 8 members; use at most 8 "
            "(evolution.replace_every: 0 turns replacement off)",
        ),
        (
            ["evolution.snapshot_every=0", "matchmaking.hall_of_fame_share=0.5"],
            "matchmaking.hall_of_fame_share: 0.5 needs past members, but evolution.snapshot_every "
            "is 0 (never snapshot)",
        ),
        (["steps=true"], "steps: must be a number, not true [preset 'surrogate']"),
        (
            ["population.rank=false"],
            "population.rank: must be a number, not false [preset 'surrogate']",
        ),
    ],
)
def test_bad_parameters_and_unread_keys_exit_2_before_anything_runs(tmp_path, overrides, line):
    args = ["surrogate"]
    for item in overrides:
        args += ["--set", item]
    assert _bad_run(tmp_path, args) == line


def test_code_environments_reject_what_they_do_not_read(tmp_path):
    assert _bad_run(tmp_path, ["tiny", "--set", "population.solo=2"]) == (
        "population.solo: not read by environment 'coevolution'"
    )
    assert _bad_run(tmp_path, ["tiny-selfplay", "--set", "matchmaking.floor=0.1"]) == (
        "matchmaking: not read by environment 'selfplay' (set: floor)"
    )


def test_every_preset_passes_and_defaults_nobody_set_are_not_rejected():
    for name in PRESETS:
        check_config(load_config(name))
    # The learner's defaults, spelt out, are not a setting the surrogate would drop.
    cfg = load_config(
        "surrogate", ["learner.lr=1e-4", "model.name=tiny-coder", "model.cpu_threads=2"]
    )
    assert "learner.lr" not in set_keys(cfg)
    check_config(cfg)
    check_config(load_config("game-ladder", ["environment.options={game: focusing, dims: 3}"]))


def test_a_plugin_with_a_typed_signature_is_checked_too(tmp_path):
    from redqueen.evo.selection import SELECTIONS

    plugin = tmp_path / "warm_selection.py"
    plugin.write_text(
        "from typing import Annotated\n"
        "from pydantic import Field\n"
        "from redqueen.evo.selection import SELECTIONS\n\n\n"
        "@SELECTIONS.register('warm_test')\n"
        "def warm_test(individuals, k, *, rng, temperature: Annotated[float, Field(gt=0)] = 1.0):\n"
        "    '''The first k members, cycling.'''\n"
        "    return [i % len(individuals) for i in range(k)]\n"
    )
    try:
        line = _bad_run(
            tmp_path,
            [
                "surrogate",
                "--plugin",
                str(plugin),
                "--set",
                "evolution.selection=warm_test",
                "--set",
                "evolution.selection_params={temperature: 0}",
            ],
        )
        assert (
            line == "evolution.selection_params.temperature: input should be greater than 0 (got 0)"
        )
        listed = runner.invoke(app, ["list", "--plugin", str(plugin)])
        assert "temperature: float = 1.0 (> 0)" in listed.stdout
    finally:
        SELECTIONS.unregister("warm_test")
        sys.modules.pop("redqueen_plugin_warm_selection", None)


from redqueen.settings import LearnerSettings, PopulationSettings  # noqa: E402 (read by Toy below)


def test_a_plugin_environment_reads_what_its_constructor_takes():
    from redqueen.environments.base import ENVIRONMENTS, Environment

    class Toy(Environment):  # its annotations name settings imported at the module's top
        roles = ("teacher", "student")

        def __init__(
            self, *, population: PopulationSettings | None = None, seed: int = 0
        ) -> None: ...
        def step(self): ...
        def state_dict(self): ...
        def load_state_dict(self, state): ...

    class ToyWithLearner(Toy):
        def __init__(
            self,
            *,
            population: PopulationSettings | None = None,
            learner: LearnerSettings | None = None,
        ) -> None: ...

    ENVIRONMENTS.register("toy_test")(Toy)
    ENVIRONMENTS.register("toy_learner_test")(ToyWithLearner)
    try:
        check_config(
            load_config({"environment": {"name": "toy_test"}, "population": {"teachers": 3}})
        )
        for section, value, where in (
            ("learner", {"lr": 0.5}, "learner"),
            ("matchmaking", {"floor": 0.5}, "matchmaking"),
            ("evolution", {"grace": 2}, "evolution"),
            ("population", {"solo": 2}, "population.solo"),
        ):
            cfg = load_config({"environment": {"name": "toy_test"}, section: value})
            with pytest.raises(ConfigError, match=rf"^{where}: not read by environment 'toy_test'"):
                check_config(cfg)
        check_config(
            load_config({"environment": {"name": "toy_learner_test"}, "learner": {"lr": 0.5}})
        )
    finally:
        ENVIRONMENTS.unregister("toy_test")
        ENVIRONMENTS.unregister("toy_learner_test")


def test_every_section_type_names_a_section_of_the_configuration():
    from redqueen.experiments._config_checks import _leaves
    from redqueen.experiments._wiring import SECTIONS, _section
    from redqueen.experiments.config import ExperimentConfig

    keys = [key for key, _ in _leaves(ExperimentConfig())]
    cfg = load_config("surrogate")
    for kind, path in SECTIONS.items():
        assert any(k.startswith(f"{path}.") for k in keys), (kind, path)
        assert isinstance(_section(cfg, path), kind), (kind, path)  # the section is that object


def test_sweep_and_resume_check_too(tmp_path):
    from redqueen.experiments.sweep import plan_trials

    with pytest.raises(ConfigError, match=r"^evolution.selection_params.tournsize: "):
        plan_trials(
            "surrogate", {"evolution.selection_params": ["{tournsize: 0}"]}, 1, tmp_path / "sweep"
        )
    out = tmp_path / "run"
    done = runner.invoke(
        app,
        [
            "run",
            "surrogate",
            "--out",
            str(out),
            "--no-plots",
            "--set",
            "steps=1",
            "--set",
            "population.teachers=2",
            "--set",
            "population.students=2",
        ],
    )
    assert done.exit_code == 0, done.output
    config = yaml.safe_load((out / "config.yaml").read_text())
    config["learner"]["lr"] = 0.5
    (out / "config.yaml").write_text(yaml.safe_dump(config))
    result = runner.invoke(app, ["resume", str(out), "--no-plots"])
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr.strip() == "error: learner: not read by environment 'surrogate' (set: lr)"


def test_list_shows_each_entry_parameters_as_plain_text():
    listed = runner.invoke(app, ["list"])
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    below = {
        line.split()[0]: lines[i + 1].strip()
        for i, line in enumerate(lines[:-1])
        if line.startswith("  ") and not line.startswith("    ")
    }
    assert (
        below["gaussian"]
        == "fraction: float = 0.25 (> 0, <= 1), sigma: float = 0.1 (>= 0); needs 1 parent"
    )
    assert below["task_vector"].endswith("needs 2 parents")
    assert below["nsga3"] == "n_partitions: int = 12 (>= 1); needs >= 2 objectives"
    assert "``" not in listed.stdout and ":class:" not in listed.stdout
