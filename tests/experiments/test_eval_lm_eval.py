"""Exported members are what lm-evaluation-harness's ``--model_args pretrained=BASE,peft=ADAPTER``
loads: a PEFT folder whose config names a loadable base model and whose tensor names are PEFT's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from redqueen.experiments.rundir import export_adapter
from redqueen.genomes import LoRAGenome, lora_shapes

peft = pytest.importorskip("peft")

TARGETS = ["q_proj", "v_proj", "down_proj"]
KEY = re.compile(r"^base_model\.model\.(?P<module>.+)\.lora_(?P<which>[AB])\.weight$")


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path, LoRAGenome]:
    root = tmp_path_factory.mktemp("lm_eval")
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    base_dir = root / "base"
    LlamaForCausalLM(config).save_pretrained(base_dir)
    shapes = lora_shapes(LlamaForCausalLM(config), TARGETS)
    genome = LoRAGenome.random(
        shapes, rank=4, alpha=8.0, rng=torch.Generator().manual_seed(1), init="gaussian"
    )
    run = root / "run"
    (run / "population").mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump({"model": {"name": str(base_dir)}}))
    genome.save_peft(run / "population" / "student-3", base_model=str(base_dir))
    folder = export_adapter(run, "student-3", root / "exported" / "student-3")
    return base_dir, folder, genome


def test_config_names_a_loadable_base_model(exported) -> None:
    base_dir, folder, genome = exported
    config = json.loads((folder / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA"
    assert config["r"] == genome.rank and config["lora_alpha"] == genome.alpha
    base = Path(config["base_model_name_or_path"])
    assert base.is_dir() and base.resolve() == base_dir.resolve()
    AutoModelForCausalLM.from_pretrained(base)  # what pretrained=BASE does


def test_tensor_names_and_shapes_are_peft_s(exported) -> None:
    _, folder, genome = exported
    tensors = load_file(str(folder / "adapter_model.safetensors"))
    seen: dict[str, set[str]] = {}
    for key, tensor in tensors.items():
        match = KEY.match(key)
        assert match, key
        module, which = match["module"], match["which"]
        out_features, in_features = genome.shape(module)
        expected = (genome.rank, in_features) if which == "A" else (out_features, genome.rank)
        assert tuple(tensor.shape) == expected, key
        seen.setdefault(module, set()).add(which)
    assert sorted(seen) == sorted(genome.modules)
    assert all(kinds == {"A", "B"} for kinds in seen.values())


def test_peft_loads_it_as_the_harness_does(exported) -> None:
    base_dir, folder, genome = exported
    model = peft.PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), folder)
    state = peft.get_peft_model_state_dict(model)
    on_disk = load_file(str(folder / "adapter_model.safetensors"))
    assert set(state) == set(on_disk)  # nothing missing, nothing unexpected
    name = genome.modules[0]
    layer = model.get_submodule(f"base_model.model.{name}")
    torch.testing.assert_close(layer.get_delta_weight("default"), genome.delta_weight(name))
