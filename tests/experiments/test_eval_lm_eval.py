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


def _recipe_blocks() -> dict[str, str]:
    """The offline recipe's fenced blocks in LM_EVAL.md: data (bash), task (yaml), run (bash)."""
    text = (Path(__file__).parents[2] / "redqueen/experiments/evaluation/LM_EVAL.md").read_text()
    section = text.split("## 2b.", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)
    assert [kind for kind, _ in blocks] == ["bash", "yaml", "bash"]
    return {"data": blocks[0][1], "task": blocks[1][1], "run": blocks[2][1]}


@pytest.mark.slow
def test_offline_recipe_runs_the_harness_on_an_exported_tiny_coder_member(tmp_path, monkeypatch) -> None:
    pytest.importorskip("lm_eval", reason="lm-evaluation-harness is not installed (pip install lm-eval)")
    import shutil
    import subprocess

    if shutil.which("lm_eval") is None:
        pytest.skip("the lm_eval command is not on PATH")
    from redqueen.assets import tiny_coder_path

    blocks = _recipe_blocks()
    base = AutoModelForCausalLM.from_pretrained(tiny_coder_path())
    genome = LoRAGenome.random(lora_shapes(base, ["q_proj", "v_proj"]), rank=2, alpha=4.0,
                               rng=torch.Generator().manual_seed(3), init="gaussian")
    run = tmp_path / "run"
    (run / "population").mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump({"model": {"name": "tiny-coder"}}))
    genome.save_peft(run / "population" / "student-0007", base_model="tiny-coder")
    monkeypatch.chdir(tmp_path)
    export_adapter(run, "student-0007", tmp_path / "exported" / "student-0007")
    subprocess.run(["bash", "-euc", blocks["data"]], check=True, timeout=120)
    lines = (tmp_path / "tasks" / "code_output.jsonl").read_text().splitlines()
    assert len(lines) > 50 and {"prompt", "output"} <= set(json.loads(lines[0]))
    (tmp_path / "tasks" / "redqueen_code_output.yaml").write_text(blocks["task"])
    command = blocks["run"].rstrip().replace("results/student-0007", "results/student-0007 --limit 3")
    done = subprocess.run(["bash", "-euc", command], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    results = list((tmp_path / "results").rglob("results_*.json"))
    assert results, done.stdout[-2000:]
    scores = json.loads(results[0].read_text())["results"]["redqueen_code_output"]
    assert 0.0 <= scores["exact_match,none"] <= 1.0
