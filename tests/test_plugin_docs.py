"""The plug-in guide, ``docs/writing-a-plugin.md``: it shows every file of ``examples/plugins/``
(and the task-domain example ``examples/arithmetic_domain.py``)
as it is on disk, and every example works through the command line: ``redqueen list`` shows
it, and a short run (or an evaluation) uses it."""

from __future__ import annotations

import ast
import csv
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import yaml

from redqueen.engine import AdapterHost
from redqueen.genomes import LoRAGenome

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "writing-a-plugin.md"
EXAMPLES = ROOT / "examples" / "plugins"
BLOCK = re.compile(
    r"^File: `(?P<path>examples/[^`]+)`\n\n```(?:python|yaml)\n(?P<body>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)
#: Runs several ``redqueen`` command lines in one interpreter, one after the other, as the
#: console script would, so that redqueen is imported once; each command's stdout and exit
#: status go to ``<out>`` and ``<out minus suffix>.code``.
DRIVER = """
import contextlib, json, sys
from pathlib import Path
from redqueen.experiments.cli import main
for argv, out in json.loads(sys.argv[1]):
    code = 0
    with open(out, "w") as handle, contextlib.redirect_stdout(handle):
        try:
            main(argv)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
    Path(out).with_suffix(".code").write_text(str(code))
"""
#: The examples the one ``games`` run loads together, in the order given.
GAMES_RUN_PLUGINS = (
    "rescale_mutation.py",
    "blend_crossover.py",
    "linear_rank_selection.py",
    "small_update_objective.py",
    "threshold_game.py",
    "turnover_plot.py",
)
#: What each example registers, by the kind ``redqueen list`` prints it under.
REGISTERED = {
    "mutation": "rescale",
    "crossover": "random_blend",
    "selection": "linear_rank",
    "objective": "small_update",
    "environment": "target",
    "game": "threshold",
    "plot": "turnover",
    "benchmark": "tiny_functions",
}


def _example(name: str) -> str:
    return str(EXAMPLES / name)


def _plugin_flags(*names: str) -> list[str]:
    return [flag for name in names for flag in ("--plugin", _example(name))]


def _lineage(run: Path) -> list[dict[str, str]]:
    with open(run / "lineage.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def _eval_run(run: Path) -> Path:
    """A run directory with one tiny-coder member, as ``redqueen eval`` reads it."""
    (run / "population").mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump({"model": {"name": "tiny-coder"}}))
    genome = LoRAGenome.random(
        AdapterHost().module_shapes, rank=2, alpha=4.0, rng=torch.Generator().manual_seed(0)
    )
    genome.save_peft(run / "population" / "student-0000", base_model="tiny-coder")
    (run / "lineage.csv").write_text(
        "id,ancestor_list,origin_time,destruction_time,name,role,operator\n"
        "0,[none],0,,student-0000,student,\n"
    )
    return run


@dataclass(frozen=True)
class Outcome:
    """What one ``redqueen`` command left: its exit status, its output and the driver's stderr."""

    code: int
    stdout: str
    stderr: str

    def check(self) -> str:
        assert self.code == 0, self.stderr[-3000:]
        return self.stdout


@dataclass(frozen=True)
class Commands:
    """The folder the commands ran in (their run directories are under it) and their outcomes."""

    root: Path
    outcomes: dict[str, Outcome]

    def check(self, name: str) -> str:
        return self.outcomes[name].check()


@pytest.fixture(scope="module")
def commands(tmp_path_factory: pytest.TempPathFactory) -> Commands:
    """Every example through the command line: ``list`` with all of them, one ``games`` run
    using six, the environment's own run, and ``eval`` with the suite."""
    root = tmp_path_factory.mktemp("plugins")
    games = GAMES_RUN_PLUGINS
    calls = {
        "list": ["list", *_plugin_flags(*sorted(p.name for p in EXAMPLES.glob("*.py")))],
        "games": [
            "run", "game-ladder", "--out", str(root / "games"), *_plugin_flags(*games),
            "--set", "steps=3", "--set", "population.teachers=4", "--set", "population.students=4",
            "--set", "environment.options.game=threshold",
            "--set", "environment.options.margin=0.2",
            "--set", "evolution.replace_every=1", "--set", "evolution.snapshot_every=0",
            "--set", "evolution.operators={rescale: 1, random_blend: 1}",
            "--set", "evolution.operator_params={rescale: {sigma: 0.2}, random_blend: {low: 0.4}}",
            "--set", "evolution.selection=linear_rank",
            "--set", "evolution.selection_params={pressure: 2.0}",
            "--set", "objectives.student=[rating, small_update]",
        ],
        "target": [
            "run", _example("target.yaml"), "--out", str(root / "target"), "--no-plots",
            *_plugin_flags("target_environment.py"), "--set", "steps=4",
        ],
        "eval": [
            "eval", str(_eval_run(root / "eval")), *_plugin_flags("tiny_functions_suite.py"),
            "--benchmark", "tiny_functions",
        ],
    }  # fmt: skip
    plan = [[argv, str(root / f"{name}.out")] for name, argv in calls.items()]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(plan)],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    outcomes = {}
    for name, (_, out) in zip(calls, plan, strict=True):
        path = Path(out)
        code = (
            int(path.with_suffix(".code").read_text()) if path.with_suffix(".code").exists() else -1
        )
        stdout = path.read_text() if path.exists() else ""
        outcomes[name] = Outcome(code, stdout, done.stderr)
    return Commands(root, outcomes)


