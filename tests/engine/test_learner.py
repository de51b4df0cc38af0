"""Learner: REINFORCE++ steps, skipped non-finite steps, optimizer state, PEFT round-trip."""

from __future__ import annotations

import io
import math

import pytest
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM

from redqueen.engine import (
    AdapterHost,
    Learner,
    LearnerConfig,
    Rollout,
    SamplingParams,
    whiten_advantages,
)
from redqueen.engine._batch import RolloutBatch
from redqueen.engine._learner import _GROUP_OVERHEAD, length_groups
from redqueen.genomes import LoRAGenome

PROMPTS = ["def f(x):", "y = 3", "print(", "abc"]
SAMPLE = SamplingParams(max_new_tokens=8, temperature=1.0, seed=0)


def make_host(tiny_coder_dir, *, seed: int = 0) -> AdapterHost:
    host = AdapterHost(tiny_coder_dir)
    rng = torch.Generator().manual_seed(seed)
    host.add_adapter(
        "s",
        LoRAGenome.random(host.module_shapes, rank=4, alpha=8, rng=rng, init="gaussian", std=0.1),
    )
    return host


def rollouts_for(
    host: AdapterHost, advantages: list[float], adapter_id: str = "s"
) -> list[Rollout]:
    gens = host.generate(PROMPTS, [adapter_id] * len(PROMPTS), SAMPLE)
    return [
        Rollout(prompt_ids=g.prompt_ids, token_ids=g.token_ids, logprobs=g.logprobs, advantage=a)
        for g, a in zip(gens, advantages, strict=True)
    ]


def sequence_logprobs(
    host: AdapterHost, rollouts: list[Rollout], adapter_id: str = "s"
) -> list[float]:
    """Sum of token log-probabilities of each rollout under the adapter's current weights."""
    out = []
    with torch.no_grad(), host.use_adapter(adapter_id) as model:
        for r in rollouts:
            ids = torch.tensor([list(r.prompt_ids) + list(r.token_ids)])
            logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1)
            targets = ids[0, 1:]
            token = logp.gather(-1, targets[:, None])[:, 0][-len(r.token_ids) :]
            out.append(float(token.sum()))
    return out


def flat(host: AdapterHost, adapter_id: str = "s") -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in host.adapter_parameters(adapter_id)])


def logprobs_and_grad(host: AdapterHost, learner: Learner, batch: RolloutBatch):
    """The learner's completion log-probabilities of ``batch`` under adapter ``s`` and the
    gradient of their masked sum with respect to the adapter's factors."""
    for p in host.adapter_parameters("s"):
        p.grad = None
    with host.use_adapter("s"):
        logprobs = learner.logprobs(batch)
    torch.where(batch.mask, logprobs, 0.0).sum().backward()
    grad = torch.cat([p.grad.flatten() for p in host.adapter_parameters("s")])
    return logprobs.detach(), grad


def test_whiten_advantages_per_group():
    rewards = [1.0, -0.5, -1.0, 1.0, 0.0, 1.0, 1.0]
    groups = ["o", "o", "o", "o", "i", "f", "f"]
    adv = whiten_advantages(rewards, groups)
    o = [adv[i] for i in range(4)]
    assert sum(o) == pytest.approx(0.0, abs=1e-9)
    assert math.sqrt(sum(a * a for a in o) / 4) == pytest.approx(1.0, abs=1e-4)
    assert adv[0] > adv[1] > adv[2]
    assert adv[4:] == [0.0, 0.0, 0.0]  # single-member and constant groups carry no signal
    with pytest.raises(ValueError, match="groups"):
        whiten_advantages([1.0], [])


def test_generation_logprobs_match_the_learner(tiny_coder_dir):
    host = make_host(tiny_coder_dir)
    rollouts = rollouts_for(host, [1.0, -1.0, 0.5, -0.5])
    recomputed = sequence_logprobs(host, rollouts)
    assert recomputed == pytest.approx([sum(r.logprobs) for r in rollouts], abs=1e-3)
    stats = Learner(host, LearnerConfig(lr=1e-3)).step("s", rollouts)
    assert not stats.skipped and stats.n_tokens == sum(len(r.token_ids) for r in rollouts)
    assert (
        abs(stats.approx_kl) < 1e-4 and stats.clip_fraction == 0.0
    )  # ratio is 1 at the first step


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_step_moves_logprobs_with_the_advantage(tiny_coder_dir, sign):
    host = make_host(tiny_coder_dir)
    rollouts = rollouts_for(host, [sign] * len(PROMPTS))
    before = sequence_logprobs(host, rollouts)
    genome_before = host.genome("s")
    stats = Learner(host, LearnerConfig(lr=1e-3, micro_batch_size=3)).step("s", rollouts)
    after = sequence_logprobs(host, rollouts)
    assert not stats.skipped and math.isfinite(stats.grad_norm) and stats.grad_norm > 0
    for b, a in zip(before, after, strict=True):
        assert sign * (a - b) > 0
    # Only this adapter's factors moved; the base model is frozen.
    assert all(not p.requires_grad for p in host.model.parameters())
    name = genome_before.modules[0]
    assert not torch.equal(host.genome("s").factors(name)[1], genome_before.factors(name)[1])


