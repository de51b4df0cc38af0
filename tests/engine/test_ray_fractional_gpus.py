"""Two Ray workers sharing one GPU (fractional GPUs), against the single-process host.

The cluster's GPUs are logical (Ray's own ``num_gpus`` resource on a CPU machine): placement,
GPU ids and resource accounting are Ray's real ones, the model runs on the CPU. On a GPU
machine the same settings put two base models on one device.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("ray", reason="the distributed engine needs the ray extra")

from redqueen.engine import AdapterHost, Learner, Rollout, SamplingParams  # noqa: E402
from redqueen.engine.distributed import RayAdapterHost, connect  # noqa: E402
from redqueen.genomes import LoRAGenome  # noqa: E402

IDS = ["a0", "a1", "a2"]
PROMPTS = ["def f(x):", "x = [1, 2", "def g(a, b):\n"]


def test_fraction_above_one_is_refused_before_any_cluster_starts():
    with pytest.raises(ValueError, match="gpus_per_worker"):
        RayAdapterHost(workers=2, gpus_per_worker=1.5)


@pytest.mark.slow
def test_two_workers_share_one_gpu_and_match_one_process(tiny_model_dir):
    # Logical GPUs, as the other Ray tests start them: the two half-GPU bundles still share one.
    ray = connect(num_cpus=2, num_gpus=2)
    gpus_before = ray.available_resources().get("GPU", 0.0)
    local = AdapterHost(tiny_model_dir)
    remote = RayAdapterHost(str(tiny_model_dir), workers=2, cpus_per_worker=0, gpus_per_worker=0.5)
    try:
        # One GPU between them: the same GPU id for both, half a GPU each taken.
        assert [len(ids) for ids in remote.worker_gpu_ids] == [1, 1]
        assert remote.worker_gpu_ids[0] == remote.worker_gpu_ids[1]
        assert ray.available_resources().get("GPU", 0.0) == pytest.approx(gpus_before - 1.0)
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
        assert sorted(set(remote.placement().values())) == [0, 1]
        params = SamplingParams(max_new_tokens=10, temperature=1.0, seed=5, n=2)
        mine = local.generate(PROMPTS, IDS, params)
        theirs = remote.generate(PROMPTS, IDS, params)
        assert [g.token_ids for g in theirs] == [g.token_ids for g in mine]
        # A learner step on each worker's adapter matches the same step here.
        learner, cluster = Learner(local), remote.make_learner()
        for adapter_id, (g, h) in (("a0", mine[0:2]), ("a1", mine[2:4])):
            batch = [
                Rollout(
                    prompt_ids=x.prompt_ids, token_ids=x.token_ids, logprobs=x.logprobs, advantage=a
                )
                for x, a in ((g, 1.0), (h, -1.0))
            ]
            expected = learner.step(adapter_id, batch)
            assert cluster.step(adapter_id, batch).result().loss == pytest.approx(
                expected.loss, rel=1e-4, abs=1e-6
            )
        for adapter_id in ("a0", "a1"):
            for name in local.genome(adapter_id).modules:
                for x, y in zip(
                    local.genome(adapter_id).factors(name),
                    remote.genome(adapter_id).factors(name),
                    strict=True,
                ):
                    assert torch.allclose(x, y, atol=1e-6)
    finally:
        remote.close()
