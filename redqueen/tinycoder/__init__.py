"""redqueen.tinycoder: the tooling behind the shipped base model (not part of the engine).

The engine loads a base model with ``AutoModelForCausalLM.from_pretrained`` and never imports
this package; it is what builds such a model from nothing, reproducibly.

- :class:`~redqueen.tinycoder.programs.ProgramGenerator`: typed random Python programs over
  ints, strings, lists and dicts, with a difficulty ``level`` (:data:`TRAIN_LEVELS` for
  pretraining, :data:`OOD_LEVEL` held out whole).
- :mod:`~redqueen.tinycoder.idioms`: ``IdiomGenerator``, short natural programs (one common
  idiom each, whole words, larger numbers), a second source beside the grammar.
- :mod:`~redqueen.tinycoder.handwritten`: the hand-written code_o set, held out of every corpus.
- :mod:`~redqueen.tinycoder.canonical`: ``canonical_key``, the dedupe key (names and formatting
  normalised).
- :mod:`~redqueen.tinycoder.corpus`: ``build_corpus`` (sandboxed gold outputs on all cores),
  ``render_documents`` (in the formats of :mod:`redqueen.verifiers.formats`), save/load.
- :mod:`~redqueen.tinycoder.splits`: training, held-out and out-of-distribution splits
  (``python -m redqueen.tinycoder.splits``).
- :mod:`~redqueen.tinycoder.census`: distinct programs and difficulty per level
  (``python -m redqueen.tinycoder.census``).
- :func:`~redqueen.tinycoder.tokenizer.train_tokenizer`: byte-level BPE.
- :mod:`~redqueen.tinycoder.model`: ``tiny_coder_config`` in named ``SIZES``, ``save_model``.
- :mod:`~redqueen.tinycoder.rates`: valid and valid-and-new proposal shares, solve rates,
  pass@k, per level, hand-written accuracy (``python -m redqueen.tinycoder.rates --model DIR``).
- :mod:`~redqueen.tinycoder.card`: the model card and its target checks.
- ``python -m redqueen.tinycoder.pretrain --out DIR [--profile ci|full]``: the whole pipeline.

Submodules are imported on demand: the corpus and rates need the sandboxed executor, the
tokenizer needs ``tokenizers``, and the generator alone needs neither.
"""

from __future__ import annotations

from redqueen.tinycoder.programs import (
    MAX_LEVEL,
    OOD_LEVEL,
    TRAIN_LEVELS,
    GeneratedProgram,
    ProgramGenerator,
)

__all__ = ["MAX_LEVEL", "OOD_LEVEL", "TRAIN_LEVELS", "GeneratedProgram", "ProgramGenerator"]
