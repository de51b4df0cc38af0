"""LoRAGenome: construction, identity, copies, checkpoints and compatibility checks."""

from __future__ import annotations

import io

import pytest
import torch

from redqueen.genomes import GenomeMismatchError, LoRAGenome

SHAPES = {"layers.0.q": (12, 8), "layers.0.k": (4, 8), "layers.1.q": (12, 8)}


def make(seed: int = 0, **kw) -> LoRAGenome:
    kw.setdefault("rank", 3)
    kw.setdefault("alpha", 6.0)
    kw.setdefault("init", "gaussian")
    return LoRAGenome.random(SHAPES, rng=torch.Generator().manual_seed(seed), **kw)


def test_shapes_scaling_and_parameter_count():
    g = make()
    assert g.modules == list(SHAPES)
    assert g.shapes == SHAPES
    assert g.shape("layers.0.k") == (4, 8)
    assert g.rank == 3 and g.alpha == 6.0 and g.scaling == 2.0
    a, b = g.factors("layers.0.k")
    assert a.shape == (3, 8) and b.shape == (4, 3)
    assert g.num_parameters() == sum(3 * (o + i) for o, i in SHAPES.values())
    torch.testing.assert_close(g.delta_weight("layers.0.k"), 2.0 * b @ a)


def test_peft_init_has_zero_update_and_gaussian_init_does_not():
    peft_like = make(init="peft")
    assert all(peft_like.delta_weight(n).abs().max() == 0 for n in peft_like.modules)
    a, _ = peft_like.factors("layers.0.q")
    assert a.abs().max() > 0 and a.abs().max() <= 1 / 8**0.5
    assert make().delta_weight("layers.0.q").abs().max() > 0


def test_same_seed_same_genome_and_different_seed_differs():
    torch.testing.assert_close(make(1).factors("layers.1.q"), make(1).factors("layers.1.q"))
    assert not torch.equal(make(1).factors("layers.1.q")[0], make(2).factors("layers.1.q")[0])


def test_to_and_clone_do_not_share_or_change_values():
    g = make()
    d = g.to(dtype=torch.float64)
    assert d.dtype == torch.float64 and g.dtype == torch.float32
    assert g.to(dtype=torch.float32) is g
    torch.testing.assert_close(d.delta_weight("layers.0.q").float(), g.delta_weight("layers.0.q"))
    c = g.clone()
    c.factors("layers.0.q")[0].add_(1.0)
    assert not torch.equal(c.factors("layers.0.q")[0], g.factors("layers.0.q")[0])


def test_state_dict_round_trip_through_torch_save():
    g = make(base_model="org/base")
    buf = io.BytesIO()
    torch.save(g.state_dict(), buf)
    buf.seek(0)
    back = LoRAGenome.from_state_dict(torch.load(buf, weights_only=True))
    assert back.modules == g.modules and back.rank == g.rank and back.alpha == g.alpha
    assert back.base_model == "org/base"
    for n in g.modules:
        torch.testing.assert_close(back.factors(n), g.factors(n))


def test_from_state_dict_rejects_foreign_dicts():
    with pytest.raises(ValueError, match="format"):
        LoRAGenome.from_state_dict({"weight": torch.zeros(2)})
    state = make().state_dict()
    del state["rank"]
    with pytest.raises(ValueError, match="rank"):
        LoRAGenome.from_state_dict(state)