def test_micro_batching_does_not_change_the_update(tiny_coder_dir):
    results = []
    for micro in (1, 4):
        host = make_host(tiny_coder_dir)
        rollouts = rollouts_for(host, [1.0, -1.0, 0.5, -0.5])
        # A large Adam eps makes the step linear in the gradient, so that summation order in
        # tiny gradients (where g / (|g| + eps) flips) does not hide a real difference.
        before = flat(host).clone()
        Learner(host, LearnerConfig(lr=1e-2, eps=1.0, micro_batch_size=micro)).step("s", rollouts)
        results.append(flat(host) - before)
    assert results[0].abs().max() > 1e-5  # a real update, not two empty ones
    torch.testing.assert_close(results[0], results[1], atol=1e-7, rtol=1e-3)


def test_rollouts_sharing_a_prompt_run_it_once_with_the_same_result(tiny_coder_dir):
    host = make_host(tiny_coder_dir)
    # Four samples of each of two prompts (a solver's answers), of different lengths.
    params = SamplingParams(max_new_tokens=12, temperature=1.0, seed=5, n=4)
    gens = host.generate(["def f(x):", "y = [1, 2]"], ["s", "s"], params)
    advantages = [1.0, -1.0, 0.5, -0.5, 0.3, -0.2, 0.8, -0.6]
    rollouts = [  # cut to different lengths (a prefix of a sample is a sample of the prefix)
        Rollout(
            prompt_ids=g.prompt_ids,
            token_ids=g.token_ids[: 4 + i],
            logprobs=g.logprobs[: 4 + i],
            advantage=a,
        )
        for i, (g, a) in enumerate(zip(gens, advantages, strict=True))
    ]
    learner = Learner(host, LearnerConfig(lr=1e-3))
    batch = RolloutBatch.build(rollouts, host.pad_token_id, host.device)
    calls = []
    hook = host.model.register_forward_hook(
        lambda m, args, kw, out: calls.append(kw), with_kwargs=True
    )
    results = []
    try:
        for share in (False, True):
            learner.share_prompts = share
            calls.clear()
            logprobs, grad = logprobs_and_grad(host, learner, batch)
            results.append((torch.where(batch.mask, logprobs, 0.0), grad, list(calls)))
    finally:
        hook.remove()
    (whole, grad_whole, calls_whole), (shared, grad_shared, calls_shared) = results
    assert len(calls_whole) == 1 and len(calls_shared) == 2
    assert calls_shared[0]["input_ids"].shape[0] == 2  # the two distinct prompts, once each
    torch.testing.assert_close(shared, whole, atol=1e-4, rtol=0)
    assert float((grad_shared - grad_whole).norm() / grad_whole.norm()) < 1e-4
    # And the sampler's own log-probabilities agree with both.
    torch.testing.assert_close(
        shared, torch.where(batch.mask, batch.old_logprobs, 0.0), atol=1e-3, rtol=0
    )


def _brute_force_groups(prompt, completion, overhead):
    """The least cost over every contiguous grouping of the length-sorted rows."""
    rows = sorted(
        (r for r in range(len(completion)) if completion[r] > 0),
        key=lambda r: (prompt[r] + completion[r], completion[r]),
    )
    best = math.inf
    for mask in range(1 << max(len(rows) - 1, 0)):
        groups, start = [], 0
        for i in range(1, len(rows)):
            if mask >> (i - 1) & 1:
                groups.append(rows[start:i])
                start = i
        groups.append(rows[start:])
        cost = sum(
            overhead + len(g) * (max(prompt[r] for r in g) + max(completion[r] for r in g))
            for g in groups
        )
        best = min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_length_groups_are_the_cheapest_contiguous_grouping(seed):
    rng = torch.Generator().manual_seed(seed)
    n = 7
    prompt = torch.randint(5, 200, (n,), generator=rng).tolist()
    completion = torch.randint(0, 96, (n,), generator=rng).tolist()
    groups = length_groups(prompt, completion, 32.0)
    scored = sorted(r for g in groups for r in g)
    assert scored == [r for r in range(n) if completion[r] > 0]  # each scored row once
    cost = sum(
        32.0 + len(g) * (max(prompt[r] for r in g) + max(completion[r] for r in g)) for g in groups
    )
    assert cost == _brute_force_groups(prompt, completion, 32.0)
    assert length_groups(prompt, completion, None) == [[r for r in range(n) if completion[r] > 0]]


