"""The static backend against the hf backend: same tokens, same draws, same distribution."""

from __future__ import annotations

import pytest
import torch
from scipy import stats
from transformers import Qwen2Config, Qwen2ForCausalLM

from redqueen.engine import AdapterHost, SamplingParams
from redqueen.engine.backends import BACKENDS, StaticBackend
from redqueen.engine.backends._decode_state import DecodeState
from redqueen.engine.backends._decoder import UnsupportedModelError
from redqueen.genomes import LoRAGenome
from tests.engine.conftest import small_opt_model

PROMPTS = ["def f(x):", "hello world, this is longer", "ab", "x = [1, 2]", "def f(x):"]
ROWS = ["a", "b", None, "c", "a"]


def random_genome(host: AdapterHost, seed: int, *, rank: int = 4) -> LoRAGenome:
    rng = torch.Generator().manual_seed(seed)
    return LoRAGenome.random(
        host.module_shapes, rank=rank, alpha=2.0 * rank, rng=rng, init="gaussian", std=0.3
    )


def with_adapters(host: AdapterHost) -> AdapterHost:
    for i, name in enumerate(["a", "b", "c"]):
        host.add_adapter(name, random_genome(host, i, rank=4 if name != "c" else 2))
    return host


@pytest.fixture(scope="module")
def host(tiny_coder_dir) -> AdapterHost:
    return with_adapters(AdapterHost(tiny_coder_dir))


@pytest.fixture(params=["eager", "fixed_shapes", "eager_dense", "fixed_shapes_dense"])
def static(request, host) -> StaticBackend:
    """The static backend, eager, or with the fixed shapes a CUDA graph captures (run eagerly);
    its adapters applied in segments (the CPU's form) or dense (CUDA's)."""
    backend = BACKENDS["static"](host, dense_lora=request.param.endswith("_dense"))
    backend.static_shapes = request.param.startswith("fixed_shapes")
    return backend


def both(host, backend, prompts, rows, params):
    ids = [host.tokenizer(p)["input_ids"] for p in prompts]
    if isinstance(params, SamplingParams):
        params = [params] * len(ids)
    return host.backend.generate(ids, rows, params), backend.generate(ids, rows, params)


def assert_same(ours, theirs):
    for a, b in zip(ours, theirs, strict=True):
        assert a.token_ids == b.token_ids
        assert a.text == b.text
        assert a.finished == b.finished
        assert a.logprobs == pytest.approx(b.logprobs, abs=5e-3)


def test_greedy_matches_hf_with_mixed_adapters(host, static):
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0)
    hf, ours = both(host, static, PROMPTS, ROWS, greedy)
    assert_same(ours, hf)
    # The adapters change the output, so the comparison covers the LoRA path.
    assert ours[0].token_ids != both(host, static, PROMPTS[:1], [None], greedy)[1][0].token_ids


def test_seeded_sampling_draws_the_same_tokens_as_hf(host, static):
    # Both backends invert each row's CDF with the same per-row uniforms, so rows agree
    # token for token (float rounding could only flip a draw that lands on a CDF boundary).
    params = [
        SamplingParams(max_new_tokens=16, temperature=1.0, seed=7),
        SamplingParams(max_new_tokens=9, temperature=0.7, seed=7, top_p=0.8),
        SamplingParams(max_new_tokens=16, temperature=0.0, seed=7),
        SamplingParams(max_new_tokens=16, temperature=1.3, seed=7, stop=("\n",)),
        SamplingParams(max_new_tokens=5, temperature=1.0, seed=7, stop=(")", "]")),
    ]
    hf, ours = both(host, static, PROMPTS, ROWS, params)
    assert_same(ours, hf)
    assert all(len(g.token_ids) <= p.max_new_tokens for g, p in zip(ours, params, strict=True))