@pytest.mark.parametrize(
    ("factors", "kwargs", "message"),
    [
        ({}, {"rank": 2, "alpha": 1}, "empty"),
        ({"m": (torch.zeros(2, 4), torch.zeros(3, 2))}, {"rank": 0, "alpha": 1}, "rank"),
        ({"m": (torch.zeros(2, 4), torch.zeros(3, 2))}, {"rank": 2, "alpha": 0}, "alpha"),
        ({"m": (torch.zeros(3, 4), torch.zeros(3, 2))}, {"rank": 2, "alpha": 1}, "'m'.*rank 2"),
        (
            {"m": (torch.zeros(2, 4), torch.zeros(3, 2, dtype=torch.float64))},
            {"rank": 2, "alpha": 1},
            "dtype",
        ),
        ({"m": (torch.zeros(2, 4, 1), torch.zeros(3, 2))}, {"rank": 2, "alpha": 1}, "2-D"),
        (
            {"m": (torch.zeros(2, 4, dtype=torch.int64), torch.zeros(3, 2, dtype=torch.int64))},
            {"rank": 2, "alpha": 1},
            "floating point",
        ),
    ],
)
def test_constructor_rejects_bad_factors(factors, kwargs, message):
    with pytest.raises(ValueError, match=message):
        LoRAGenome(factors, **kwargs)


def test_unknown_module_and_init_are_clear_errors():
    with pytest.raises(KeyError, match="nope"):
        make().factors("nope")
    with pytest.raises(ValueError, match="init"):
        make(init="xavier")


def test_mismatch_errors_name_module_shapes_and_base_models():
    g = make()
    other_shape = LoRAGenome.random(
        {**SHAPES, "layers.0.k": (5, 8)}, rank=3, alpha=6, rng=torch.Generator().manual_seed(0)
    )
    with pytest.raises(GenomeMismatchError, match=r"layers\.0\.k.*\(4, 8\).*\(5, 8\)"):
        g.check_compatible(other_shape)
    fewer = LoRAGenome({"layers.0.q": g.factors("layers.0.q")}, rank=3, alpha=6)
    with pytest.raises(GenomeMismatchError, match="layers.0.k"):
        g.check_compatible(fewer)
    with pytest.raises(GenomeMismatchError, match="base models.*'a'.*'b'"):
        make(base_model="a").check_compatible(make(base_model="b"))
    assert isinstance(GenomeMismatchError("x"), ValueError)
    make(base_model="a").check_compatible(make())  # unknown base model is compatible


def test_factors_that_are_not_torch_tensors_are_a_type_error_naming_the_module():
    import numpy as np

    with pytest.raises(
        TypeError, match=r"^LoRAGenome: module 'm': factors must be torch tensors, got ndarray"
    ):
        LoRAGenome({"m": (np.zeros((2, 4)), np.zeros((4, 2)))}, rank=2, alpha=4)
    with pytest.raises(TypeError, match="module 'm': factors must be an \\(A, B\\) pair"):
        LoRAGenome({"m": (torch.zeros(2, 4),) * 3}, rank=2, alpha=4)
    with pytest.raises(TypeError, match="factors must be a mapping"):
        LoRAGenome([("m", (torch.zeros(2, 4), torch.zeros(4, 2)))], rank=2, alpha=4)
    with pytest.raises(TypeError, match="rank must be a number, got NoneType"):
        LoRAGenome({"m": (torch.zeros(2, 4), torch.zeros(4, 2))}, rank=None, alpha=4)
    with pytest.raises(ValueError, match="rank must be a positive integer, got nan"):
        LoRAGenome({"m": (torch.zeros(2, 4), torch.zeros(4, 2))}, rank=float("nan"), alpha=4)


@pytest.mark.parametrize("base_model", [5, ["a"], b"a"])
def test_a_base_model_that_is_not_a_string_is_a_type_error(base_model):
    with pytest.raises(TypeError, match=r"^LoRAGenome: base_model must be a string or None"):
        LoRAGenome({"m": (torch.zeros(2, 4), torch.zeros(4, 2))}, rank=2, alpha=4, base_model=base_model)


def test_random_refuses_what_is_not_a_torch_generator():
    import numpy as np

    for rng in (None, 0, np.random.default_rng(0)):
        with pytest.raises(TypeError, match=r"^LoRAGenome\.random: rng must be a torch\.Generator"):
            LoRAGenome.random({"m": (4, 4)}, rank=2, alpha=4, rng=rng)
    with pytest.raises(TypeError, match="shapes must be a mapping"):
        LoRAGenome.random([(4, 4)], rank=2, alpha=4, rng=torch.Generator())