@pytest.mark.parametrize("share", [False, True])
def test_rows_of_very_different_lengths_run_in_groups_with_the_same_result(
    tiny_coder_dir, share, monkeypatch
):
    host = make_host(tiny_coder_dir)
    params = SamplingParams(max_new_tokens=40, temperature=1.0, seed=3, n=4)
    gens = host.generate(["def f(x):", "y = [1, 2, 3] + [4]"], ["s", "s"], params)
    cut = [40, 2, 3, 1, 38, 2, 1, 4]  # one long answer among each prompt's four
    rollouts = [
        Rollout(
            prompt_ids=g.prompt_ids,
            token_ids=g.token_ids[:c],
            logprobs=g.logprobs[:c],
            advantage=0.5 - i % 2,
        )
        for i, (g, c) in enumerate(zip(gens, cut, strict=True))
    ]
    assert all(len(r.token_ids) == c for r, c in zip(rollouts, cut, strict=True))
    learner = Learner(host, LearnerConfig(lr=1e-3))
    learner.share_prompts = share
    batch = RolloutBatch.build(rollouts, host.pad_token_id, host.device)
    calls = []
    hook = host.model.register_forward_hook(
        lambda m, args, kw, out: calls.append(kw["input_ids"].shape), with_kwargs=True
    )
    results = []
    try:
        for overhead in (None, 32.0):  # one padded group, then groups by length
            monkeypatch.setitem(_GROUP_OVERHEAD, "cpu", overhead)
            calls.clear()
            logprobs, grad = logprobs_and_grad(host, learner, batch)
            cells = sum(shape[0] * shape[1] for shape in calls)
            results.append((logprobs, grad, len(calls), cells))
    finally:
        hook.remove()
    (one, grad_one, calls_one, cells_one), (grouped, grad_grouped, calls_grouped, cells_grouped) = (
        results
    )
    assert calls_grouped > calls_one and cells_grouped < cells_one  # fewer padded positions
    assert torch.equal(grouped[~batch.mask], torch.zeros_like(grouped[~batch.mask]))
    torch.testing.assert_close(grouped[batch.mask], one[batch.mask], atol=1e-4, rtol=0)
    assert float((grad_grouped - grad_one).norm() / grad_one.norm()) < 1e-4
    torch.testing.assert_close(
        grouped[batch.mask], batch.old_logprobs[batch.mask], atol=1e-3, rtol=0
    )


def test_nan_loss_is_skipped_not_raised(tiny_coder_dir):
    host = make_host(tiny_coder_dir)
    learner = Learner(host, LearnerConfig(lr=1e-2))
    good = rollouts_for(host, [1.0, -1.0, 0.5, -0.5])
    learner.step("s", good)
    weights = flat(host).clone()
    state = learner.state_dict()["optimizers"]["s"]["state"]
    steps_before = float(state[0]["step"])

    bad = list(good)
    poisoned = list(bad[1].logprobs)
    poisoned[0] = float("nan")
    bad[1] = Rollout(bad[1].prompt_ids, bad[1].token_ids, poisoned, bad[1].advantage)
    stats = learner.step("s", bad)
    assert stats.skipped and math.isnan(stats.loss)
    assert torch.equal(flat(host), weights)
    assert float(learner.state_dict()["optimizers"]["s"]["state"][0]["step"]) == steps_before

    # Non-finite weights (a diverged adapter) give a non-finite loss: skipped as well.
    genome = host.genome("s")
    name = genome.modules[0]
    a, b = genome.factors(name)
    broken = {m: genome.factors(m) for m in genome.modules}
    broken[name] = (torch.full_like(a, float("inf")), b + 1.0)
    host.set_adapter("s", LoRAGenome(broken, rank=genome.rank, alpha=genome.alpha))
    stats = learner.step("s", good)
    assert stats.skipped