def test_rows_do_not_depend_on_the_batch_around_them(host):
    backend = BACKENDS["static"](host)
    params = SamplingParams(max_new_tokens=10, temperature=1.0, seed=3)
    ids = [host.tokenizer(p)["input_ids"] for p in PROMPTS]
    full = backend.generate(ids, ROWS, [params] * len(ids))
    alone = backend.generate(ids[3:4], ROWS[3:4], [params])
    assert alone[0].token_ids == full[3].token_ids
    # Other rows in between (other adapters and prompts), and chunks of two rows.
    extra = [host.tokenizer("zz top")["input_ids"], host.tokenizer("q")["input_ids"]]
    mixed_ids = [ids[0], extra[0], ids[1], ids[2], extra[1], ids[3], ids[4]]
    mixed_rows = [ROWS[0], "c", ROWS[1], ROWS[2], "b", ROWS[3], ROWS[4]]
    host.max_batch_size = 2
    try:
        mixed = backend.generate(mixed_ids, mixed_rows, [params] * len(mixed_ids))
    finally:
        host.max_batch_size = 64
    kept = [mixed[i] for i in (0, 2, 3, 5, 6)]
    assert [g.token_ids for g in kept] == [g.token_ids for g in full]
    # Rows 0 and 4 share adapter and prompt: their repeat index gives them different draws.
    assert full[0].token_ids != full[4].token_ids


def test_ended_rows_leave_the_batch_and_repeated_prompts_prefill_once(host, monkeypatch):
    backend = BACKENDS["static"](host)
    sizes, prefills = [], []
    select_rows = DecodeState.select_rows
    prefill = backend.decoder.prefill

    def recording_select(self, index):
        sizes.append(len(index))
        return select_rows(self, index)

    def recording_prefill(input_ids, *args, **kwargs):
        prefills.append(input_ids.shape[0])
        return prefill(input_ids, *args, **kwargs)

    monkeypatch.setattr(DecodeState, "select_rows", recording_select)
    monkeypatch.setattr(backend.decoder, "prefill", recording_prefill)
    ids = [host.tokenizer(p)["input_ids"] for p in PROMPTS]
    # Budgets from 2 to 20 tokens: rows end at different steps; three samples per prompt.
    params = [
        SamplingParams(max_new_tokens=2 + 4 * i, temperature=1.0, seed=9, n=3)
        for i in range(len(ids))
    ]
    rows = [(i, a, p) for i, a, p in zip(ids, ROWS, params, strict=True) for _ in range(3)]
    args = ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
    shrinking = backend.generate(*args)
    assert sizes and sizes == sorted(sizes, reverse=True) and sizes[-1] < len(rows)
    # Rows 0 and 4 share prompt and adapter: 4 distinct (prompt, adapter) pairs, not 15 rows.
    assert prefills == [4]
    backend.shrink_at = 0.0  # never drop a row
    whole = backend.generate(*args)
    assert [g.token_ids for g in shrinking] == [g.token_ids for g in whole]
    assert [g.finished for g in shrinking] == [g.finished for g in whole]
    hf = host.backend.generate(*args)
    assert [g.token_ids for g in shrinking] == [g.token_ids for g in hf]


@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_first_token_frequencies_follow_the_policy(host, temperature):
    """Chi-square test of the sampled first tokens against the model's exact distribution."""
    backend = BACKENDS["static"](host)
    prompt, rows = "def f(x):", 1200
    ids = host.tokenizer(prompt)["input_ids"]
    params = [SamplingParams(max_new_tokens=1, temperature=temperature, seed=11)] * rows
    tokens = [g.token_ids[0] for g in backend.generate([ids] * rows, ["b"] * rows, params)]
    with host.use_adapter("b") as model, torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1].double()
    probs = torch.softmax(logits / temperature, dim=-1)
    expected = probs * rows
    common = (expected >= 5).nonzero()[:, 0].tolist()
    assert len(common) >= 3  # enough categories for the test to have power
    observed = [tokens.count(t) for t in common]
    exp = [float(expected[t]) for t in common]
    observed.append(rows - sum(observed))
    exp.append(rows - sum(exp))
    p_value = stats.chisquare(observed, exp).pvalue
    assert p_value > 1e-4


def test_qwen2_with_attention_biases_matches_hf(tiny_model_dir):
    config = Qwen2Config(
        vocab_size=104,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.1)  # biases too: the q/k/v biases must matter
    assert model.model.layers[0].self_attn.q_proj.bias is not None
    host = with_adapters(AdapterHost(model, tokenizer=tiny_model_dir))
    backend = BACKENDS["static"](host)
    greedy = SamplingParams(max_new_tokens=10, temperature=0.0)
    hf, ours = both(host, backend, PROMPTS, ROWS, greedy)
    assert_same(ours, hf)


