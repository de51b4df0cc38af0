"""The single-process host and learner implement the engine's public protocols."""

from __future__ import annotations

import torch

from redqueen.engine import (
    BACKENDS,
    AdapterHost,
    GenerationBackend,
    HostProtocol,
    Learner,
    LearnerProtocol,
    Rollout,
    SamplingParams,
    StepStats,
)
from redqueen.genomes import LoRAGenome


def test_host_learner_and_backend_meet_their_protocols(tiny_model_dir):
    host = AdapterHost(tiny_model_dir)
    assert isinstance(host, HostProtocol)
    assert isinstance(host.backend, GenerationBackend)
    assert all(isinstance(BACKENDS[name](host), GenerationBackend) for name in ("hf",))
    genome = LoRAGenome.random(
        host.module_shapes, rank=2, alpha=4.0, rng=torch.Generator().manual_seed(0),
        init="gaussian", std=0.05,
    )
    host.add_adapter("a", genome)
    learner = Learner(host)
    assert isinstance(learner, LearnerProtocol)
    gens = host.generate(["def f(x):"], ["a"], SamplingParams(max_new_tokens=4, seed=1, n=2))
    rollouts = [
        Rollout(prompt_ids=g.prompt_ids, token_ids=g.token_ids, logprobs=g.logprobs, advantage=a)
        for g, a in zip(gens, [1.0, -1.0], strict=True)
    ]
    stats = learner.step("a", rollouts)
    assert isinstance(stats, StepStats) and stats.n_tokens == sum(len(g.token_ids) for g in gens)


def test_protocols_refuse_what_lacks_their_methods():
    class HalfHost:
        adapter_ids: list[str] = []

        def generate(self, prompts, adapter_ids, sampling=None):
            return []

    assert not isinstance(HalfHost(), HostProtocol)
    assert not isinstance(HalfHost(), LearnerProtocol)
    assert not isinstance(object(), GenerationBackend)


def test_learner_statistics_are_written_once():
    """The fields live in ``LearnerStats`` alone: the ``StepStats`` protocol and the Ray
    learner's ``PendingStats`` only hand it over through ``result()``."""
    from redqueen.engine import LearnerStats
    from redqueen.engine.distributed._learner import PendingStats

    def properties(cls: type) -> set[str]:
        return {name for name, value in vars(cls).items() if isinstance(value, property)}

    assert properties(StepStats) == properties(PendingStats) == set()
    assert callable(StepStats.result) and callable(PendingStats.result)
    stats = LearnerStats(loss=0.5, skipped=False, grad_norm=1.0, n_tokens=3)
    assert isinstance(stats, StepStats) and stats.result() is stats
