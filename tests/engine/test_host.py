"""AdapterHost: adapters in and out, mixed-batch generation against single runs and PEFT."""

from __future__ import annotations

import pytest
import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM

from redqueen.engine import AdapterHost, Generation, SamplingParams
from redqueen.genomes import LoRAGenome, lora_shapes
from tests.engine.conftest import small_opt_model

PROMPTS = ["def f(x):", "hello world, this is longer", "ab", "x = [1, 2]"]
GREEDY = SamplingParams(max_new_tokens=10, temperature=0.0)


def random_genome(host: AdapterHost, seed: int, *, rank: int = 4) -> LoRAGenome:
    rng = torch.Generator().manual_seed(seed)
    return LoRAGenome.random(
        host.module_shapes, rank=rank, alpha=2.0 * rank, rng=rng, init="gaussian", std=0.3
    )


@pytest.fixture(scope="module")
def host(tiny_coder_dir) -> AdapterHost:
    host = AdapterHost(tiny_coder_dir)
    for i, name in enumerate(["a", "b", "c"]):
        host.add_adapter(name, random_genome(host, i, rank=4 if name != "c" else 2))
    return host


def test_module_shapes_cover_all_linear_projections(host, tiny_coder_dir):
    base = AutoModelForCausalLM.from_pretrained(tiny_coder_dir)
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    assert host.module_shapes == lora_shapes(base, targets)
    assert len(host.module_shapes) == base.config.num_hidden_layers * 7
    hidden, mlp = base.config.hidden_size, base.config.intermediate_size
    assert host.module_shapes["model.layers.0.mlp.down_proj"] == (hidden, mlp)


def test_mixed_batch_matches_each_adapter_alone(host):
    adapter_ids = ["a", "b", None, "c"]
    mixed = host.generate(PROMPTS, adapter_ids, GREEDY)
    assert len(mixed) == len(PROMPTS)
    for prompt, adapter_id, got in zip(PROMPTS, adapter_ids, mixed, strict=True):
        alone = host.generate([prompt], [adapter_id], GREEDY)[0]
        assert got.token_ids == alone.token_ids
        assert got.text == alone.text
        # Padding and batched products change float rounding, not the tokens.
        assert got.logprobs == pytest.approx(alone.logprobs, abs=5e-3)
        assert (
            len(got.token_ids) == GREEDY.max_new_tokens or got.token_ids[-1] in host.eos_token_ids
        )
    # The adapters really change the output: the same prompt differs across adapters.
    same_prompt = host.generate([PROMPTS[0]] * 4, ["a", "b", "c", None], GREEDY)
    assert len({tuple(g.token_ids) for g in same_prompt}) == 4


