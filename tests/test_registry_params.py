"""Registries know their entries: parameters read from typed signatures or given as a model,
needs declared, parameter mappings validated with one-line errors naming the key."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from redqueen._registry import Needs, ParameterError, Registry


def _error(registry: Registry, name: str, params: dict) -> str:
    with pytest.raises(ParameterError) as info:
        registry.validate(name, params)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_typed_signature_declares_parameters_ranges_and_defaults():
    reg: Registry = Registry("test-typed", context=("rng",))

    @reg.register("scaled")
    def scaled(x, *, rng, scale: Annotated[float, Field(gt=0)] = 1.0, steps: int = 3):
        """Scale a thing."""
        return x

    assert set(reg.params("scaled").model_fields) == {"scale", "steps"}  # rng is the caller's
    assert reg.validate("scaled", {"scale": 2, "steps": "4"}) == {"scale": 2.0, "steps": 4}
    assert reg.validate("scaled", {}) == {}
    assert _error(reg, "scaled", {"scal": 2}) == "scal: unknown parameter (known: scale, steps)"
    assert _error(reg, "scaled", {"scale": 0}).startswith("scale: input should be greater than 0")
    assert _error(reg, "scaled", {"steps": 1.5}).startswith("steps: input should be a valid integer")
    pasted = _error(reg, "scaled", {"steps": "x" * 100_000})  # once, every character of it
    assert pasted.endswith(f"(got '{'x' * 59}... (100002 characters))"), pasted[:200]
    assert reg.describe_params("scaled") == ["scale: float = 1.0 (> 0)", "steps: int = 3"]


def test_an_explicit_model_and_declared_needs():
    reg: Registry = Registry("test-explicit", needs=Needs(arity=(1, 1)))

    class Settings(BaseModel):
        rate: Annotated[float, Field(ge=0, le=1)] = 0.5

    @reg.register("ruled", params=Settings, needs=Needs(arity=(2, None), min_objectives=2))
    def ruled(*args, **kwargs):
        return None

    @reg.register("plain")
    def plain(x, **kwargs):
        return None

    assert reg.params("ruled") is Settings
    assert _error(reg, "ruled", {"rate": 2}).startswith("rate: input should be less than or equal to 1")
    assert reg.needs("ruled") == Needs(arity=(2, None), min_objectives=2)
    assert reg.needs("plain").arity == (1, 1)  # the registry's default
    assert reg.describe_params("ruled") == ["rate: float = 0.5 (>= 0, <= 1)", "needs 2+ parents, >= 2 objectives"]
    assert reg.validate("plain", {"anything": 1}) == {"anything": 1}  # **kwargs: open-ended


def test_classes_unions_and_untyped_registries():
    reg: Registry = Registry("test-classes")

    @reg.register("box")
    class Box:
        """A box."""

        def __init__(self, *, size: Annotated[int, Field(ge=1)] | list[int] = 1) -> None:
            self.size = size

    assert reg.validate("box", {"size": [2, 3]}) == {"size": [2, 3]}
    assert _error(reg, "box", {"size": 0}).startswith("size: input should be greater than or equal to 1")
    assert reg.describe_params("box") == ["size: int | list[int] = 1 (>= 1)"]
    data: Registry = Registry("test-data", typed=False)
    data.register("thing")(object())
    assert data.params("thing") is None and data.describe_params("thing") == []
    assert _error(data, "thing", {"x": 1}) == "x: unknown parameter (takes none)"


def test_shipped_entries_declare_real_ranges_and_needs():
    from redqueen.environments.games import GAMES
    from redqueen.evo.operators import CROSSOVERS, MUTATIONS
    from redqueen.evo.selection import SELECTIONS

    assert "sigma: float = 0.1 (>= 0)" in MUTATIONS.describe_params("gaussian")
    assert _error(MUTATIONS, "gaussian", {"fraction": 0}).startswith("fraction: input should be greater than 0")
    assert _error(CROSSOVERS, "dare", {"drop": 1.0}).startswith("drop: input should be less than 1")
    assert _error(CROSSOVERS, "svd_merge", {"method": "lu"}).startswith("method: input should be 'auto'")
    assert _error(SELECTIONS, "tournament", {"tournsize": 0}).startswith("tournsize: input should be greater")
    assert _error(GAMES, "focusing", {"dims": 1}).startswith("dims: input should be greater than or equal to 2")
    assert "weights" not in CROSSOVERS.params("task_vector").model_fields
    assert MUTATIONS.needs("gaussian").arity == (1, 1)
    assert CROSSOVERS.needs("task_vector").arity == (2, 2)
    assert CROSSOVERS.needs("svd_merge").arity == (2, None)
    assert {n for n in SELECTIONS if SELECTIONS.needs(n).min_objectives > 1} == {"nsga2", "nsga3", "spea2"}
    assert SELECTIONS.needs("novelty").archive and SELECTIONS.needs("lexicase").member_fields == ("cases",)
    # Ranges match what the functions themselves accept: the defaults validate.
    for registry in (MUTATIONS, CROSSOVERS, SELECTIONS, GAMES):
        for name in registry:
            defaults = {k: f.default for k, f in registry.params(name).model_fields.items()}
            registry.validate(name, defaults)


def test_the_evolution_loop_checks_parameters_when_built():
    from redqueen.evo import EvolutionLoop, Lineage, Population, ReplacementConfig

    bad = {
        "operator_params.gaussian.sigmaa: unknown parameter": ReplacementConfig(
            operator_params={"gaussian": {"sigmaa": 0.1}}
        ),
        "selection_params.tournsize: input should be greater": ReplacementConfig(
            selection_params={"tournsize": 0}
        ),
    }
    for message, config in bad.items():
        with pytest.raises(ValueError, match=f"^{message}"):
            EvolutionLoop(Population(), Lineage(), config)
    crossing = ReplacementConfig(operator_params={"svd_merge": {"n_parents": 3, "method": "qr"}})
    assert EvolutionLoop(Population(), Lineage(), crossing).config is crossing


def test_registry_names_are_non_empty_strings_without_whitespace():
    reg: Registry = Registry("test-names")
    with pytest.raises(
        ValueError, match=r"^test-names name must be a non-empty string without whitespace, got ''$"
    ):
        reg.register("")
    with pytest.raises(TypeError, match=r"^test-names name must be a string, got int: 3$"):
        reg.register(3)  # type: ignore[arg-type]
    for bad in ("two words", " padded", "tab\there", "line\n"):
        with pytest.raises(ValueError, match="without whitespace"):
            reg.register(bad)
    assert len(reg) == 0
    for good in ("svd_merge", "game-ladder", "qwen2.5-coder-7b"):  # names shipped entries use
        reg.register(good)(object())
    assert list(reg) == ["svd_merge", "game-ladder", "qwen2.5-coder-7b"]


def test_a_guard_wraps_each_entry_as_it_is_registered():
    seen = []

    def guard(name, fn):
        def checked(*args, **kwargs):
            seen.append(name)
            return fn(*args, **kwargs)

        return checked

    reg: Registry = Registry("test-guarded", guard=guard)

    @reg.register("double")
    def double(x):
        return 2 * x

    assert reg["double"] is double and double(2) == 4 and seen == ["double"]
