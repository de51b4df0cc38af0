"""The vLLM backend: adapter hand-over and engine settings here; the backend contract with vLLM.

The hand-over (PEFT folders in a RAM-backed directory, a new integer id per version), the engine
settings and the output conversion run everywhere. The contract tests (the same checks the
``hf`` backend passes: one generation per row, ``n`` side by side, stops and budgets, seeded
rows, fresh weights after an update) need vllm and a GPU and skip with the reason otherwise.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from redqueen.engine import AdapterHost, SamplingParams
from redqueen.engine.backends.vllm_backend import (
    AdapterStage,
    engine_kwargs,
    lora_rank_bucket,
    to_generation,
)
from redqueen.genomes import LoRAGenome


def genome(host, seed, rank=4):
    return LoRAGenome.random(
        host.module_shapes,
        rank=rank,
        alpha=2.0 * rank,
        rng=torch.Generator().manual_seed(seed),
        init="gaussian",
        std=0.05,
    )


@pytest.fixture(scope="module")
def host(tiny_model_dir):
    return AdapterHost(tiny_model_dir)


def test_each_adapter_version_is_staged_under_a_new_id(host, tmp_path):
    stage = AdapterStage(tmp_path)
    host.set_adapter("t0", genome(host, 0))
    host.set_adapter("s0", genome(host, 1, rank=8))
    stage.mark(["t0", "s0"])
    assert stage.sync(host) == []
    first = dict(stage.current)
    assert sorted(i for i, _ in first.values()) == [1, 2]
    assert stage.ranks == {"t0": 4, "s0": 8}
    loaded = LoRAGenome.from_peft(first["s0"][1])
    want = host.genome("s0")
    for name in want.modules:
        for x, y in zip(loaded.factors(name), want.factors(name), strict=True):
            assert torch.allclose(x, y)
    # A trained or replaced adapter gets a new id and folder; the old ones are retired.
    host.set_adapter("t0", genome(host, 2))
    host.remove_adapter("s0")
    stage.mark(["t0", "s0"])
    assert sorted(stage.sync(host)) == [1, 2]
    assert list(stage.current) == ["t0"] and stage.current["t0"][0] == 3
    assert not first["t0"][1].exists() and not first["s0"][1].exists()
    assert stage.ranks == {"t0": 4}
    stage.close()
    assert not stage.dir.exists()


def test_engine_settings_follow_the_population():
    assert [lora_rank_bucket(r) for r in (1, 8, 9, 32, 33)] == [8, 8, 16, 32, 64]
    with pytest.raises(ValueError, match="rank 1000"):
        lora_rank_bucket(1000)
    kwargs = engine_kwargs(
        "Qwen/Qwen2.5-Coder-7B",
        ranks=[32] * 8,
        dtype="bfloat16",
        gpu_memory_utilization=0.5,
        max_model_len=4096,
    )
    assert kwargs["enable_lora"] is True
    assert kwargs["max_loras"] == 8 and kwargs["max_lora_rank"] == 32
    assert kwargs["logprobs_mode"] == "raw_logprobs" and kwargs["max_model_len"] == 4096


def test_outputs_convert_to_generations():
    out = SimpleNamespace(
        token_ids=[5, 7, 2],
        logprobs=[{5: SimpleNamespace(logprob=-0.5)}, {7: -1.25, 9: -0.1}, {2: -0.01}],
        text="ab",
        finish_reason="stop",
    )
    gen = to_generation(out, [1, 2])
    assert gen.token_ids == [5, 7, 2] and gen.logprobs == [-0.5, -1.25, -0.01]
    assert gen.finished and gen.prompt_ids == [1, 2] and gen.text == "ab"
    short = SimpleNamespace(token_ids=[5, 7], logprobs=[{5: -0.5}], text="", finish_reason="length")
    with pytest.raises(ValueError, match="2 tokens but 1"):
        to_generation(short, [1])


def test_without_vllm_the_backend_names_the_extra(tiny_model_dir):
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"redqueen\[vllm\]"):
            AdapterHost(tiny_model_dir, backend="vllm")
    else:
        pytest.skip("vllm is installed: the contract tests below cover the backend")


# -- the backend contract, with vLLM on a GPU -------------------------------------------------


@pytest.fixture(scope="module")
def vllm_host(tiny_model_dir):
    pytest.importorskip("vllm", reason="the vllm extra is not installed")
    if not torch.cuda.is_available():
        pytest.skip("vLLM needs a CUDA GPU")
    hosts = {
        name: AdapterHost(tiny_model_dir, device="cuda", dtype=torch.float32, backend=name)
        for name in ("hf", "vllm")
    }
    for h in hosts.values():
        for i, adapter_id in enumerate(("a", "b")):
            h.add_adapter(adapter_id, genome(h, 10 + i, rank=8))
    return hosts


def test_contract_greedy_rows_match_the_hf_backend(vllm_host):
    params = SamplingParams(max_new_tokens=10, temperature=0.0, n=2)
    prompts, rows = ["def f(x):", "x = [1, 2", "y ="], ["a", "b", None]
    hf = vllm_host["hf"].generate(prompts, rows, params)
    vl = vllm_host["vllm"].generate(prompts, rows, params)
    assert len(vl) == 6
    assert [g.token_ids for g in vl] == [g.token_ids for g in hf]
    for g, h in zip(vl, hf, strict=True):
        assert g.logprobs == pytest.approx(h.logprobs, abs=1e-2)


def test_contract_seeds_stops_and_budgets(vllm_host):
    host = vllm_host["vllm"]
    params = SamplingParams(max_new_tokens=6, temperature=1.0, seed=5, stop=("\n",), n=3)
    first = host.generate(["def f(x):", "z = "], ["a", "b"], params)
    again = host.generate(["def f(x):", "z = "], ["a", "b"], params)
    assert [g.token_ids for g in first] == [g.token_ids for g in again]
    for g in first:
        assert len(g.token_ids) <= 6 and "\n" not in g.text
        assert len(g.logprobs) == len(g.token_ids)


def test_contract_updated_weights_are_served(vllm_host):
    host = vllm_host["vllm"]
    params = SamplingParams(max_new_tokens=8, temperature=0.0)
    before = host.generate(["def f(x):"], ["a"], params)[0].token_ids
    strong = LoRAGenome.random(
        host.module_shapes, rank=8, alpha=64.0, rng=torch.Generator().manual_seed(99),
        init="gaussian", std=0.5,
    )
    host.set_adapter("a", strong)
    vllm_host["hf"].set_adapter("a", strong)
    after = host.generate(["def f(x):"], ["a"], params)[0].token_ids
    assert after == vllm_host["hf"].generate(["def f(x):"], ["a"], params)[0].token_ids
    assert after != before