def test_optimizer_state_round_trip_resumes_exactly(tiny_coder_dir):
    config = LearnerConfig(lr=5e-3)
    # Continuous run: three steps.
    host = make_host(tiny_coder_dir)
    batches = [rollouts_for(host, adv) for adv in ([1.0, -1.0, 0.5, -0.5], [0.5, 0.5, -1.0, 0.0])]
    learner = Learner(host, config)
    learner.step("s", batches[0])
    learner.step("s", batches[1])
    learner.step("s", batches[0])
    continuous = flat(host)

    # Interrupted run: two steps, checkpoint (genome + optimizer state), fresh host, one step.
    host = make_host(tiny_coder_dir)
    learner = Learner(host, config)
    learner.step("s", batches[0])
    learner.step("s", batches[1])
    buffer = io.BytesIO()
    torch.save({"genome": host.genome("s").state_dict(), "learner": learner.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    resumed_host = AdapterHost(tiny_coder_dir)
    resumed_host.add_adapter("s", LoRAGenome.from_state_dict(saved["genome"]))
    resumed = Learner(resumed_host, config)
    resumed.load_state_dict(saved["learner"])
    resumed.step("s", batches[0])
    assert torch.equal(flat(resumed_host), continuous)

    # Without the optimizer state the third step differs (Adam's moments matter).
    fresh_host = AdapterHost(tiny_coder_dir)
    fresh_host.add_adapter("s", LoRAGenome.from_state_dict(saved["genome"]))
    Learner(fresh_host, config).step("s", batches[0])
    assert not torch.equal(flat(fresh_host), continuous)

    with pytest.raises(KeyError):
        Learner(AdapterHost(tiny_coder_dir), config).load_state_dict(saved["learner"])


def test_replaced_adapter_starts_with_fresh_optimizer_state(tiny_coder_dir):
    host = make_host(tiny_coder_dir)
    learner = Learner(host, LearnerConfig(lr=1e-2))
    learner.step("s", rollouts_for(host, [1.0, -1.0, 0.5, -0.5]))
    assert "s" in learner.state_dict()["optimizers"]
    host.set_adapter("s", host.genome("s"))
    assert learner.state_dict()["optimizers"] == {}
    learner.step("s", rollouts_for(host, [1.0, -1.0, 0.5, -0.5]))
    assert float(learner.state_dict()["optimizers"]["s"]["state"][0]["step"]) == 1.0


def test_kl_penalty_changes_the_update(tiny_coder_dir):
    updates = []
    for kl_coef in (0.0, 0.5):
        host = make_host(tiny_coder_dir)
        rollouts = rollouts_for(host, [1.0, -1.0, 0.5, -0.5])
        stats = Learner(host, LearnerConfig(lr=1e-2, kl_coef=kl_coef)).step("s", rollouts)
        assert not stats.skipped
        updates.append(flat(host))
    assert not torch.allclose(updates[0], updates[1])


def test_trained_adapter_round_trips_through_peft(tiny_coder_dir, tmp_path):
    host = make_host(tiny_coder_dir)
    Learner(host, LearnerConfig(lr=1e-2)).step("s", rollouts_for(host, [1.0, -1.0, 0.5, -0.5]))
    folder = host.genome("s").save_peft(tmp_path / "s")
    peft_model = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(tiny_coder_dir), folder
    )
    peft_model.eval()
    ids = torch.tensor([host.tokenizer("def f(x):\n    return x")["input_ids"]])
    with torch.no_grad(), host.use_adapter("s") as model:
        ours = model(input_ids=ids).logits
        theirs = peft_model(input_ids=ids).logits
        base = peft_model.get_base_model()
        with peft_model.disable_adapter():
            plain = base(input_ids=ids).logits
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-4)
    assert not torch.allclose(ours, plain, atol=1e-3)  # the adapter matters


def test_zero_advantage_rollouts_only_count_in_the_token_mean(tiny_coder_dir):
    results = []
    for filler_seed in (1, 2):
        host = make_host(tiny_coder_dir)
        rollouts = rollouts_for(host, [1.0, -1.0, 0.0, 0.0])
        # Same lengths, other tokens: a rollout with zero advantage must not matter beyond its length.
        rng = torch.Generator().manual_seed(filler_seed)
        for i in (2, 3):
            r = rollouts[i]
            tokens = torch.randint(3, 50, (len(r.token_ids),), generator=rng).tolist()
            rollouts[i] = Rollout(r.prompt_ids, tokens, [-1.0] * len(tokens), 0.0)
        stats = Learner(host, LearnerConfig(lr=1e-2)).step("s", rollouts)
        assert stats.n_tokens == sum(len(r.token_ids) for r in rollouts)
        results.append(flat(host))
    torch.testing.assert_close(results[0], results[1], atol=0, rtol=0)

    host = make_host(tiny_coder_dir)
    before = flat(host).clone()
    learner = Learner(host, LearnerConfig(lr=1e-2))
    stats = learner.step("s", rollouts_for(host, [0.0] * len(PROMPTS)))
    assert not stats.skipped and stats.grad_norm == 0.0
    assert torch.equal(flat(host), before)  # a zero gradient on fresh Adam moments moves nothing
    assert float(learner.state_dict()["optimizers"]["s"]["state"][0]["step"]) == 1.0
