"""tiny-coder: the procedural corpus and pretraining pipeline of the shipped base model.

- :class:`~redqueen.tinycoder.programs.ProgramGenerator`: typed random Python programs
  over ints, strings, lists and dicts, with a difficulty ``level``.
- :mod:`~redqueen.tinycoder.corpus`: ``build_corpus`` (sandboxed gold outputs),
  ``render_documents`` (in the formats of :mod:`redqueen.verifiers.formats`), save/load.
- :func:`~redqueen.tinycoder.tokenizer.train_tokenizer`: byte-level BPE.
- :func:`~redqueen.tinycoder.model.tiny_coder_config`: the small Llama configuration.
- :mod:`~redqueen.tinycoder.rates`: starting valid-proposal shares and solve rates.
- ``python -m redqueen.tinycoder.pretrain --out DIR``: the whole pipeline.

Submodules are imported on demand: the corpus and rates need the sandboxed executor, the
tokenizer needs ``tokenizers``, and a plain ``import redqueen.engine`` should need neither.
"""

from __future__ import annotations

from redqueen.tinycoder.model import tiny_coder_config
from redqueen.tinycoder.programs import MAX_LEVEL, GeneratedProgram, ProgramGenerator

__all__ = ["MAX_LEVEL", "GeneratedProgram", "ProgramGenerator", "tiny_coder_config"]
