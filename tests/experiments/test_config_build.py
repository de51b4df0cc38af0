"""build_environment: settings reach the environment; misfits are one-line ConfigErrors."""

from __future__ import annotations

import pytest

from redqueen.experiments._settings import constructor_settings
from redqueen.experiments.build import (
    build_environment,
    game_settings,
    replacement_config,
)
from redqueen.experiments.config import ConfigError, load_config


def test_unknown_environment_names_the_field():
    with pytest.raises(
        ConfigError, match=r"environment.name: unknown environment 'nope'.*coevolution"
    ):
        build_environment(load_config("tiny", ["environment.name=nope"]))


def test_code_environments_take_no_options():
    with pytest.raises(ConfigError, match="environment.options.foo"):
        build_environment(load_config("tiny", ["environment.options={foo: 1}"]))


def test_settings_are_carried_over():
    cfg = load_config(
        "tiny",
        [
            "environment.answers_per_task=7",
            "sampling.top_p=0.9",
            "evolution.cull_fraction=0.5",
            "evolution.elitism=2",
        ],
    )
    settings = game_settings(cfg)
    assert settings.answers_per_task == 7 and settings.top_p == 0.9
    assert settings.task_types == ("code_o", "code_i", "code_f")
    replacement = replacement_config(cfg)
    assert replacement.cull_fraction == 0.5 and replacement.elitism == 2
    assert dict(replacement.operators) == dict(cfg.evolution.operators)


def test_plugin_environments_get_the_standard_keywords_they_accept():
    class Plugin:
        def __init__(self, *, teachers: int, seed: int, replacement, width: int = 3) -> None:
            self.args = (teachers, seed, replacement, width)

    cfg = load_config("tiny", ["population.teachers=3", "seed=9", "environment.options={width: 5}"])
    kwargs = constructor_settings(Plugin, cfg)
    assert kwargs["teachers"] == 3 and kwargs["seed"] == 9 and kwargs["width"] == 5
    assert kwargs["replacement"].replace_every == cfg.evolution.replace_every
    bad = load_config("tiny", ["environment.options={depth: 5}"])
    with pytest.raises(
        ConfigError, match="environment.options.depth.*accepted: replacement, seed, teachers, width"
    ):
        constructor_settings(Plugin, bad)


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