def test_adapter_changes_reach_the_stacked_factors(host):
    backend = BACKENDS["static"](host)
    greedy = SamplingParams(max_new_tokens=8, temperature=0.0)
    before = both(host, backend, PROMPTS[:2], ["a", "b"], greedy)[1]
    host.set_adapter("tmp", random_genome(host, 5))
    try:
        hf, ours = both(host, backend, PROMPTS[:2], ["tmp", "b"], greedy)
        assert_same(ours, hf)
        with torch.no_grad():  # an optimizer step: in place, no notification
            for p in host.adapter_parameters("tmp"):
                p.mul_(-1.5)
        hf, ours = both(host, backend, PROMPTS[:2], ["tmp", "b"], greedy)
        assert_same(ours, hf)
        host.set_adapter("tmp", random_genome(host, 6))  # replaced: same id, new factors
        hf, ours = both(host, backend, PROMPTS[:2], ["tmp", "b"], greedy)
        assert_same(ours, hf)
    finally:
        host.remove_adapter("tmp")
    after = both(host, backend, PROMPTS[:2], ["a", "b"], greedy)[1]
    assert [g.token_ids for g in after] == [g.token_ids for g in before]


def test_fused_projections_share_the_model_weights_and_follow_them(tiny_coder_dir):
    host = with_adapters(AdapterHost(tiny_coder_dir))
    backend = BACKENDS["static"](host)
    attn = host.model.model.layers[0].self_attn
    fused = backend.decoder.layers[0].qkv.weight
    assert attn.q_proj.weight.data_ptr() == fused.data_ptr()  # a view: no second copy
    second = BACKENDS["static"](host)  # a second decoder shares the fused weights
    assert second.decoder.layers[0].qkv.weight is fused
    assert not backend.decoder.check_weights()
    greedy = SamplingParams(max_new_tokens=8, temperature=0.0)
    before = both(host, backend, PROMPTS, ROWS, greedy)[1]
    with torch.no_grad():  # new storage and new values, as after a move of the model
        for layer in host.model.model.layers:
            for proj in (layer.self_attn.k_proj, layer.mlp.up_proj):
                proj.weight.data = proj.weight.data.clone() * 1.5
    hf, ours = both(host, backend, PROMPTS, ROWS, greedy)
    assert_same(ours, hf)
    assert [g.token_ids for g in ours] != [g.token_ids for g in before]


def test_host_runs_the_static_backend_by_name(tiny_model_dir):
    host = AdapterHost(tiny_model_dir, backend="static")
    assert isinstance(host.backend, StaticBackend)
    host.add_adapter("a", random_genome(host, 0))
    out = host.generate(["ab", "abc"], ["a", None], SamplingParams(max_new_tokens=4, seed=0, n=2))
    assert len(out) == 4 and all(1 <= len(g.token_ids) <= 4 for g in out)


def test_compiled_backend_is_chosen_by_name(tiny_model_dir):
    host = AdapterHost(tiny_model_dir, backend="static_compiled")
    assert host.backend_name == "static_compiled"
    assert isinstance(host.backend, StaticBackend)
    assert hasattr(host.backend.decoder.step, "_torchdynamo_orig_callable")  # compiled
    assert not hasattr(BACKENDS["static"](host).decoder.step, "_torchdynamo_orig_callable")


def test_unsupported_architecture_names_the_hf_backend(tiny_model_dir):
    with pytest.raises(UnsupportedModelError, match="backend 'hf'"):
        AdapterHost(
            small_opt_model(),
            tokenizer=tiny_model_dir,
            target_modules=["q_proj", "v_proj"],
            backend="static",
        )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")
@pytest.mark.parametrize("compile_step", [False, True], ids=["eager_step", "compiled_step"])
def test_cuda_graphs_match_hf(tiny_coder_dir, compile_step):
    host = with_adapters(AdapterHost(tiny_coder_dir, device="cuda", dtype=torch.float32))
    backend = BACKENDS["static"](host, compile_step=compile_step)
    assert backend.use_graphs
    for params in (
        SamplingParams(max_new_tokens=12, temperature=0.0),
        SamplingParams(max_new_tokens=12, temperature=1.0, seed=4),
    ):
        hf, ours = both(host, backend, PROMPTS, ROWS, params)
        assert_same(ours, hf)
        # Replayed graphs (second call) give the same rows again.
        assert [g.token_ids for g in both(host, backend, PROMPTS, ROWS, params)[1]] == [
            g.token_ids for g in ours
        ]
