"""Configuration schema, presets, overrides and the errors a user sees."""

from __future__ import annotations

import pytest
import yaml

from redqueen.experiments.config import (
    PRESETS,
    ConfigError,
    ExperimentConfig,
    apply_overrides,
    load_config,
)

REQUIRED_PRESETS = {
    "tiny",
    "tiny-selfplay",
    "tiny-nsga2",
    "tiny-novelty",
    "surrogate",
    "qwen2.5-coder-7b",
}


def test_every_required_preset_ships_and_validates():
    assert REQUIRED_PRESETS <= set(PRESETS)
    for name in PRESETS:
        cfg = load_config(name)
        assert isinstance(cfg, ExperimentConfig)
        assert PRESETS.describe(name), f"preset {name} has no description"


def test_tiny_preset_is_the_small_co_evolution_demo():
    cfg = load_config("tiny")
    assert cfg.model.name == "tiny-coder"
    assert (cfg.population.teachers, cfg.population.students) == (4, 4)
    assert cfg.checkpoint_every == 1
    assert cfg.environment.name == "coevolution"


def test_paper_preset_settings():
    cfg = load_config("qwen2.5-coder-7b")
    assert cfg.model.device == "cuda" and cfg.model.dtype == "bfloat16"
    assert cfg.population.rank == 32
    assert (cfg.population.teachers, cfg.population.students) == (4, 4)
    assert cfg.evolution.ranking == "rating_lcb"


def test_base_preset_is_merged_recursively():
    selfplay, tiny = load_config("tiny-selfplay"), load_config("tiny")
    assert selfplay.environment.name == "selfplay"
    # Inherited, not restated: the per-adapter budget matches the co-evolution demo.
    assert selfplay.environment.tasks_per_teacher == tiny.environment.tasks_per_teacher
    assert selfplay.environment.answers_per_task == tiny.environment.answers_per_task
    assert selfplay.model == tiny.model
    nsga2 = load_config("tiny-nsga2")
    assert len(nsga2.objectives.teacher) > 1 and nsga2.evolution.selection == "nsga2"


def test_overrides_parse_yaml_scalars_and_collections():
    cfg = load_config(
        "tiny",
        [
            "steps=3",
            "learner.lr=3e-5",
            "logging.wandb=true",
            "model.dtype=null",
            "evolution.operators={svd_merge: 1.0}",
            "environment.task_types=[code_o]",
            "evolution.selection_params.tournsize=3",
        ],
    )
    assert cfg.steps == 3 and cfg.learner.lr == pytest.approx(3e-5)
    assert cfg.logging.wandb is True and cfg.model.dtype is None
    assert cfg.evolution.operators == {"svd_merge": 1.0}
    assert cfg.environment.task_types == ("code_o",)
    assert cfg.evolution.selection_params == {"tournsize": 3}


def test_learning_rate_zero_is_accepted_for_a_control_run():
    cfg = load_config("tiny", ["learner.lr=0", "learner.epochs=3", "learner.minibatches=2"])
    assert cfg.learner.lr == 0.0 and (cfg.learner.epochs, cfg.learner.minibatches) == (3, 2)


def test_micro_batch_size_reaches_the_learner_and_the_7b_preset_fits_80gb():
    from redqueen.environments import CoevolutionEnv
    from redqueen.experiments._wiring import arguments

    cfg = load_config("tiny", ["learner.micro_batch_size=3"])
    assert arguments(CoevolutionEnv, cfg)["learner"].micro_batch_size == 3
    assert load_config("tiny").learner.micro_batch_size == 16
    # docs/memory-plan.md: micro-batch 2 is the largest that fits the 7B on one 80 GB GPU.
    assert load_config("qwen2.5-coder-7b").learner.micro_batch_size == 2
    with pytest.raises(ConfigError, match="micro_batch_size"):
        load_config("tiny", ["learner.micro_batch_size=0"])


def test_overrides_do_not_mutate_their_input():
    data = {"environment": {"name": "coevolution"}}
    out = apply_overrides(data, ["environment.answers_per_task=2"])
    assert data == {"environment": {"name": "coevolution"}}
    assert out["environment"]["answers_per_task"] == 2


