"""The Ray host, learner and sandbox pool against their single-process counterparts."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("ray", reason="the distributed engine needs the ray extra")

from redqueen.engine import (  # noqa: E402
    AdapterHost,
    HostProtocol,
    Learner,
    LearnerProtocol,
    Rollout,
    SamplingParams,
    StepStats,
)
from redqueen.engine.distributed import (  # noqa: E402
    ClusterError,
    RayAdapterHost,
    RayExecutorPool,
    WorkerHost,
    WorkerLostError,
    connect,
)
from redqueen.genomes import LoRAGenome  # noqa: E402
from redqueen.verifiers import Executor  # noqa: E402

PROMPTS = ["def f(x):", "def g(a, b):\n", "x = [1, 2", "def f(x):"]
IDS = ["a0", "a1", "a2", "a3"]


@pytest.fixture(scope="module")
def hosts(tiny_model_dir):
    connect(num_cpus=2, num_gpus=2)  # logical GPUs: placement only
    local = AdapterHost(tiny_model_dir)
    remote = RayAdapterHost(str(tiny_model_dir), workers=2, cpus_per_worker=0)
    for i, adapter_id in enumerate(IDS):
        genome = LoRAGenome.random(
            local.module_shapes,
            rank=4,
            alpha=8.0,
            rng=torch.Generator().manual_seed(i),
            init="gaussian",
            std=0.05,
        )
        local.add_adapter(adapter_id, genome)
        remote.add_adapter(adapter_id, genome)
    yield local, remote
    remote.close()


def test_adapters_are_spread_and_travel_as_tensors(hosts):
    local, remote = hosts
    assert remote.placement() == {"a0": 0, "a1": 1, "a2": 0, "a3": 1}
    assert remote.adapter_ids == IDS
    assert remote.module_shapes == local.module_shapes
    for adapter_id in IDS:
        mine, theirs = local.genome(adapter_id), remote.genome(adapter_id)
        for name in mine.modules:
            for x, y in zip(mine.factors(name), theirs.factors(name), strict=True):
                assert torch.equal(x, y)
    with pytest.raises(ValueError, match="already exists"):
        remote.add_adapter("a0", local.genome("a0"))
    with pytest.raises(KeyError, match="no adapter 'zz'"):
        remote.genome("zz")
    with pytest.raises(KeyError, match="no adapter 'zz'"):
        remote.generate(["x"], ["zz"], SamplingParams(seed=1))


def test_sharded_sampling_draws_the_same_tokens_as_one_process(hosts):
    local, remote = hosts
    params = SamplingParams(max_new_tokens=12, temperature=1.0, top_p=0.9, seed=11, n=2)
    rows = [*IDS, None]
    prompts = [*PROMPTS, "y ="]
    mine = local.generate(prompts, rows, params)
    theirs = remote.generate(prompts, rows, params)
    assert len(theirs) == len(mine) == 10
    assert [g.token_ids for g in theirs] == [g.token_ids for g in mine]
    assert [g.text for g in theirs] == [g.text for g in mine]
    # Batch shapes differ between the layouts, so float logits may differ in the last bits.
    for g, h in zip(mine, theirs, strict=True):
        assert g.logprobs == pytest.approx(h.logprobs, abs=1e-5)
    # A row's sample depends on its own stream, not on the rows beside it.
    alone = local.generate([PROMPTS[1]], [IDS[1]], params)
    assert [g.token_ids for g in alone] == [g.token_ids for g in mine[2:4]]


def test_learner_steps_run_on_the_owning_worker_and_match(hosts):
    local, remote = hosts
    gens = local.generate(PROMPTS[:2], IDS[:2], SamplingParams(max_new_tokens=8, seed=3, n=2))
    rollouts = [
        Rollout(prompt_ids=g.prompt_ids, token_ids=g.token_ids, logprobs=g.logprobs, advantage=a)
        for g, a in zip(gens, [1.0, -1.0, 0.5, -0.5], strict=True)
    ]
    learner, cluster = Learner(local), remote.make_learner()
    assert isinstance(remote, HostProtocol) and isinstance(cluster, LearnerProtocol)
    assert isinstance(remote, WorkerHost) and cluster.host is remote
    for adapter_id, batch in (("a0", rollouts[:2]), ("a1", rollouts[2:])):
        expected = learner.step(adapter_id, batch)
        pending = cluster.step(adapter_id, batch)
        assert isinstance(pending, StepStats)
        got = pending.result()
        assert got.n_tokens == expected.n_tokens and got.updates == expected.updates
        assert got.loss == pytest.approx(expected.loss, rel=1e-4, abs=1e-6)
        assert got.skipped is expected.skipped is False
    for adapter_id in ("a0", "a1"):
        mine, theirs = local.genome(adapter_id), remote.genome(adapter_id)
        moved = 0.0
        for name in mine.modules:
            for x, y in zip(mine.factors(name), theirs.factors(name), strict=True):
                assert torch.allclose(x, y, atol=1e-6)
            moved += float((mine.factors(name)[1]).abs().sum())
        assert moved > 0
    state = cluster.state_dict()
    assert sorted(state["optimizers"]) == ["a0", "a1"]
    cluster.load_state_dict(state)
    with pytest.raises(KeyError, match="optimizers"):
        cluster.load_state_dict({})


def test_sandbox_checks_on_the_workers_match_the_local_executor(hosts, sandbox_pairs):
    _, remote = hosts
    with Executor(workers=1, timeout=0.5) as local:
        expected = local.execute_many(sandbox_pairs)
    pool = remote.make_executor({"workers": 1, "timeout": 0.5})
    assert pool.execute_many(sandbox_pairs) == expected
    assert pool.execute("def f(x):\n    return x * 2", "f(21)").value == "42"
    with pytest.raises(ValueError, match="heap_jitter"):
        pool.execute_many(sandbox_pairs, heap_jitter=[0])


def test_own_sandbox_actors_are_replaced_when_lost(sandbox_pairs):
    import ray

    with Executor(workers=1) as local:
        expected = local.execute_many(sandbox_pairs[:3])
    with RayExecutorPool(actors=1, workers=1) as pool:
        ray.kill(pool.actors[0])
        assert pool.execute_many(sandbox_pairs[:3]) == expected
        assert pool.restarts == 1
    with pytest.raises(ClusterError, match="closed"):
        pool.execute_many(sandbox_pairs)


@pytest.fixture
def sandbox_pairs():
    return [
        ("def f(x):\n    return x * 2", "f(21)"),
        ("def f(s):\n    return s[::-1]", "f('abc')"),
        ("def f(x):\n    return 1 // x", "f(0)"),
        ("def f(x):\n    return sorted(x)", "f([3, 1, 2])"),
        ("def f():\n    while True:\n        pass", "f()"),
    ]


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="workers"):
        RayAdapterHost(workers=0)
    with pytest.raises(ValueError, match="placement"):
        RayAdapterHost(workers=1, placement="RANDOM")
    with pytest.raises(ValueError, match="actors"):
        RayExecutorPool(actors=0)


def test_a_killed_worker_is_reported_with_its_adapters(hosts):
    import ray

    _, remote = hosts  # the last test of the module: it kills worker 1
    ray.kill(remote.actors[1])
    with pytest.raises(WorkerLostError, match=r"worker 1 .*\['a1', 'a3'\].*resume"):
        remote.generate(["x", "y"], ["a0", "a1"], SamplingParams(max_new_tokens=2, seed=0))


def test_gpu_workers_get_one_bundle_and_one_gpu_each(hosts):
    import ray
    from ray.util.placement_group import remove_placement_group

    from redqueen.engine.distributed._cluster import place_workers

    if ray.cluster_resources().get("GPU", 0) < 2:
        pytest.skip("the test cluster was started without (logical) GPUs")
    group, options = place_workers(2, cpus=0, gpus=1, strategy="PACK", timeout=30)
    try:
        assert [o["num_gpus"] for o in options] == [1, 1]
        assert [o["scheduling_strategy"].placement_group_bundle_index for o in options] == [0, 1]
        gpu_ids = ray.remote(lambda: ray.get_gpu_ids())
        ids = ray.get([gpu_ids.options(**o).remote() for o in options])
        assert sorted(i for pair in ids for i in pair) == [0, 1]
        with pytest.raises(ClusterError, match="do not fit"):
            place_workers(1, cpus=0, gpus=1, timeout=1)
    finally:
        remove_placement_group(group)
