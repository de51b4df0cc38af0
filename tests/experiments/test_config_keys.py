"""The configuration reference: every leaf key of ``ExperimentConfig()`` with its default and a
meaning read from its settings object's docstring; ``redqueen config keys`` prints it."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from pydantic import BaseModel

from redqueen.experiments._config_keys import (
    attribute_docs,
    config_keys,
    keys_markdown,
    keys_text,
)
from redqueen.experiments.cli import main
from redqueen.experiments.config import ExperimentConfig, load_config


def leaves(model: BaseModel, prefix: str = "") -> dict[str, object]:
    """Dotted leaf key -> default (as plain data), walking into every settings object."""
    found: dict[str, object] = {}
    dumped = model.model_dump(mode="json")
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            found.update(leaves(value, f"{prefix}{name}."))
        else:
            found[f"{prefix}{name}"] = dumped[name]
    return found


def test_every_leaf_key_has_its_default_and_a_meaning():
    expected = leaves(ExperimentConfig())
    keys = {item.key: item for item in config_keys()}
    assert list(keys) == list(expected)  # the models' own order
    for key, default in expected.items():
        item = keys[key]
        assert yaml.safe_load(item.default) == default, key
        assert item.meaning.strip(), f"{key}: no meaning in the Attributes: of {item.section}"
        assert item.type, key


def test_types_and_ranges_come_from_the_fields():
    keys = {item.key: item for item in config_keys()}
    assert keys["learner.lr"].type == "float"
    assert keys["learner.lr"].range == ">= 0, <= 10"
    assert keys["sampling.top_p"].range == "> 0, <= 1"
    assert keys["environment.executor.workers"].type == "int | None"
    assert keys["objectives.teacher"].range == "length >= 1"
    assert keys["evolution.selection"].section == "ReplacementConfig"
    assert keys["environment.tasks_per_teacher"].section == "EnvironmentConfig"


def test_defaults_follow_the_config_given():
    config = load_config("surrogate", ["evolution.cull_fraction=0.5", "model.device=cuda:1"])
    keys = {item.key: item for item in config_keys(config)}
    assert keys["evolution.cull_fraction"].default == "0.5"
    assert keys["model.device"].default == "cuda:1"
    assert keys["population.teachers"].default == "8"  # the preset's, not the model's 4


def test_attribute_docs_parses_continuations_and_prefers_the_subclass():
    class Base(BaseModel):
        """A base.

        Attributes:
            size: How many,
                over two lines.
            name (str): A name.

        Raises:
            ValueError: Never.
        """

    class Child(Base):
        """A child.

        Attributes:
            name: The child's name.
        """

    docs = attribute_docs(Child)
    assert docs == {"name": "The child's name.", "size": "How many, over two lines."}


def test_text_is_one_key_a_line_and_markdown_a_table_per_section():
    keys = config_keys()
    lines = keys_text(keys).splitlines()
    assert len(lines) == len(keys)
    assert lines[0].startswith("steps: int = 20 (>= 1, <= 100000000)  Steps the run takes")
    assert any(line.startswith("evolution.operators: dict[str, float] = {svd_merge: 0.5, gaussian: 0.5}")
               for line in lines)
    markdown = keys_markdown(keys)
    assert "## `evolution:` (ReplacementConfig)" in markdown
    assert "| `evolution.cull_fraction` | `float` | `0.25` |" in markdown
    for name in ExperimentConfig.model_fields:
        if isinstance(getattr(ExperimentConfig(), name), BaseModel):
            assert f"## `{name}:`" in markdown


def test_cli_config_keys(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["config", "keys"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "learner.lr: float = 0.0001 (>= 0, <= 10)  AdamW learning rate" in out
    with pytest.raises(SystemExit):
        main(["config", "keys", "--markdown"])
    assert "| key | type | default | range | meaning |" in capsys.readouterr().out


def test_generating_the_reference_imports_no_torch():
    code = (
        "import sys\n"
        "from redqueen.experiments._config_keys import config_keys, keys_markdown, keys_text\n"
        "keys = config_keys(); keys_text(keys); keys_markdown(keys)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
