"""Files shipped inside the package: the default base model ``tiny-coder``.

:func:`tiny_coder_path` gives the folder, which ``AutoModelForCausalLM.from_pretrained`` and
``AutoTokenizer.from_pretrained`` load offline, so CI machines and air-gapped clusters need no
model hub. The folder's README.md is the model card (corpus, training run, starting rates).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["tiny_coder_path"]


def tiny_coder_path() -> Path:
    """Path of the shipped ``tiny-coder`` model folder.

    Raises:
        FileNotFoundError: If the package was installed without its model files.
    """
    path = Path(__file__).resolve().parent / "tiny-coder"
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"redqueen.assets: the tiny-coder model is missing from {path} (expected config.json); "
            "reinstall redqueen or rebuild it with python -m redqueen.tinycoder.pretrain"
        )
    return path