def test_mixed_batch_matches_peft_adapter_names(host, tiny_coder_dir, tmp_path):
    base = AutoModelForCausalLM.from_pretrained(tiny_coder_dir)
    peft_model = None
    for name in ["a", "b", "c"]:
        folder = host.genome(name).save_peft(tmp_path / name)
        if peft_model is None:
            peft_model = PeftModel.from_pretrained(base, folder, adapter_name=name)
        else:
            peft_model.load_adapter(folder, adapter_name=name)
    peft_model.eval()
    adapter_ids = ["a", "b", None, "c"]
    ours = host.generate(PROMPTS, adapter_ids, GREEDY)
    host.tokenizer.padding_side = "left"
    batch = host.tokenizer(PROMPTS, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = peft_model.generate(
            **batch,
            adapter_names=[a if a is not None else "__base__" for a in adapter_ids],
            max_new_tokens=GREEDY.max_new_tokens,
            do_sample=False,
            pad_token_id=host.pad_token_id,
            eos_token_id=sorted(host.eos_token_ids),
            output_scores=True,
            return_dict_in_generate=True,
        )
    width = batch["input_ids"].shape[1]
    assert sum(len(g.token_ids) for g in ours) >= 20  # long enough to be a real comparison
    for row, gen in enumerate(ours):
        assert gen.token_ids == out.sequences[row, width : width + len(gen.token_ids)].tolist()
        peft_logprobs = [
            torch.log_softmax(step[row].float(), -1)[tok].item()
            for step, tok in zip(out.scores, gen.token_ids, strict=False)
        ]
        assert gen.logprobs == pytest.approx(peft_logprobs, abs=5e-3)


def test_add_replace_remove(tiny_coder_dir):
    host = AdapterHost(tiny_coder_dir)
    first, second = random_genome(host, 10), random_genome(host, 11)
    host.add_adapter("x", first)
    with pytest.raises(ValueError, match="already exists"):
        host.add_adapter("x", second)
    before = host.generate(PROMPTS[:1], ["x"], GREEDY)[0]
    host.set_adapter("x", second)
    replaced = host.generate(PROMPTS[:1], ["x"], GREEDY)[0]
    fresh = AdapterHost(tiny_coder_dir)
    fresh.add_adapter("y", second)
    assert replaced.token_ids == fresh.generate(PROMPTS[:1], ["y"], GREEDY)[0].token_ids
    assert replaced.token_ids != before.token_ids
    assert torch.equal(
        host.genome("x").factors(second.modules[0])[1], second.factors(second.modules[0])[1]
    )
    host.remove_adapter("x")
    assert host.adapter_ids == []
    with pytest.raises(KeyError, match="no adapter 'x'"):
        host.generate(PROMPTS[:1], ["x"], GREEDY)
    with pytest.raises(KeyError):
        host.genome("x")
    base_only = host.generate(PROMPTS[:1], [None], GREEDY)[0]
    assert base_only.token_ids == fresh.generate(PROMPTS[:1], [None], GREEDY)[0].token_ids


def test_genome_export_is_a_copy_with_partial_modules(tiny_coder_dir):
    host = AdapterHost(tiny_coder_dir)
    full = random_genome(host, 3)
    names = [m for m in full.modules if m.endswith("q_proj")]
    partial = LoRAGenome({m: full.factors(m) for m in names}, rank=full.rank, alpha=full.alpha)
    host.add_adapter("q", partial)
    exported = host.genome("q")
    assert exported.modules == names and exported.rank == full.rank and exported.alpha == full.alpha
    assert exported.base_model == host.model_path
    a, _ = exported.factors(names[0])
    a.add_(1.0)  # editing the export leaves the host untouched
    assert torch.equal(host.genome("q").factors(names[0])[0], full.factors(names[0])[0])


def test_bad_genomes_are_rejected_with_the_module_named(tiny_coder_dir):
    host = AdapterHost(tiny_coder_dir)
    wrong = LoRAGenome(
        {"model.layers.0.mlp.nope": (torch.zeros(2, 192), torch.zeros(512, 2))}, rank=2, alpha=2
    )
    with pytest.raises(ValueError, match="mlp.nope"):
        host.add_adapter("w", wrong)
    name = "model.layers.0.self_attn.q_proj"
    misshaped = LoRAGenome({name: (torch.zeros(2, 191), torch.zeros(192, 2))}, rank=2, alpha=2)
    with pytest.raises(ValueError, match="q_proj"):
        host.add_adapter("w", misshaped)
    assert host.adapter_ids == []


def test_sampling_is_seeded_and_respects_stops_budgets_and_n(host):
    params = SamplingParams(max_new_tokens=12, temperature=0.9, top_p=0.95, seed=7, n=2)
    first = host.generate(PROMPTS[:2], ["a", "b"], params)
    again = host.generate(PROMPTS[:2], ["a", "b"], params)
    assert len(first) == 4 and [g.token_ids for g in first] == [g.token_ids for g in again]
    assert first[0].prompt_ids == first[1].prompt_ids != first[2].prompt_ids
    assert first[0].token_ids != first[1].token_ids  # the n samples of one prompt differ

    # A row's sample depends on its adapter, prompt, repeat and the seed, not on its neighbours.
    alone = host.generate(PROMPTS[1:2], ["b"], params)
    assert [g.token_ids for g in alone] == [g.token_ids for g in first[2:]]

    # A stop string taken from an unconstrained sample ends that sample right there.
    free = host.generate(PROMPTS[:1], ["a"], SamplingParams(max_new_tokens=12, temperature=0))[0]
    stop = free.text[3:5]
    cut = host.generate(
        PROMPTS[:1], ["a"], SamplingParams(max_new_tokens=12, temperature=0, stop=(stop,))
    )[0]
    assert cut.finished and cut.text == free.text[: free.text.find(stop)]
    assert stop in host.tokenizer.decode(cut.token_ids)
    assert cut.token_ids == free.token_ids[: len(cut.token_ids)] and len(cut.token_ids) < 12

    rows = [SamplingParams(max_new_tokens=k, temperature=0) for k in (3, 7)]
    budgets = host.generate(PROMPTS[:2], ["a", None], rows)
    assert [len(g.token_ids) for g in budgets] == [3, 7]
    assert all(len(g.logprobs) == len(g.token_ids) and not g.finished for g in budgets)


def test_eos_ends_a_row(tiny_coder_dir):
    host = AdapterHost(tiny_coder_dir)
    free = host.generate(PROMPTS[:1], [None], GREEDY)[0]
    host.eos_token_ids = {free.token_ids[4]}
    ended = host.generate(PROMPTS[:1], [None], GREEDY)[0]
    first = free.token_ids.index(free.token_ids[4])
    assert ended.finished and ended.token_ids == free.token_ids[: first + 1]


def test_generate_validates_its_arguments(host):
    with pytest.raises(ValueError, match="adapter_ids"):
        host.generate(PROMPTS, ["a"], GREEDY)
    with pytest.raises(ValueError, match="seed"):
        host.generate(PROMPTS[:2], ["a", "b"], [SamplingParams(seed=1), SamplingParams(seed=2)])
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0.0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        SamplingParams(max_new_tokens=0)
    assert host.generate([], [], GREEDY) == []
    assert isinstance(host.generate(["a"], [None], GREEDY)[0], Generation)


def test_batches_larger_than_max_batch_size_are_chunked(tiny_coder_dir, host):
    small = AdapterHost(tiny_coder_dir, max_batch_size=3)
    for name in ["a", "b", "c"]:
        small.add_adapter(name, host.genome(name))
    adapter_ids = ["a", "b", None, "c"]
    chunked = small.generate(PROMPTS, adapter_ids, GREEDY)
    whole = host.generate(PROMPTS, adapter_ids, GREEDY)
    assert [g.token_ids for g in chunked] == [g.token_ids for g in whole]


def test_auto_backend_is_static_for_llama_models_and_hf_for_others(tiny_model_dir):
    assert AdapterHost(tiny_model_dir).backend_name == "static"
    assert AdapterHost(tiny_model_dir, backend="hf").backend_name == "hf"
    other = AdapterHost(
        small_opt_model(), tokenizer=tiny_model_dir, target_modules=["q_proj", "v_proj"]
    )
    assert other.backend_name == "hf"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the CUDA default needs a CUDA device")
def test_auto_backend_is_static_on_cuda_and_decodes_as_hf_does(tiny_model_dir):
    # float32, so that the two decoders' tokens agree exactly (bf16 rounding can flip an argmax).
    auto = AdapterHost(tiny_model_dir, device="cuda", dtype=torch.float32)
    hf = AdapterHost(tiny_model_dir, device="cuda", dtype=torch.float32, backend="hf")
    assert auto.backend_name == "static"
    for h in (auto, hf):
        h.add_adapter("a", random_genome(h, 0))
    rows = ["a", None, "a", None]
    assert [g.token_ids for g in auto.generate(PROMPTS, rows, GREEDY)] == [
        g.token_ids for g in hf.generate(PROMPTS, rows, GREEDY)
    ]
