"""PEFT interchange and the PEFT oracle: folders, live adapter slots, and svd merging."""

from __future__ import annotations

import copy
import json
import warnings

import pytest
import torch
from peft import LoraConfig, PeftModel, get_peft_model

from redqueen.evo.operators import crossover
from redqueen.genomes import GenomeMismatchError, LoRAGenome, lora_shapes, weighted_svd
from tests.genomes.conftest import TARGETS


def genomes_for(model, seeds=(0, 1), rank=4, alpha=8.0):
    shapes = lora_shapes(model, TARGETS)
    rng = torch.Generator().manual_seed(seeds[0])
    out = []
    for _ in seeds:
        out.append(
            LoRAGenome.random(shapes, rank=rank, alpha=alpha, rng=rng, init="gaussian", std=0.2)
        )
    return out


def peft_wrap(model, rank=4, alpha=8.0, name="p0"):
    config = LoraConfig(r=rank, lora_alpha=alpha, target_modules=list(TARGETS), lora_dropout=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_peft_model(model, config, adapter_name=name)


def logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits


def test_lora_shapes_of_a_llama(llama):
    shapes = lora_shapes(llama, TARGETS)
    assert len(shapes) == 2 * 7
    assert shapes["model.layers.0.self_attn.q_proj"] == (32, 32)
    assert shapes["model.layers.1.self_attn.k_proj"] == (16, 32)  # 2 kv heads of dim 8
    assert shapes["model.layers.0.mlp.down_proj"] == (32, 48)
    assert lora_shapes(llama, r".*layers\.1\.mlp\.up_proj") == {
        "model.layers.1.mlp.up_proj": (48, 32)
    }
    # A wrapped model reports the same paths, without PEFT's prefix or its inner layers.
    assert lora_shapes(peft_wrap(copy.deepcopy(llama)), TARGETS) == shapes
    with pytest.raises(ValueError, match="no linear module.*nonexistent"):
        lora_shapes(llama, ["nonexistent"])


def test_svd_merge_matches_peft_add_weighted_adapter_svd(llama):
    g1, g2 = genomes_for(llama)
    g2 = g2.replace(alpha=16.0)  # parents may scale differently; PEFT applies each scaling
    model = peft_wrap(llama)
    g1.load_into(model, "p0")
    g2.load_into(model, "p1")
    model.add_weighted_adapter(["p0", "p1"], [0.7, 0.3], "merged", combination_type="svd")
    theirs = LoRAGenome.from_peft_model(model, "merged")
    ours = crossover("svd_merge", [g1, g2], weights=[0.7, 0.3], rng=torch.Generator())
    assert ours.rank == g1.rank and ours.alpha == g1.alpha
    for name in g1.modules:
        ref = theirs.delta_weight(name).double()
        err = float((ours.delta_weight(name).double() - ref).norm() / ref.norm())
        assert err < 1e-3, name


def test_saved_child_loads_in_peft_with_the_same_logits_as_in_memory(llama, tmp_path):
    g1, g2 = genomes_for(llama)
    child = weighted_svd([g1, g2], [0.5, 0.5])
    folder = child.save_peft(tmp_path / "child", base_model="tiny-llama")
    config = json.loads((folder / "adapter_config.json").read_text())
    assert config["r"] == 4 and config["lora_alpha"] == 8.0
    assert config["base_model_name_or_path"] == "tiny-llama"

    ids = torch.tensor([[1, 5, 9, 2, 7, 3]])
    base_logits = logits(llama, ids)
    from_disk = PeftModel.from_pretrained(copy.deepcopy(llama), str(folder)).eval()
    in_memory = peft_wrap(copy.deepcopy(llama), name="slot").eval()
    child.load_into(in_memory, "slot")
    disk_logits, memory_logits = logits(from_disk, ids), logits(in_memory, ids)
    torch.testing.assert_close(disk_logits, memory_logits, rtol=1e-5, atol=1e-5)
    assert float((disk_logits - base_logits).abs().max()) > 1e-3  # the adapter does something

    back = LoRAGenome.from_peft(folder)
    assert back.modules == child.modules and back.base_model == "tiny-llama"
    for name in child.modules:
        torch.testing.assert_close(back.factors(name), child.factors(name))


def test_extract_and_load_round_trip_in_memory(llama):
    (g,) = genomes_for(llama, seeds=(3,))
    model = peft_wrap(llama)
    g.load_into(model, "p0")
    back = LoRAGenome.from_peft_model(model, "p0")
    assert back.rank == 4 and back.alpha == 8.0 and back.modules == g.modules
    for name in g.modules:
        torch.testing.assert_close(back.factors(name), g.factors(name))
    g.load_into(model, "fresh")  # a missing slot is created
    assert "fresh" in model.peft_config
    with pytest.raises(ValueError, match="no LoRA adapter named 'nope'"):
        LoRAGenome.from_peft_model(model, "nope")


def test_load_into_rejects_mismatched_genomes(llama):
    (g,) = genomes_for(llama, seeds=(0,))
    model = peft_wrap(llama)
    other_rank = LoRAGenome.random(g.shapes, rank=2, alpha=8.0, rng=torch.Generator())
    with pytest.raises(GenomeMismatchError, match=r"A \(4, \d+\).*A \(2, \d+\)"):
        other_rank.load_into(model, "p0")
    other_alpha = LoRAGenome.random(g.shapes, rank=4, alpha=16.0, rng=torch.Generator())
    with pytest.raises(GenomeMismatchError, match="scales by 2.*genome by 4"):
        other_alpha.load_into(model, "p0")
    partial = LoRAGenome({n: g.factors(n) for n in g.modules[:3]}, rank=4, alpha=8.0)
    with pytest.raises(GenomeMismatchError, match="genome lacks"):
        partial.load_into(model, "p0")


def test_from_peft_errors_name_the_file(tmp_path, llama):
    with pytest.raises(FileNotFoundError, match="adapter_config.json"):
        LoRAGenome.from_peft(tmp_path / "missing")
    (g,) = genomes_for(llama, seeds=(0,))
    folder = g.save_peft(tmp_path / "ok")
    (folder / "adapter_model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="adapter_model.safetensors"):
        LoRAGenome.from_peft(folder)
    (folder / "adapter_config.json").write_text("{broken")
    with pytest.raises(ValueError, match="adapter_config.json"):
        LoRAGenome.from_peft(folder)


def test_rslora_folder_keeps_the_same_update(tmp_path, llama):
    (g,) = genomes_for(llama, seeds=(0,))
    folder = g.save_peft(tmp_path / "rs")
    config = json.loads((folder / "adapter_config.json").read_text())
    config["use_rslora"] = True  # PEFT then scales by alpha / sqrt(r) instead of alpha / r
    (folder / "adapter_config.json").write_text(json.dumps(config))
    back = LoRAGenome.from_peft(folder)
    name = g.modules[0]
    torch.testing.assert_close(back.delta_weight(name), g.delta_weight(name) * 4**0.5)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("r", "4", "r must be an integer"),
        ("r", 4.5, "r must be an integer"),
        ("r", True, "r must be an integer"),
        ("lora_alpha", "8", "lora_alpha must be a number"),
        ("lora_alpha", 10**400, "lora_alpha must be a finite number"),
        ("target_modules", 3, "target_modules must be"),
        ("target_modules", [1, 2], "target_modules must be"),
        ("r", 0, "r must be a positive integer"),
        ("r", -4, "r must be a positive integer"),
        ("lora_alpha", 0, "lora_alpha must be a positive number"),
        ("lora_alpha", -8.0, "lora_alpha must be a positive number"),
        ("lora_alpha", float("nan"), "lora_alpha must be a positive number"),
        ("base_model_name_or_path", 5, "base_model_name_or_path must be a string or null"),
        ("base_model_name_or_path", ["m"], "base_model_name_or_path must be a string or null"),
    ],
)
def test_from_peft_refuses_config_values_of_the_wrong_type(tmp_path, llama, key, value, message):
    (g,) = genomes_for(llama, seeds=(0,))
    folder = g.save_peft(tmp_path / "bad")
    config = json.loads((folder / "adapter_config.json").read_text())
    config[key] = value  # int() and float() would have read "4", 4.5 and True as a rank
    (folder / "adapter_config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=f"adapter_config.json: {message}"):
        LoRAGenome.from_peft(folder)


@pytest.mark.parametrize("order", ["5", "null", "[[1]]", "[" * 100_000 + "]" * 100_000])
def test_from_peft_refuses_a_module_order_that_is_not_a_list_of_names(tmp_path, llama, order):
    from safetensors.torch import load_file, save_file

    (g,) = genomes_for(llama, seeds=(0,))
    folder = g.save_peft(tmp_path / "bad")
    weights = folder / "adapter_model.safetensors"
    save_file(load_file(weights), weights, metadata={"format": "pt", "redqueen.modules": order})
    with pytest.raises(ValueError, match="adapter_model.safetensors"):
        LoRAGenome.from_peft(folder)


def test_from_peft_refuses_a_config_nested_too_deeply(tmp_path, llama):
    (g,) = genomes_for(llama, seeds=(0,))
    folder = g.save_peft(tmp_path / "bad")
    (folder / "adapter_config.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="adapter_config.json: not a LoRA adapter config"):
        LoRAGenome.from_peft(folder)
