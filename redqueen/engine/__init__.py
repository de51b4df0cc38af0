"""The engine: one base model serving many LoRA adapters, generation, and the learner.

- :class:`AdapterHost`: a frozen Hugging Face causal LM with many adapters addressed by id;
  adapters enter and leave as :class:`~redqueen.genomes.LoRAGenome`; mixed-adapter batched
  generation (per-row adapter, gathered factors, batched matmuls, KV cache).
- :class:`SamplingParams`, :class:`Generation`: what generation takes and returns.
- :data:`BACKENDS`, :class:`GenerationBackend`: decoders behind the host (``"hf"`` and
  ``"static"`` built in; ``"auto"``, the default, is ``"static"`` on CUDA and ``"hf"`` elsewhere).
- :class:`HostProtocol`, :class:`LearnerProtocol`, :class:`StepStats`: the seams an environment
  uses; :class:`AdapterHost` and :class:`Learner` implement them on one process,
  :mod:`redqueen.engine.distributed`'s ``RayAdapterHost`` and ``RayLearner`` on a cluster.
- :class:`Learner`, :class:`LearnerConfig`, :class:`LearnerStats`: REINFORCE++ with a
  PPO-clipped ratio, one adapter at a time, per-adapter AdamW state.
- :class:`Rollout`, :func:`whiten_advantages`, :func:`whiten_pooled`: the learner's input.
- :func:`exact_kl_from_base`: an adapter's exact full-vocabulary KL from the base model on a
  fixed reference set (to match a random-adapter null's size to a trained adapter's).
- :func:`tiny_coder_path`: folder of the shipped default base model (from :mod:`redqueen.assets`).
"""

from __future__ import annotations

from redqueen.assets import tiny_coder_path
from redqueen.engine._host import DEFAULT_TARGET_MODULES, AdapterHost
from redqueen.engine._learner import Learner, LearnerConfig, LearnerStats
from redqueen.engine._learner_probes import exact_kl_from_base
from redqueen.engine._lora_layer import MultiLoRALinear
from redqueen.engine._protocols import HostProtocol, LearnerProtocol, StepStats
from redqueen.engine._rollout import MIN_WHITEN_GROUP, Rollout, whiten_advantages, whiten_pooled
from redqueen.engine._sampling import Generation, SamplingParams
from redqueen.engine.backends import BACKENDS, GenerationBackend

__all__ = [
    "BACKENDS",
    "DEFAULT_TARGET_MODULES",
    "MIN_WHITEN_GROUP",
    "AdapterHost",
    "Generation",
    "GenerationBackend",
    "HostProtocol",
    "Learner",
    "LearnerConfig",
    "LearnerProtocol",
    "LearnerStats",
    "MultiLoRALinear",
    "Rollout",
    "SamplingParams",
    "StepStats",
    "exact_kl_from_base",
    "tiny_coder_path",
    "whiten_advantages",
    "whiten_pooled",
]