def test_yaml_dict_round_trips(tmp_path):
    cfg = load_config("tiny-nsga2", ["seed=7"])
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg.to_yaml_dict()))
    assert load_config(path) == cfg
    assert load_config(cfg.to_yaml_dict()) == cfg


def test_teacher_reward_variant_resolves_extreme():
    assert load_config("tiny").environment.teacher_reward.extreme == 0.0
    azr = load_config("tiny", ["environment.teacher_reward.variant=azr"])
    assert azr.environment.teacher_reward.extreme == -0.5
    assert azr.to_yaml_dict()["environment"]["teacher_reward"]["extreme"] == -0.5


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["bogus=1"], "bogus: unknown key"),
        (["environment.bogus=1"], "environment.bogus: unknown key"),
        (["environment.executor.cpus=1"], "environment.executor.cpus: unknown key"),
        (["steps=abc"], "steps: Input should be a valid integer"),
        (["evolution.cull_fraction=1.5"], "evolution.cull_fraction:"),
        (["population.rank=0"], "population.rank:"),
        (["environment.task_types=[code_x]"], "environment.task_types.0:"),
        (["evolution.operators.gaussian=-1"], "evolution.operators.gaussian: weight must be >= 0"),
        (
            ["evolution.operator_params.ties={k: 1}"],
            "evolution.operator_params.ties: not in operators",
        ),
        (["evolution.newborn=lucky"], "evolution.newborn:"),
        (["evolution.grace=-1"], "evolution.grace: must be >= 0"),
        (["evolution.snapshot_every=-2"], "evolution.snapshot_every: must be >= 0"),
        (["matchmaking.hall_of_fame_share=2"], "matchmaking.hall_of_fame_share:"),
        (["matchmaking.bogus=1"], "matchmaking.bogus: unknown key"),
        (["steps"], "expected dotted key=value"),
        (["steps.x=1"], "steps: not a section"),
        (["learner.lr=-1e-3"], "learner.lr:"),
        (["learner.epochs=0"], "learner.epochs:"),
    ],
)
def test_errors_are_one_line_naming_the_field(overrides, expected):
    with pytest.raises(ConfigError) as info:
        load_config("tiny", overrides)
    message = str(info.value)
    assert expected in message
    assert "\n" not in message


def test_one_replacement_schema():
    """The evolution section is the evolution core's ReplacementConfig itself, with its
    defaults: one schema for every environment."""
    from redqueen.evo import ReplacementConfig
    from redqueen.experiments.config import ExperimentConfig

    assert ExperimentConfig.model_fields["evolution"].annotation is ReplacementConfig
    assert ExperimentConfig().evolution == ReplacementConfig()
    built = load_config("tiny", ["evolution.newborn=parents", "evolution.grace=2"]).evolution
    assert built.newborn == "parents" and built.grace == 2 and built.replace_every == 3  # the preset's


def test_missing_preset_and_file(tmp_path):
    with pytest.raises(ConfigError, match="unknown preset 'nope'.*tiny"):
        load_config("nope")
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="not a file"):
        load_config(tmp_path)


def test_bad_yaml_files_name_the_file(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("steps: [1, 2\n")
    with pytest.raises(ConfigError, match="broken.yaml.*invalid YAML"):
        load_config(broken)
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="list.yaml.*mapping"):
        load_config(listing)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("base: tiny\nevolution:\n  elitism: many\n")
    with pytest.raises(ConfigError, match=r"evolution.elitism: .*wrong.yaml"):
        load_config(wrong)


def test_a_key_given_twice_is_refused_with_its_line(tmp_path):
    twice = tmp_path / "twice.yaml"
    twice.write_text("base: tiny\nlearner:\n  lr: 0.1\n  epochs: 2\n  lr: 0.2\n")
    with pytest.raises(ConfigError, match=r"twice.yaml: line 5 invalid YAML \(key 'lr' appears twice\)"):
        load_config(twice)


def test_user_file_can_start_from_a_preset(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("base: tiny\nsteps: 5\npopulation:\n  teachers: 2\n")
    cfg = load_config(path)
    assert cfg.steps == 5 and cfg.population.teachers == 2
    assert cfg.population.students == load_config("tiny").population.students


def test_config_is_immutable():
    cfg = load_config("tiny")
    with pytest.raises(ValueError):
        cfg.steps = 3  # type: ignore[misc]
