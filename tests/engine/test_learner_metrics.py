"""Learner metrics (kl_from_base, weight_change, tokens), lr 0, epochs/minibatches, pooling."""

from __future__ import annotations

import math

import pytest
import torch

from redqueen.engine import (
    AdapterHost,
    Learner,
    LearnerConfig,
    Rollout,
    SamplingParams,
    whiten_pooled,
)
from redqueen.engine._learner_probes import weight_change
from redqueen.genomes import LoRAGenome

PROMPTS = ["def f(x):", "y = 3", "print(", "abc"]


def peft_host(model_dir, init: str = "peft") -> AdapterHost:
    host = AdapterHost(model_dir)
    rng = torch.Generator().manual_seed(0)
    genome = LoRAGenome.random(host.module_shapes, rank=4, alpha=8, rng=rng, init=init, std=0.1)
    host.add_adapter("s", genome)
    return host


def rollouts(host: AdapterHost, seed: int) -> list[Rollout]:
    gens = host.generate(
        PROMPTS, ["s"] * len(PROMPTS), SamplingParams(max_new_tokens=8, temperature=1.0, seed=seed)
    )
    return [
        Rollout(g.prompt_ids, g.token_ids, g.logprobs, a)
        for g, a in zip(gens, [1.0, -1.0, 0.5, 0.0], strict=True)
    ]


@pytest.mark.parametrize("lr", [0.0, 1e-2])
def test_distance_from_base_is_zero_at_lr_0_and_grows_with_learning(tiny_coder_dir, lr):
    host = peft_host(tiny_coder_dir)
    learner = Learner(host, LearnerConfig(lr=lr, epochs=2))
    first = learner.step("s", rollouts(host, 0))
    second = learner.step("s", rollouts(host, 1))  # sampled by the updated policy
    assert first.kl_from_base == pytest.approx(0.0, abs=1e-5)  # B = 0: the policy is the base
    if lr == 0:
        assert first.weight_change == second.weight_change == 0.0
        assert second.kl_from_base == pytest.approx(0.0, abs=1e-5)
    else:
        assert first.weight_change > 0 and second.weight_change > first.weight_change
        assert second.kl_from_base > 1e-4
    assert first.updates == 2 and not first.skipped


def test_weight_change_matches_the_dense_update(tiny_coder_dir):
    host = peft_host(tiny_coder_dir, init="gaussian")
    genome = host.genome("s")
    layers = dict(host.model.named_modules())
    delta = sum(float(genome.delta_weight(m).pow(2).sum()) for m in genome.modules)
    base = sum(float(layers[m].weight.pow(2).sum()) for m in genome.modules)
    assert weight_change(host, "s") == pytest.approx(math.sqrt(delta / base), rel=1e-4)


def test_epochs_and_minibatches_count_updates_and_trained_tokens(tiny_coder_dir):
    host = peft_host(tiny_coder_dir)
    batch = rollouts(host, 0)
    active = sum(len(r.token_ids) for r in batch if r.advantage != 0)
    stats = Learner(host, LearnerConfig(lr=1e-3, epochs=3, minibatches=2)).step("s", batch)
    assert stats.updates == 6 and stats.tokens_trained == 3 * active
    assert stats.n_tokens == sum(len(r.token_ids) for r in batch)
    assert 0.0 <= stats.clip_fraction <= 1.0


def test_learning_rate_zero_is_accepted_and_negative_refused():
    assert LearnerConfig(lr=0.0).lr == 0.0
    with pytest.raises(ValueError, match="lr"):
        LearnerConfig(lr=-1e-3)
    with pytest.raises(ValueError, match="epochs"):
        LearnerConfig(epochs=0)


def test_pooling_rule_uses_the_finest_group_large_enough():
    own = [(("a", "t", "o"), ("t", "o"), ("t",))] * 16
    small = [(("b", "t", "o"), ("t", "o"), ("t",))] * 2
    rewards = [float(i % 2) for i in range(16)] + [5.0, 7.0]
    adv, used = whiten_pooled(rewards, own + small)
    # a's group holds 16 samples: its own statistics; b's 2 samples use the pooled (t, o) group.
    assert used == [0] * 16 + [1] * 2
    assert adv[:2] == pytest.approx([-1.0, 1.0], abs=1e-5)
    assert 0 < adv[16] < adv[17]
    # With no group large enough, the coarsest level is used whatever its size.
    adv, used = whiten_pooled([1.0, 0.0, 2.0], [(("x", "o"), ("x",))] * 2 + [(("y", "o"), ("x",))])
    assert used == [1, 1, 1] and adv[1] < adv[0] < adv[2]
    # A constant group carries no signal.
    assert whiten_pooled([1.0, 1.0], [(("x",),)] * 2)[0] == [0.0, 0.0]
    with pytest.raises(ValueError, match="levels"):
        whiten_pooled([1.0, 1.0], [(("x",),), (("x",), ("y",))])


def test_exact_kl_is_zero_for_the_base_and_grows_with_the_adapter(tiny_model_dir):
    from redqueen.engine import AdapterHost, exact_kl_from_base
    from redqueen.genomes import LoRAGenome

    host = AdapterHost(tiny_model_dir)
    genome = LoRAGenome.random(
        host.module_shapes, rank=4, alpha=8.0, rng=torch.Generator().manual_seed(0),
        init="gaussian", std=0.05,
    )
    host.add_adapter("x", genome)
    seqs = [host.tokenizer(t)["input_ids"] for t in ("def f(x):\n    return x", "ab = [1, 2]")]
    kls = []
    for c in (0.0, 0.5, 1.0, 2.0):
        host.set_adapter("x", genome.replace({n: (a, c * b) for n, (a, b) in genome.items()}))
        kls.append(exact_kl_from_base(host, "x", seqs, batch_size=1))
    assert kls[0] == pytest.approx(0.0, abs=1e-7)
    assert 0 < kls[1] < kls[2] < kls[3]
    # Small perturbations: KL grows about quadratically in the scale of the update.
    assert kls[2] / kls[1] == pytest.approx(4.0, rel=0.3)
    with pytest.raises(KeyError, match="no adapter"):
        exact_kl_from_base(host, "missing", seqs)
