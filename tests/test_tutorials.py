"""The tutorials of the documentation site run as written: each page's ```python blocks, in
order, in one fresh namespace, in an empty working directory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import redqueen.environments.surrogate  # noqa: F401  (registered before any snapshot below)
import redqueen.evo.operators  # noqa: F401  (their registries exist before any tutorial runs)
import redqueen.evo.selection  # noqa: F401
import redqueen.experiments.config  # noqa: F401
from redqueen._registry import ALL_REGISTRIES

TUTORIALS = sorted((Path(__file__).resolve().parents[1] / "docs" / "tutorials").glob("*.md"))
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(page: Path) -> list[str]:
    """The fenced ```python blocks of a Markdown page, in order."""
    return PYTHON_BLOCK.findall(page.read_text())


def test_there_are_three_tutorials_with_code():
    assert len(TUTORIALS) == 3
    assert all(python_blocks(page) for page in TUTORIALS)


@pytest.fixture
def registries_restored():
    """Whatever a tutorial registers (its plug-in) is removed afterwards; a registry first
    created while it ran holds built-in entries only and is left alone."""
    before = {kind: set(registry) for kind, registry in ALL_REGISTRIES.items()}
    yield
    for kind, names in before.items():
        registry = ALL_REGISTRIES[kind]
        for name in set(registry) - names:
            registry.unregister(name)


@pytest.mark.parametrize("page", TUTORIALS, ids=[page.stem for page in TUTORIALS])
def test_tutorial_runs(page, tmp_path, monkeypatch, registries_restored):
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"tutorial_{page.stem.replace('-', '_')}"}
    for index, block in enumerate(python_blocks(page), 1):
        code = compile(block, f"{page.name} (python block {index})", "exec")
        exec(code, namespace)
