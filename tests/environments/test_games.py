"""Surrogate games: registry, rules, the games environment end to end, exact resume, config errors."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from redqueen._registry import ALL_REGISTRIES
from redqueen.environments import ENVIRONMENTS
from redqueen.environments.games import GAMES, GamesEnv
from redqueen.environments.games._options import GamesOptions
from redqueen.evo import ReplacementConfig
from redqueen.experiments.build import build_environment
from redqueen.experiments.cli import EXIT_BAD_INPUT, app
from redqueen.experiments.config import PRESETS, ConfigError, load_config
from redqueen.settings import MatchmakingSettings

NAMES = ("compare_on_one", "focusing", "intransitive", "ladder", "ladder_learnability")
REPLACEMENT = ReplacementConfig(
    replace_every=2,
    snapshot_every=1,
    hall_of_fame=4,
    selection="tournament",
    operators={"svd_merge": 1.0, "gaussian": 1.0},
)
SMALL = dict(
    population=GamesEnv.default_population.updated(teachers=3, students=3),
    match=GamesEnv.default_match.updated(tasks_per_teacher=4, answers_per_task=3),
    replacement=REPLACEMENT,
    matchmaking=MatchmakingSettings(hall_of_fame_share=0.5),
)
MEASURES = (
    "objective_skill",
    "objective_difficulty",
    "disengagement",
    "cycling",
    "focusing",
    "collapse",
    "solve_rate",
    "teacher_reward",
    "informative_share",
    "best_rating",
)


def test_registry_lists_every_game_with_a_preset():
    assert set(NAMES) <= set(GAMES)
    assert ALL_REGISTRIES["game"] is GAMES and ENVIRONMENTS["games"] is GamesEnv
    for name in NAMES:
        assert GAMES.describe(name)
        assert f"game-{name.replace('_', '-')}" in PRESETS
    listing = CliRunner().invoke(app, ["list"])
    assert listing.exit_code == 0 and "game" in listing.stdout
    assert all(name in listing.stdout for name in (*NAMES, "game-intransitive", "game-ladder"))
    assert GAMES["ladder"].parameters() == {"coupling": 0.0}
    assert GAMES["intransitive"].parameters() == {"coupling": 0.0, "dims": 2}


def test_numbers_rules_compare_on_the_right_dimension():
    task = torch.tensor([[1.0, 3.0]])
    answer = torch.tensor(
        [[[2.0, 2.9]]]
    )  # closest on dim 1 (lower), most different on dim 0 (higher)
    gen = torch.Generator()
    assert not bool(GAMES["intransitive"]().success(answer, task, gen)[0, 0])
    assert bool(GAMES["focusing"]().success(answer, task, gen)[0, 0])
    assert not bool(
        GAMES["compare_on_one"]().success(answer, task, gen)[0, 0]
    )  # task's largest: dim 1
    # intransitive: a cycle of three points (each beats the next on its closest dimension)
    a, b, c = torch.tensor([[0.0, 3.0]]), torch.tensor([[1.0, 0.0]]), torch.tensor([[3.0, 1.0]])
    game = GAMES["intransitive"]()
    wins = [float(game.score(x, y)[0, 0]) for x, y in ((a, b), (b, c), (c, a))]
    assert wins == [1.0, 1.0, 1.0] or wins == [0.0, 0.0, 0.0]
    ladder = GAMES["ladder"]()
    assert float(ladder.score(torch.tensor([[1.0]]), torch.tensor([[1.0]]))[0, 0]) == pytest.approx(
        0.5
    )
    with pytest.raises(ValueError, match="coupling"):
        GAMES["ladder"](coupling=1.5)


@pytest.mark.parametrize("name", NAMES)
def test_each_game_runs_and_resumes_exactly(name):
    options = GamesOptions(game=name)
    a, b = GamesEnv(options=options, seed=3, **SMALL), GamesEnv(options=options, seed=3, **SMALL)
    for _ in range(4):
        ra, rb = a.step(), b.step()
        assert {k: v for k, v in ra.metrics.items() if k != "seconds"} == {
            k: v for k, v in rb.metrics.items() if k != "seconds"
        }
    assert all(np.isfinite(ra.metrics[k]) for k in MEASURES)
    assert len(a.evolution.hall) == 4 and ra.metrics["cycling"] >= 0.0
    assert any(r.births for r in (ra,)) or len(a.lineage) > 6
    buffer = io.BytesIO()
    torch.save(a.state_dict(), buffer)
    buffer.seek(0)
    c = GamesEnv(options=options, seed=3, **SMALL)
    c.load_state_dict(torch.load(buffer, weights_only=False))
    for _ in range(3):
        ra, rc = a.step(), c.step()
        assert {k: v for k, v in ra.metrics.items() if k != "seconds"} == {
            k: v for k, v in rc.metrics.items() if k != "seconds"
        }
        assert ra.tasks == rc.tasks and ra.births == rc.births and ra.deaths == rc.deaths
    for x, y in zip(a.population.living, c.population.living, strict=True):
        assert x.id == y.id and all(
            torch.equal(p, q)
            for (_, (p, _)), (_, (q, _)) in zip(x.genome.items(), y.genome.items(), strict=True)
        )
    with pytest.raises(ValueError, match="checkpoint"):
        GamesEnv(options=options, seed=4, **SMALL).load_state_dict(a.state_dict())


def test_the_ladder_learns_from_samples_and_coupling_changes_the_teachers_aim():
    runs = {}
    for coupling in (0.0, 1.0):
        env = GamesEnv(
            options=GamesOptions.model_validate({"game": "ladder", "coupling": coupling}),
            seed=0,
            replacement=ReplacementConfig(replace_every=0),
        )
        first = env.step().metrics
        for _ in range(14):
            last = env.step().metrics
        runs[coupling] = (first, last)
    # adversarial teachers pose harder tasks than self-play-like ones
    assert runs[0.0][1]["objective_difficulty"] > runs[1.0][1]["objective_difficulty"]
    assert runs[1.0][1]["objective_difficulty"] < runs[1.0][0]["objective_difficulty"]


def test_the_played_game_is_the_rule_blurred_by_the_play_noise():
    a, b, c = torch.tensor([[0.0, 3.0]]), torch.tensor([[1.0, 0.0]]), torch.tensor([[3.0, 1.0]])
    points = torch.cat([a, b, c])
    game = GAMES["intransitive"]()
    assert torch.equal(game.played_score(points, points, noise=0.0), game.score(points, points))
    sharp = game.played_score(points, points, noise=0.01, draws=256, seed=1)
    off = ~torch.eye(3, dtype=torch.bool)  # a point against itself is a coin in either game
    assert torch.equal(sharp[off], game.score(points, points)[off])  # the cycle survives
    blurred = game.played_score(points, points, noise=100.0, draws=4096, seed=1)
    assert torch.allclose(blurred, torch.full((3, 3), 0.5), atol=0.05)  # noise >> spread: a coin
    assert torch.equal(blurred, game.played_score(points, points, noise=100.0, draws=4096, seed=1))
    ladder = GAMES["ladder"]()
    played = ladder.played_score(
        torch.tensor([[0.0]]), torch.tensor([[0.0]]), noise=0.5, draws=4096
    )
    assert float(played[0, 0]) == pytest.approx(0.5, abs=0.03)


def test_the_learnability_ladder_pays_for_the_students_signal_not_for_a_direction():
    game = GAMES["ladder_learnability"]()
    pays = [game.teacher_pay(1.0 - rho, rho, 1.5 * rho - 0.5) for rho in (0.25, 0.5, 0.75)]
    assert pays == [0.75, 1.0, 0.75]  # rises below 1/2, falls above, whatever the student
    plain = GAMES["ladder"](coupling=0.3)
    assert plain.teacher_pay(0.75, 0.25, -0.125) > plain.teacher_pay(0.25, 0.75, 0.625)
    assert GAMES["ladder"](coupling=0.45).teacher_pay(0.75, 0.25, -0.125) < GAMES["ladder"](
        coupling=0.45
    ).teacher_pay(0.25, 0.75, 0.625)  # the plain ladder's direction flips at coupling 0.4


def test_presets_run_and_bad_settings_are_one_line_config_errors(tmp_path):
    for name in NAMES:
        env = build_environment(load_config(f"game-{name.replace('_', '-')}", ["steps=1"]))
        assert isinstance(env, GamesEnv) and env.game_name == name
        assert set(MEASURES) <= set(env.step().metrics)
    env = build_environment(load_config("game-ladder", ["environment.options.coupling=0.7"]))
    assert env.game.coupling == 0.7
    for override, field in (
        ("environment.options.game=chess", "environment.options.game"),
        ("environment.options.coupling=2", "environment.options.coupling"),
        ("environment.options.dims=3", "environment.options.dims"),
        ("environment.options.exploration=0", "environment.options.exploration"),
    ):
        with pytest.raises(ConfigError) as info:
            build_environment(load_config("game-ladder", [override]))
        assert str(info.value).startswith(field) and "\n" not in str(info.value)
    bad = CliRunner().invoke(
        app,
        [
            "run",
            "game-ladder",
            "--out",
            str(tmp_path / "run"),
            "--set",
            "environment.options.game=chess",
        ],
    )
    assert bad.exit_code == EXIT_BAD_INPUT
    assert bad.output.strip().count("\n") == 0 and "environment.options.game" in bad.output


def test_wrong_argument_types_are_named_and_any_integer_is_a_seed():
    with pytest.raises(
        TypeError, match=r"^GamesEnv: options must be a GamesOptions or None, got dict$"
    ):
        GamesEnv(options={"game": "ladder"})
    with pytest.raises(
        TypeError, match=r"^GamesEnv: population must be a PopulationSettings or None, got dict$"
    ):
        GamesEnv(population={"teachers": 1})
    with pytest.raises(TypeError, match=r"^GamesEnv: seed must be an integer, got str$"):
        GamesEnv(seed="1")
    negative, wrapped = GamesEnv(seed=-2, **SMALL), GamesEnv(seed=2**64 - 2, **SMALL)
    assert negative.step().metrics["objective_skill"] == wrapped.step().metrics["objective_skill"]
    points = torch.zeros(2, negative.game.dim)
    torch.testing.assert_close(
        negative.game.played_score(points, points, noise=0.5, seed=-1),
        negative.game.played_score(points, points, noise=0.5, seed=2**64 - 1),
    )
