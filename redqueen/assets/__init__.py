"""Files shipped inside the package: the base models ``tiny-coder`` (the default) and others.

:func:`shipped_model_path` gives a shipped model's folder, which
``AutoModelForCausalLM.from_pretrained`` and ``AutoTokenizer.from_pretrained`` load offline, so
CI machines and air-gapped clusters need no model hub; :func:`resolve_model` turns a shipped
name into that folder and leaves any other id or path alone. Each folder's README.md is the
model card (corpus, training run, starting rates).
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "DEFAULT_MODEL",
    "resolve_model",
    "shipped_model_path",
    "shipped_models",
    "tiny_coder_path",
]

#: The shipped model a host loads when it is given none.
DEFAULT_MODEL = "tiny-coder"
_HERE = Path(__file__).resolve().parent


def shipped_models() -> tuple[str, ...]:
    """Names of the model folders shipped in this package (each has a ``config.json``)."""
    return tuple(sorted(p.parent.name for p in _HERE.glob("*/config.json")))


def shipped_model_path(name: str = DEFAULT_MODEL) -> Path:
    """Path of the shipped model folder ``name``.

    Raises:
        FileNotFoundError: If no such model ships (the shipped names are listed), or the
            package was installed without its model files.
    """
    path = _HERE / name
    if "/" in name or not (path / "config.json").is_file():
        shipped = ", ".join(shipped_models()) or "none"
        raise FileNotFoundError(
            f"redqueen.assets: no shipped model {name!r} in {_HERE} (shipped: {shipped}); "
            "reinstall redqueen or rebuild it with python -m redqueen.tinycoder.pretrain"
        )
    return path


def resolve_model(model: str | Path | None) -> str | Path:
    """A loadable model: ``None`` is the default shipped model, a shipped name its folder,
    anything else (a Hugging Face id, a local path) is returned unchanged."""
    if model is None:
        return shipped_model_path(DEFAULT_MODEL)
    if isinstance(model, str) and model in shipped_models():
        return shipped_model_path(model)
    return model


def tiny_coder_path() -> Path:
    """Path of the shipped ``tiny-coder`` model folder (:func:`shipped_model_path`).

    Raises:
        FileNotFoundError: If the package was installed without its model files.
    """
    return shipped_model_path("tiny-coder")
