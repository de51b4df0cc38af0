"""build_environment: settings reach the environment; misfits are one-line ConfigErrors."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from pydantic import Field

from redqueen.experiments._wiring import arguments, inputs, keys_read
from redqueen.experiments.build import build_environment
from redqueen.experiments.config import ConfigError, load_config
from redqueen.settings import GenomeSettings, PopulationSettings, ReplacementConfig, Settings


def test_unknown_environment_names_the_field():
    with pytest.raises(
        ConfigError, match=r"environment.name: unknown environment 'nope'.*coevolution"
    ):
        build_environment(load_config("tiny", ["environment.name=nope"]))


def test_code_environments_take_no_options():
    with pytest.raises(ConfigError, match="environment.options.foo"):
        build_environment(load_config("tiny", ["environment.options={foo: 1}"]))


def test_sections_reach_the_environment_whole():
    from redqueen.environments import CoevolutionEnv, make_domain
    from redqueen.settings import GameSettings, PopulationSettings, ReplacementConfig

    cfg = load_config(
        "tiny",
        [
            "environment.answers_per_task=7",
            "sampling.top_p=0.9",
            "evolution.cull_fraction=0.5",
            "evolution.elitism=2",
            "seed=5",
        ],
    )
    kwargs = arguments(CoevolutionEnv, cfg)
    assert kwargs["game"] is cfg.environment and kwargs["sampling"] is cfg.sampling
    assert isinstance(kwargs["game"], GameSettings) and kwargs["game"].answers_per_task == 7
    assert kwargs["game"].for_domain(make_domain("code")).task_types == ("code_o", "code_i", "code_f")
    with pytest.raises(ValueError, match=r"task_types: \['code_i', 'code_f'\] not task types"):
        kwargs["game"].for_domain(SimpleNamespace(task_types=("code_o",)))
    assert kwargs["sampling"].top_p == 0.9 and kwargs["seed"] == 5
    assert isinstance(kwargs["population"], PopulationSettings)
    replacement = kwargs["replacement"]
    assert isinstance(replacement, ReplacementConfig) and replacement is cfg.evolution
    assert replacement.cull_fraction == 0.5 and replacement.elitism == 2


class WidthOptions(Settings):
    """A plug-in's own settings."""

    width: int = Field(3, ge=1)


class Plugin:
    roles = ("teacher",)

    def __init__(
        self,
        *,
        genome: GenomeSettings | None = None,
        population: PopulationSettings | None = None,
        replacement: ReplacementConfig | None = None,
        options: WidthOptions | None = None,
        seed: int = 0,
        label: str = "free",
    ) -> None:
        self.args = (genome, population, replacement, options, seed, label)


def test_a_plugin_gets_the_sections_of_the_types_it_declares_and_its_options():
    cfg = load_config("tiny", ["population.teachers=3", "seed=9", "environment.options={width: 5}"])
    kwargs = arguments(Plugin, cfg)
    assert set(kwargs) == {"genome", "population", "replacement", "options", "seed"}
    assert kwargs["population"].teachers == 3 and kwargs["genome"].rank == cfg.population.rank
    assert kwargs["seed"] == 9 and kwargs["options"] == WidthOptions(width=5)
    assert kwargs["replacement"].replace_every == cfg.evolution.replace_every
    read = keys_read(Plugin)
    assert "population.teachers" in read and "population.students" not in read  # its roles only
    assert "environment.options" in read and "learner.lr" not in read
    for options, message in (
        ("{depth: 5}", "environment.options.depth: not a setting of environment 'coevolution' (accepted: width)"),
        ("{width: 0}", "environment.options.width: Input should be greater than or equal to 1"),
    ):
        bad = load_config("tiny", [f"environment.options={options}"])
        with pytest.raises(ConfigError, match=re.escape(message)):
            arguments(Plugin, bad)


def test_a_parameter_the_configuration_cannot_fill_must_have_a_default():
    class Needy:
        def __init__(self, *, width: int) -> None: ...

    with pytest.raises(TypeError, match="'width' is neither a settings object"):
        inputs(Needy)


def test_surrogate_preset_builds_with_its_settings_and_options():
    from redqueen.environments import SurrogateEnv

    cfg = load_config("surrogate", ["population.teachers=3", "environment.options={dim: 3}", "seed=4"])
    env = build_environment(cfg)
    try:
        assert isinstance(env, SurrogateEnv)
        assert len(env.population.members("teacher")) == 3 and env.dim == 3 and env.seed == 4
        assert env.n_tasks == cfg.environment.tasks_per_teacher
        record = env.step()
        assert {"solve_rate", "teacher_reward", "best_rating"} <= set(record.metrics)
    finally:
        env.close()
    with pytest.raises(ConfigError, match="environment.options.width: not a setting of environment 'surrogate'"):
        build_environment(load_config("surrogate", ["environment.options={width: 3}"]))


def test_missing_model_names_the_field(tmp_path):
    with pytest.raises(ConfigError, match="model.name: .*cannot load model"):
        build_environment(load_config("tiny", [f"model.name={tmp_path / 'missing-model'}"]))


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("evolution.selection=nope", "evolution.selection: unknown selection scheme 'nope'"),
        ("evolution.ranking=nope", "evolution.ranking: unknown selection scheme 'nope'"),
        ("evolution.operators={nope: 1.0}", "evolution.operators.nope: unknown operator"),
    ],
)
def test_unknown_evolution_names_fail_before_anything_loads(override, field):
    with pytest.raises(ConfigError, match=field):
        build_environment(load_config("tiny", [override, "model.name=/nonexistent"]))
