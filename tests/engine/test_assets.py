"""Shipped base models are found by name; anything else passes through untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from redqueen.assets import (
    DEFAULT_MODEL,
    resolve_model,
    shipped_model_path,
    shipped_models,
    tiny_coder_path,
)


def test_shipped_names_resolve_to_their_folders() -> None:
    assert DEFAULT_MODEL in shipped_models()
    for name in shipped_models():
        path = shipped_model_path(name)
        assert (path / "config.json").is_file() and resolve_model(name) == path
    assert resolve_model(None) == shipped_model_path(DEFAULT_MODEL) == tiny_coder_path()


def test_other_models_pass_through_and_unknown_names_are_named() -> None:
    assert resolve_model("Qwen/Qwen2.5-0.5B") == "Qwen/Qwen2.5-0.5B"
    assert resolve_model(Path("some/folder")) == Path("some/folder")
    with pytest.raises(FileNotFoundError, match="shipped: .*tiny-coder"):
        shipped_model_path("no-such-coder")
    with pytest.raises(FileNotFoundError):
        shipped_model_path("../assets/tiny-coder")
