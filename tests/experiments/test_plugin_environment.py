"""The environment plug-in of ``examples/plugins/target_environment.py`` through ``redqueen run``:
``environment.options`` reaches it validated by its own options model, and a misspelt option
stops the command with exit status 2 and one line naming the key."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from redqueen.environments import ENVIRONMENTS
from redqueen.experiments.cli import EXIT_BAD_INPUT, app
from redqueen.genomes import LoRAGenome

PLUGINS = Path(__file__).resolve().parents[2] / "examples" / "plugins"
runner = CliRunner()


@pytest.fixture
def target_flags() -> Iterator[list[str]]:
    """The plug-in's configuration and flag; its registration is removed afterwards."""
    plugin = str(PLUGINS / "target_environment.py")
    yield [str(PLUGINS / "target.yaml"), "--no-plots", "--plugin", plugin]
    ENVIRONMENTS._items.pop("target", None)
    sys.modules.pop("redqueen_plugin_target_environment", None)


def test_options_from_the_command_line_reach_the_environment(tmp_path, target_flags):
    out = tmp_path / "run"
    options = ["--set", "steps=2", "--set", "environment.options.size=4"]
    result = runner.invoke(app, ["run", *target_flags, "--out", str(out), *options])
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["environment"]["options"] == {"size": 4}
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in metrics] == [0, 1]
    members = sorted((out / "population").iterdir())
    assert len(members) == 8  # population.solo of target.yaml
    assert all(LoRAGenome.from_peft(m).shapes == {"layer": (4, 4)} for m in members)


def test_a_misspelt_option_is_one_line_and_exit_2(tmp_path, target_flags):
    out = tmp_path / "run"
    misspelt = ["--set", "environment.options.sizee=4"]
    result = runner.invoke(app, ["run", *target_flags, "--out", str(out), *misspelt])
    assert result.exit_code == EXIT_BAD_INPUT == 2
    assert result.output.strip().count("\n") == 0 and "environment.options.sizee" in result.output
    assert not out.exists()
