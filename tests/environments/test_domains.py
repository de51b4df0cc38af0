"""Task domains as plug-ins: the shipped arithmetic example plays the same game as the code
domain, in co-evolution and self-play, and its settings are checked when the config loads."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from redqueen.engine import Generation
from redqueen.environments import DOMAINS, GameSettings, TaskBuffer, TaskDomain, make_domain
from redqueen.environments._round import PlayedTask, grade, verify
from redqueen.experiments.cli import app, import_plugin
from redqueen.experiments.config import ConfigError, load_config
from redqueen.experiments.state_codec import decode_state, encode_state
from redqueen.fitness import StudentReward, TeacherReward

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "arithmetic_domain.py"
ARITH_TYPES = {"arith_value", "arith_missing"}
SMALL = [
    "steps=2",
    "environment.domain=arithmetic",
    "population.rank=4",
    "environment.tasks_per_teacher=2",
    "environment.propose_max_new_tokens=48",
    "environment.solve_max_new_tokens=16",
    "logging.tensorboard=false",
]
ARGS = ["--plugin", str(EXAMPLE), *(a for s in SMALL for a in ("--set", s))]
#: Population sizes per preset (each environment reads only its own roles' sizes).
SIZES = {
    "tiny": ["--set", "population.teachers=2", "--set", "population.students=2"],
    "tiny-selfplay": ["--set", "population.solo=2"],
}

cli = CliRunner()


@pytest.fixture(scope="module")
def arithmetic():
    import_plugin(str(EXAMPLE))
    return sys.modules["redqueen_plugin_arithmetic_domain"]


def _gen(text: str) -> Generation:
    return Generation(text=text, prompt_ids=[1], token_ids=[2], logprobs=[-0.1], finished=True)


def test_the_example_imports_no_private_module():
    tree = ast.parse(EXAMPLE.read_text())
    modules = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert any(m.startswith("redqueen") for m in modules)
    private = [m for m in modules if any(part.startswith("_") for part in m.split("."))]
    assert private == ["__future__"]


def test_both_domains_meet_the_protocol(arithmetic):
    assert {"code", "arithmetic"} <= set(DOMAINS)
    for name in ("code", "arithmetic"):
        assert isinstance(make_domain(name), TaskDomain)
    with pytest.raises(ValueError, match="not task types of the domain"):
        GameSettings(task_types=("code_o",)).for_domain(make_domain("arithmetic"))
    assert GameSettings().for_domain(make_domain("code")).task_types == (
        "code_o",
        "code_i",
        "code_f",
    )


def test_list_shows_the_plugin_domain():
    listed = cli.invoke(app, ["list", "--plugin", str(EXAMPLE)])
    assert listed.exit_code == 0, listed.output
    section = listed.stdout.split("domain:\n", 1)[1].split(":\n", 1)[0]
    assert "arithmetic" in section and "code" in section


def test_the_game_runs_on_the_arithmetic_domain(arithmetic):
    """Verify and grade through the domain: gold values are the domain's, rejections carry its
    reasons, valid tasks join the buffer and are measured, answers are judged."""
    domain = make_domain("arithmetic", {"max_operand": 20})
    buffer = TaskBuffer(capacity=8, seed=domain.seed_examples())
    texts = {
        "arith_value": [
            "<expr>3 * (4 - 1)</expr>\n</task>",
            "<expr>1 // 0</expr>",
            "no expression",
        ],
        "arith_missing": ["<expr>2 + 5</expr>", "<expr>30 + 1</expr>"],
    }
    played = [
        PlayedTask("t", "s", kind, _gen(text)) for kind, batch in texts.items() for text in batch
    ]
    verify(played, domain, None, buffer)
    assert [p.reason for p in played] == [
        None,
        "division_by_zero",
        "unparseable",
        None,
        "operand_too_large",
    ]
    assert played[0].task.value == 9 and played[0].measures == {"operators": 2.0, "depth": 3.0}
    assert played[3].task.shown == "2 + ?" and played[0].signature != played[3].signature
    assert [e.text for e in buffer] == ["1 + 2", "3 * (4 - 1)", "2 + 5"]
    played[0].answers = [_gen("9\n</answer>"), _gen("8"), _gen("nine")]
    played[3].answers = [_gen("5"), _gen("-5")]
    grade(played, domain, None, TeacherReward(), StudentReward())
    assert played[0].statuses == ["correct", "wrong", "unparseable"]
    assert played[3].statuses == ["correct", "wrong"] and played[3].teacher_reward == 0.5
    assert played[1].teacher_reward == TeacherReward().invalid
    played[0].base_solve_rate = 0.0
    assert domain.behaviour_cell(played[0]) == "arith_value/o2/d0/*-"


def test_arithmetic_examples_survive_a_checkpoint(arithmetic):
    domain = make_domain("arithmetic")
    buffer = TaskBuffer(
        capacity=4, seed=[*domain.seed_examples(), arithmetic.Expression("7 // 2", 3)]
    )
    restored = TaskBuffer(capacity=1, seed=domain.seed_examples())
    restored.load_state_dict(decode_state(*encode_state(buffer.state_dict())))
    assert list(restored) == list(buffer) and isinstance(restored.newest, arithmetic.Expression)


@pytest.mark.parametrize(
    ("override", "named"),
    [
        (
            "environment.domain_params={max_operandz: 3}",
            "environment.domain_params.max_operandz: unknown parameter (known: max_operand, max_operators)",
        ),
        (
            "environment.domain_params={max_operators: 99}",
            "environment.domain_params.max_operators: input should be less than or equal to 8 (got 99)",
        ),
        ("environment.domain=algebra", "environment.domain: unknown domain 'algebra'"),
        ("environment.task_types=[arith_value, code_o]", "environment.task_types.1: 'code_o'"),
    ],
)
def test_a_bad_domain_setting_is_one_line_and_leaves_no_run(tmp_path, override, named):
    out = tmp_path / "runs" / "bad"
    result = cli.invoke(app, ["run", "tiny", "--out", str(out), *ARGS, "--set", override])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], result.stderr
    assert not (tmp_path / "runs").exists()


def test_code_domain_params_are_checked_and_written_back():
    cfg = load_config("tiny", ["environment.domain_params={max_source_chars: 500}"])
    assert cfg.environment.domain == "code"
    assert cfg.environment.task_types == ("code_o", "code_i", "code_f")
    assert cfg.to_yaml_dict()["environment"]["domain_params"]["max_output_chars"] == 2000
    with pytest.raises(ConfigError, match="environment.domain_params.max_source_chars:"):
        load_config("tiny", ["environment.domain_params={max_source_chars: 0}"])


@pytest.mark.parametrize("preset", ["tiny", "tiny-selfplay"])
def test_two_steps_on_the_arithmetic_domain(tmp_path, arithmetic, preset):
    out = tmp_path / "run"
    result = cli.invoke(
        app, ["run", preset, "--out", str(out), "--no-plots", *ARGS, *SIZES[preset]]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert {row["step"] for row in rows} == {0, 1}
    assert {row["task_type"] for row in rows} == ARITH_TYPES
    assert all("operators" in row and "ast_nodes" not in row for row in rows)
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 2 and "valid_share/arith_missing" in metrics[-1]
    assert not any("operators" in row for row in metrics)  # summaries are domain/arithmetic/...
    assert "domain: arithmetic" in (out / "config.yaml").read_text()


def test_summary_measures_are_namespaced_by_domain(arithmetic):
    """A domain's summary measures enter ``metrics.jsonl`` as ``domain/<name>/<key>``, so a
    domain's ``depth`` or ``true_share`` never collides with a run column or another domain's."""
    from types import SimpleNamespace

    from redqueen.environments._round_env import RoundEnv

    domain = make_domain("arithmetic")
    played = [PlayedTask("t", "s", "arith_value", _gen(f"<expr>{e}</expr>")) for e in ("1 + 2 * 3", "4 - 1")]
    verify(played, domain, None, TaskBuffer(capacity=4, seed=domain.seed_examples()))
    env = SimpleNamespace(domain=domain, cells=set(), probe_tokens=0)
    metrics = RoundEnv._task_space_metrics(env, played)
    assert metrics["domain/arithmetic/operators"] == 1.5 and "operators" not in metrics


def test_a_domain_s_state_is_checkpointed_and_restored(arithmetic):
    """A domain with ``state_dict``/``load_state_dict`` gets its state saved in the environment's
    checkpoint state and handed back on resume; one without them adds nothing."""
    import random
    from types import SimpleNamespace

    import numpy as np

    from redqueen.environments import load_domain_state, save_domain_state
    from redqueen.environments._round_env import RoundEnv

    class Counting(arithmetic.ArithmeticDomain):
        def __init__(self, *, settings=None):
            super().__init__(settings=settings)
            self.seen = 0

        def state_dict(self):
            return {"seen": self.seen}

        def load_state_dict(self, state):
            self.seen = int(state["seen"])

    DOMAINS.register("counting_arith")(Counting)
    try:
        def env(domain):
            plain = SimpleNamespace(state_dict=lambda: {}, load_state_dict=lambda state: None)
            league = SimpleNamespace(
                state_dict=lambda: dict.fromkeys(("population", "lineage", "ratings", "evolution", "hv_reference"), {}),
                load_state_dict=lambda state: None,
                population=SimpleNamespace(living=[]),
            )
            adapters = SimpleNamespace(restore=lambda living: None)
            return SimpleNamespace(domain=domain, step_count=3, league=league, adapters=adapters, stats=plain,
                                   learner=plain, population=league.population, buffer=plain, signatures=set(),
                                   cells=set(), py_rng=random.Random(0), np_rng=np.random.default_rng(0))

        first = make_domain("counting_arith")
        first.seen = 7
        state = RoundEnv.state_dict(env(first))
        assert state["domain"] == {"seen": 7}
        state = decode_state(*encode_state(state))
        again = env(make_domain("counting_arith"))
        RoundEnv.load_state_dict(again, state)
        assert again.domain.seen == 7
        assert "domain" not in RoundEnv.state_dict(env(make_domain("arithmetic")))
        assert save_domain_state(make_domain("arithmetic")) is None
        with pytest.raises(ValueError, match="no load_state_dict"):
            load_domain_state(make_domain("arithmetic"), {"seen": 1})
    finally:
        DOMAINS.unregister("counting_arith")
