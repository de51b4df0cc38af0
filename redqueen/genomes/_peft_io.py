"""PEFT interchange: adapter folders on disk and adapter slots of a live ``PeftModel``."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from redqueen.genomes._errors import GenomeMismatchError

if TYPE_CHECKING:  # the genome class is handed in by its own methods: no import circle
    from redqueen.genomes._genome import LoRAGenome

CONFIG_FILE = "adapter_config.json"
WEIGHTS_FILE = "adapter_model.safetensors"
#: Prefix PEFT puts in front of module paths in saved state dicts and in ``named_modules``.
PEFT_PREFIX = "base_model.model."
#: safetensors metadata entry holding the module order (JSON list); other readers ignore it.
MODULE_ORDER_KEY = "redqueen.modules"
_KEY = re.compile(
    r"^(?:base_model\.model\.)?(?P<module>.+)\.lora_(?P<which>[AB])(?:\.[^.]+)?\.weight$"
)


def _peft_config(genome: LoRAGenome, base_model: str | None) -> Any:
    from peft import LoraConfig

    # Full module paths match exactly one module each, so the folder loads the same modules back
    # even when only some layers are adapted.
    return LoraConfig(
        r=genome.rank,
        lora_alpha=genome.alpha,
        target_modules=list(genome.modules),
        lora_dropout=0.0,
        bias="none",
        task_type="CAUSAL_LM",
        base_model_name_or_path=base_model if base_model is not None else genome.base_model,
    )


def write_peft_folder(
    genome: LoRAGenome, path: str | Path, *, base_model: str | None = None
) -> Path:
    """Write ``genome`` as a PEFT LoRA folder; see :meth:`LoRAGenome.save_peft`."""
    from safetensors.torch import save_file

    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, Tensor] = {}
    for name, (a, b) in genome.items():
        tensors[f"{PEFT_PREFIX}{name}.lora_A.weight"] = a.detach().to("cpu").contiguous()
        tensors[f"{PEFT_PREFIX}{name}.lora_B.weight"] = b.detach().to("cpu").contiguous()
    # safetensors sorts keys; the metadata keeps the genome's module order for the round trip.
    metadata = {"format": "pt", MODULE_ORDER_KEY: json.dumps(genome.modules)}
    save_file(tensors, str(folder / WEIGHTS_FILE), metadata=metadata)
    _peft_config(genome, base_model).save_pretrained(str(folder))
    return folder


def _finite_float(value: int | float, where: Path) -> float:
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{where}: lora_alpha must be a finite number, got {value}") from None


def read_peft_folder(path: str | Path, genome_class: type[LoRAGenome]) -> LoRAGenome:
    """Read a PEFT LoRA folder; see :meth:`LoRAGenome.from_peft`.

    Raises:
        FileNotFoundError: If the folder, its config or its safetensors file is missing.
        ValueError: If the config or weights are unreadable or describe an adapter a genome cannot
            hold (per-module ranks, DoRA, embeddings); the message names the file.
    """
    from safetensors import SafetensorError, safe_open
    from safetensors.torch import load_file

    folder = Path(path)
    cfg_path, weights_path = folder / CONFIG_FILE, folder / WEIGHTS_FILE
    for p in (cfg_path, weights_path):
        if not p.is_file():
            raise FileNotFoundError(f"PEFT adapter file not found: {p}")
    try:
        cfg = json.loads(cfg_path.read_text())
        rank, alpha = cfg["r"], cfg["lora_alpha"]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, RecursionError) as err:
        raise ValueError(f"{cfg_path}: not a LoRA adapter config ({err})") from None
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise ValueError(f"{cfg_path}: r must be an integer, got {rank!r}")
    if rank < 1:
        raise ValueError(f"{cfg_path}: r must be a positive integer, got {rank}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise ValueError(f"{cfg_path}: lora_alpha must be a number, got {alpha!r}")
    base = cfg.get("base_model_name_or_path")
    if base is not None and not isinstance(base, str):
        raise ValueError(
            f"{cfg_path}: base_model_name_or_path must be a string or null, got {base!r}"
        )
    targets = cfg.get("target_modules")
    if not (
        targets is None
        or isinstance(targets, str)
        or (isinstance(targets, list) and all(isinstance(t, str) for t in targets))
    ):
        raise ValueError(
            f"{cfg_path}: target_modules must be a list of module names or a pattern, got {targets!r}"
        )
    alpha = _finite_float(alpha, cfg_path)
    if not math.isfinite(alpha) or alpha <= 0:
        raise ValueError(f"{cfg_path}: lora_alpha must be a positive number, got {alpha}")
    if cfg.get("peft_type", "LORA") != "LORA":
        raise ValueError(
            f"{cfg_path}: peft_type is {cfg.get('peft_type')!r}, only LORA adapters are genomes"
        )
    if cfg.get("rank_pattern") or cfg.get("alpha_pattern"):
        raise ValueError(
            f"{cfg_path}: per-module rank_pattern/alpha_pattern is not supported (one rank per genome)"
        )
    if cfg.get("use_dora"):
        raise ValueError(f"{cfg_path}: DoRA adapters are not supported")
    if cfg.get("use_rslora"):
        alpha = alpha * math.sqrt(rank)  # rsLoRA scales by alpha / sqrt(r); keep dW identical.
    try:
        tensors = load_file(str(weights_path))
        with safe_open(str(weights_path), framework="pt") as handle:
            order = json.loads((handle.metadata() or {}).get(MODULE_ORDER_KEY, "[]"))
    except (SafetensorError, OSError, ValueError, RecursionError) as err:
        raise ValueError(f"{weights_path}: unreadable safetensors file ({err})") from None
    if not (isinstance(order, list) and all(isinstance(name, str) for name in order)):
        raise ValueError(
            f"{weights_path}: metadata {MODULE_ORDER_KEY} must be a JSON list of module names"
        )
    pairs: dict[str, dict[str, Tensor]] = {}
    for key, value in tensors.items():
        match = _KEY.match(key)
        if match is None:
            raise ValueError(
                f"{weights_path}: unsupported tensor {key!r} (only lora_A / lora_B weights)"
            )
        pairs.setdefault(match["module"], {})[match["which"]] = value
    ranked = {name: i for i, name in enumerate(order)}
    factors = {}
    for module, pair in sorted(pairs.items(), key=lambda kv: ranked.get(kv[0], len(ranked))):
        if set(pair) != {"A", "B"}:
            raise ValueError(
                f"{weights_path}: module {module!r} lacks lora_{'B' if 'A' in pair else 'A'}"
            )
        factors[module] = (pair["A"], pair["B"])
    try:
        return genome_class(factors, rank=rank, alpha=alpha, base_model=base)
    except ValueError as err:
        raise ValueError(f"{weights_path}: {err}") from None


def _lora_layers(model: nn.Module, adapter_name: str) -> dict[str, nn.Module]:
    from peft.tuners.lora import LoraLayer

    found = {}
    for full, module in model.named_modules():
        if isinstance(module, LoraLayer) and adapter_name in module.lora_A:
            found[full[len(PEFT_PREFIX) :] if full.startswith(PEFT_PREFIX) else full] = module
    return found


def extract_from_model(
    model: nn.Module, genome_class: type[LoRAGenome], adapter_name: str = "default"
) -> LoRAGenome:
    """Copy one adapter slot of a live PEFT model into a genome; see :meth:`LoRAGenome.from_peft_model`.

    Raises:
        ValueError: If the model has no LoRA layers for ``adapter_name`` or they differ in rank/alpha.
    """
    layers = _lora_layers(model, adapter_name)
    if not layers:
        raise ValueError(f"model has no LoRA adapter named {adapter_name!r}")
    ranks = {layer.r[adapter_name] for layer in layers.values()}
    alphas = {
        float(layer.scaling[adapter_name]) * layer.r[adapter_name] for layer in layers.values()
    }
    if len(ranks) != 1 or max(alphas) - min(alphas) > 1e-6 * max(alphas):
        raise ValueError(
            f"adapter {adapter_name!r} has per-module ranks {sorted(ranks)} or alphas; a genome needs one of each"
        )
    factors = {
        name: (
            layer.lora_A[adapter_name].weight.detach().clone(),
            layer.lora_B[adapter_name].weight.detach().clone(),
        )
        for name, layer in layers.items()
    }
    config = getattr(model, "peft_config", {}).get(adapter_name)
    base = getattr(config, "base_model_name_or_path", None)
    return genome_class(factors, rank=ranks.pop(), alpha=alphas.pop(), base_model=base)


def load_into_model(
    genome: LoRAGenome, peft_model: nn.Module, adapter_name: str = "default"
) -> None:
    """Copy ``genome`` into an adapter slot of a live PEFT model; see :meth:`LoRAGenome.load_into`.

    The slot is created with :meth:`peft.PeftModel.add_adapter` if it does not exist. Factors are
    copied in place (cast to the slot's dtype and device), so optimizers holding the slot's
    parameters keep working.

    Raises:
        GenomeMismatchError: If the slot's modules, shapes, rank or alpha differ from the genome's.
    """
    layers = _lora_layers(peft_model, adapter_name)
    if not layers:
        peft_model.add_adapter(adapter_name, _peft_config(genome, None))
        layers = _lora_layers(peft_model, adapter_name)
    missing = [n for n in genome.modules if n not in layers]
    extra = [n for n in layers if n not in genome.shapes]
    if missing or extra:
        which = f"model lacks {missing[0]!r}" if missing else f"genome lacks {extra[0]!r}"
        raise GenomeMismatchError(
            f"adapter {adapter_name!r} and genome adapt different modules: {which}"
        )
    for name, (a, b) in genome.items():
        layer = layers[name]
        la, lb = layer.lora_A[adapter_name].weight, layer.lora_B[adapter_name].weight
        if la.shape != a.shape or lb.shape != b.shape:
            raise GenomeMismatchError(
                f"module {name!r}: adapter {adapter_name!r} has A {tuple(la.shape)}, B {tuple(lb.shape)}; "
                f"genome has A {tuple(a.shape)}, B {tuple(b.shape)}"
            )
        if not math.isclose(float(layer.scaling[adapter_name]), genome.scaling, rel_tol=1e-6):
            raise GenomeMismatchError(
                f"module {name!r}: adapter {adapter_name!r} scales by {layer.scaling[adapter_name]:g}, genome by {genome.scaling:g}"
            )
        with torch.no_grad():
            la.copy_(a)
            lb.copy_(b)


def lora_shapes(
    model: nn.Module, target_modules: str | Sequence[str]
) -> dict[str, tuple[int, int]]:
    """Shapes ``(out, in)`` of the linear modules of a model that LoRA would adapt.

    Matching follows PEFT: a module matches a list entry when its path equals it or ends with
    ``"." + entry``; a single string is a regular expression that must match the whole path.
    Works on a plain Hugging Face model or a ``PeftModel`` (paths are reported without the
    ``base_model.model.`` prefix either way).

    Raises:
        ValueError: If nothing matches, naming the targets.
    """
    shapes: dict[str, tuple[int, int]] = {}
    for full, module in model.named_modules():
        name = full[len(PEFT_PREFIX) :] if full.startswith(PEFT_PREFIX) else full
        if ".lora_" in name or name.endswith(".base_layer") or ".base_layer." in name:
            continue
        if isinstance(target_modules, str):
            hit = re.fullmatch(target_modules, name) is not None
        else:
            hit = any(name == t or name.endswith("." + t) for t in target_modules)
        if not hit:
            continue
        out_f, in_f = getattr(module, "out_features", None), getattr(module, "in_features", None)
        if isinstance(out_f, int) and isinstance(in_f, int):
            shapes[name] = (out_f, in_f)
    if not shapes:
        raise ValueError(
            f"lora_shapes: no linear module of {type(model).__name__} matches target_modules={target_modules!r}"
        )
    return shapes