def test_page_shows_every_example_file_as_it_is_on_disk() -> None:
    blocks = {match["path"]: match["body"] for match in BLOCK.finditer(PAGE.read_text())}
    files = sorted(p.relative_to(ROOT).as_posix() for p in EXAMPLES.iterdir() if p.is_file())
    files = sorted([*files, "examples/arithmetic_domain.py"])  # the task-domain example
    assert sorted(blocks) == files
    for path, body in blocks.items():
        assert body == (ROOT / path).read_text(), f"{PAGE.name} shows an outdated {path}"


def test_examples_import_only_public_names() -> None:
    for file in EXAMPLES.glob("*.py"):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith("redqueen"):
                    assert not any(p.startswith("_") for p in name.split(".")), (file.name, name)


def test_list_shows_what_each_example_registers(commands: Commands) -> None:
    listed: dict[str, list[str]] = {}
    kind = ""
    for line in commands.check("list").splitlines():
        if line and not line.startswith(" "):
            kind = line.rstrip(":")
            listed[kind] = []
        elif line.strip():
            listed[kind].append(line.split()[0])
    for kind, name in REGISTERED.items():
        assert name in listed[kind], f"{name} is not listed under {kind}"


def test_operators_selection_objective_game_and_plot_in_one_games_run(
    commands: Commands,
) -> None:
    commands.check("games")
    run = commands.root / "games"
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["environment"]["options"] == {"game": "threshold", "margin": 0.2}
    assert config["evolution"]["selection"] == "linear_rank"
    recorded = json.loads((run / "plugins.json").read_text())
    assert [Path(p).name for p in recorded] == list(GAMES_RUN_PLUGINS)
    rows = _lineage(run)
    made = {row["operator"]: json.loads(row["operator_params"]) for row in rows if row["operator"]}
    assert made == {"rescale": {"sigma": 0.2}, "random_blend": {"low": 0.4, "high": 0.75}}  # defaults filled in
    students = [row for row in rows if row["role"] == "student" and row["fitness_1"]]
    assert students and all(float(row["fitness_1"]) < 0 for row in students)  # -||update||
    assert (run / "plots" / "turnover.png").stat().st_size > 0


def test_environment_runs_from_its_configuration(commands: Commands) -> None:
    commands.check("target")
    run = commands.root / "target"
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    best = [row["best_closeness"] for row in metrics]
    assert len(best) == 4 and best == sorted(best)  # the best member is never culled
    children = [row for row in _lineage(run) if row["operator"]]
    assert len(children) == 2 * 4  # a quarter of 8 members replaced after each step
    assert len(list((run / "population").iterdir())) == 8


def test_suite_scores_a_run(commands: Commands) -> None:
    assert "tiny_functions" in commands.check("eval")
    run = commands.root / "eval"
    report = json.loads((run / "eval_tiny_functions.json").read_text())
    assert report["problems"] == ["tiny/0", "tiny/1", "tiny/2"]
    assert {score["member"] for score in report["scores"]} == {"student-0000", "base"}


def test_suite_judges_answers_in_the_sandbox() -> None:
    from redqueen.experiments.evaluation import SUITES
    from redqueen.experiments.plugins import import_plugin
    from redqueen.verifiers import Executor

    import_plugin(_example("tiny_functions_suite.py"))
    suite = SUITES["tiny_functions"]()
    problems = suite.problems()
    assert [p.id for p in suite.problems(limit=2)] == ["tiny/0", "tiny/1"]
    right = ["x * 2\n", "items[-1]\nprint('cut here')", "text.upper()"]
    wrong = ["x + 2", "items[0]", "text.lower()"]
    with Executor(workers=1, timeout=suite.timeout) as executor:
        answers = [suite.completion(p, text) for p, text in zip(problems, right, strict=True)]
        assert suite.check(problems, answers, executor) == [True, True, True]
        assert suite.check(problems, wrong, executor) == [False, False, False]
