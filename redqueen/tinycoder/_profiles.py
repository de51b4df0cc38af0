"""The profiles of a pretraining run (:data:`PROFILES`) and its documents and autocast choices.

A profile sets every default of :func:`redqueen.tinycoder.pretrain.parse_args`; a flag on the
command line overrides it.
"""

from __future__ import annotations

__all__ = ["AUTOCAST_MODES", "DOCUMENT_STYLES", "PROFILES"]

#: Defaults per profile: ``ci`` is a short CPU run on a few hundred programs (what the test
#: suite runs); ``full`` is the GPU run the shipped models are meant to come from.
PROFILES: dict[str, dict] = {
    "ci": {
        "train": 120,
        "heldout": 60,
        "ood": 12,
        "size": "micro",
        "device": "cpu",
        "epochs": 2,
        "max_steps": 40,
        "batch_size": 8,
        "seq_len": 128,
        "lr": 3e-3,
        "vocab_size": 320,
        "eval_n": 2,
        "samples": 2,
        "max_new_tokens": 16,
        "loss_batches": 2,
        "cpu_threads": 1,
        "rates_batch_size": 64,
    },
    "cpu": {
        "train": 150_000,
        "heldout": 2000,
        "ood": 1000,
        # Chosen by benchmarks/pretrain_scaling.py (plan: benchmarks/PRETRAIN_SCALING.md): at
        # equal training time on 2 cores `mini` had the lowest held-out loss at 3 and 8 minutes.
        "size": "mini",
        # About 120 minutes of training at mini's ~5,000 tokens/s on 2 cores (0.93 epochs).
        "tokens": 36_000_000,
        "device": "cpu",
        "epochs": 2,
        "batch_size": 8,
        "seq_len": 1024,
        "lr": 2e-3,
        "vocab_size": 2048,
        "eval_n": 128,
        "samples": 8,
        "max_steps": None,
        "max_new_tokens": 256,
        "loss_batches": 32,
        "cpu_threads": 2,
        "rates_batch_size": 64,
    },
    "full": {
        "train": 150_000,
        "heldout": 2000,
        "ood": 1000,
        "size": "small",
        "device": "cuda",
        "epochs": 2,
        "batch_size": 64,
        "seq_len": 1024,
        "lr": 1e-3,
        "vocab_size": 2048,
        "eval_n": 128,
        "samples": 8,
        "max_steps": None,
        "max_new_tokens": 320,
        "loss_batches": 32,
        "cpu_threads": 1,
        # The rates' generation runs 1,024 prompts a batch on a GPU: both splits of `small`
        # took 85 s on an H100 (benchmarks/README.md, "The base model sizes on a GPU").
        "rates_batch_size": 1024,
    },
}
#: How documents are rendered (see the module docstring).
DOCUMENT_STYLES: tuple[str, ...] = ("lean", "full")
#: Autocast choices: ``auto`` (bf16 on CUDA; on the CPU only where measured faster), on, off.
AUTOCAST_MODES: tuple[str, ...] = ("auto", "bf16", "off")
