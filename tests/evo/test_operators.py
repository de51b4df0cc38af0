"""Variation operators: registry contract, seeding, rank/alpha, and each operator's defining property."""

from __future__ import annotations

import warnings
from typing import Annotated, Literal

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from redqueen._registry import UnknownNameError
from redqueen.evo.operators import CROSSOVERS, MUTATIONS, crossover, mutate
from redqueen.genomes import GenomeMismatchError, LoRAGenome, distance, weighted_svd

SHAPES = {"l0.q": (10, 8), "l0.k": (4, 8), "l1.q": (10, 8), "l1.k": (4, 8), "l1.o": (8, 10)}
#: Deterministic merges (ties draws only for the randomised SVD of large modules).
DETERMINISTIC = {"svd_merge", "ties"}


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small tensors: one thread avoids OpenMP hand-offs that dominate on a busy 2-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def genome(seed: int, *, rank=4, alpha=8.0, init="gaussian", shapes=SHAPES, dtype=torch.float32):
    return LoRAGenome.random(
        shapes, rank=rank, alpha=alpha, rng=gen(seed), init=init, std=0.3, dtype=dtype
    )


def apply(kind: str, name: str, parents, seed: int):
    if kind == "mutation":
        return mutate(name, parents[0], rng=gen(seed))
    return crossover(name, parents, rng=gen(seed))


ALL = [("mutation", n) for n in MUTATIONS] + [("crossover", n) for n in CROSSOVERS]


def same(g1: LoRAGenome, g2: LoRAGenome) -> bool:
    return all(
        torch.equal(x, y)
        for n in g1.modules
        for x, y in zip(g1.factors(n), g2.factors(n), strict=True)
    )


def test_registries_hold_every_designed_operator_with_docstrings():
    assert set(MUTATIONS) >= {
        "gaussian",
        "full_gaussian",
        "spectral",
        "component_mask",
        "lowrank_noise",
    }
    assert set(CROSSOVERS) >= {
        "svd_merge",
        "task_vector",
        "svd_subspace",
        "layer_swap",
        "dare",
        "ties",
    }
    for registry in (MUTATIONS, CROSSOVERS):
        for name in registry:  # shipped operators (other tests register plug-ins of their own)
            if getattr(registry[name], "__module__", "").startswith("redqueen."):
                assert registry.describe(name), name


@settings(max_examples=10, deadline=None)
@given(
    out_in=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)), min_size=1, max_size=3),
    rank=st.integers(1, 5),
    alphas=st.tuples(st.floats(1.0, 32.0), st.floats(1.0, 32.0)),
    seed=st.integers(0, 1000),
)
def test_every_operator_keeps_rank_and_alpha_of_the_first_parent(out_in, rank, alphas, seed):
    shapes = {f"m{i}": s for i, s in enumerate(out_in)}
    p1 = genome(seed, rank=rank, alpha=alphas[0], shapes=shapes)
    p2 = genome(seed + 1, rank=rank, alpha=alphas[1], shapes=shapes)
    for kind, name in ALL:
        child = apply(kind, name, [p1, p2], seed)
        assert (child.rank, child.alpha, child.shapes) == (rank, alphas[0], shapes), name
        assert child.dtype == p1.dtype and child.modules == p1.modules, name
        assert all(torch.isfinite(t).all() for n in child.modules for t in child.factors(n)), name


@pytest.mark.parametrize(("kind", "name"), ALL)
def test_same_seed_same_child_and_different_seeds_differ(kind, name):
    parents = [genome(1), genome(2)]
    first, again = apply(kind, name, parents, 7), apply(kind, name, parents, 7)
    assert same(first, again)
    if name not in DETERMINISTIC:
        # Discrete draws (e.g. svd_subspace's j in 1..3) may repeat for one other seed, not for four.
        assert any(not same(first, apply(kind, name, parents, s)) for s in range(8, 12))


@pytest.mark.parametrize(("kind", "name"), ALL)
def test_operators_leave_parents_untouched(kind, name):
    parents = [genome(1), genome(2)]
    copies = [p.clone() for p in parents]
    apply(kind, name, parents, 0)
    assert all(same(p, c) for p, c in zip(parents, copies, strict=True))


def test_mutations_move_the_update_but_not_far():
    parent = genome(3)
    for name in MUTATIONS:
        child = mutate(name, parent, rng=gen(0))
        d = distance(parent, child)
        assert d > 0, name
        assert d < 2 * sum(float(parent.delta_weight(n).norm()) for n in parent.modules), name


def test_lowrank_noise_changes_a_zero_update_where_factor_noise_cannot():
    fresh = genome(4, init="peft")  # B = 0, so dW = 0
    assert distance(fresh, mutate("gaussian", fresh, rng=gen(0), fraction=1.0)) == 0.0
    child = mutate("lowrank_noise", fresh, rng=gen(0), floor=0.01)
    for name in fresh.modules:
        assert float(child.delta_weight(name).norm()) == pytest.approx(0.01, rel=1e-4)
        assert int(torch.linalg.matrix_rank(child.delta_weight(name).double(), rtol=1e-5)) == 1


def test_gaussian_touches_only_the_chosen_fraction():
    parent = genome(5)
    child = mutate("gaussian", parent, rng=gen(1), fraction=0.4)
    changed = [
        n for n in parent.modules if not torch.equal(child.factors(n)[0], parent.factors(n)[0])
    ]
    assert len(changed) == 2


def test_component_mask_drops_k_directions():
    parent = genome(6, rank=4)
    child = mutate("component_mask", parent, rng=gen(0), k=2)
    for name in parent.modules:
        full = int(torch.linalg.matrix_rank(parent.delta_weight(name).double(), rtol=1e-5))
        assert int(
            torch.linalg.matrix_rank(child.delta_weight(name).double(), rtol=1e-5)
        ) == full - min(2, full)


def test_spectral_keeps_column_space():
    parent = genome(7, rank=3)
    child = mutate("spectral", parent, rng=gen(0), sigma=0.2, rotation=0.1)
    for name in parent.modules:
        u, s, _ = torch.linalg.svd(parent.delta_weight(name).double())
        basis = u[:, : int((s > 1e-8 * s[0]).sum())]
        dw = child.delta_weight(name).double()
        torch.testing.assert_close(basis @ (basis.T @ dw), dw, rtol=1e-4, atol=1e-6)


def test_svd_merge_is_weighted_svd():
    p1, p2 = genome(1), genome(2)
    child = crossover("svd_merge", [p1, p2], weights=[0.2, 0.8], rng=gen(0))
    ref = weighted_svd([p1, p2], [0.2, 0.8])
    assert same(child, ref)


def test_task_vector_extrapolates_toward_the_better_parent():
    p1, other = genome(1, rank=2), genome(2, rank=2)
    # Sharing A keeps every combination within rank 2, so the rank-2 child is exact.
    p2 = p1.replace({n: (a, other.factors(n)[1]) for n, (a, _) in p1.items()})
    child = crossover("task_vector", [p1, p2], weights=[0.0, 1.0], rng=gen(0), t=1.25)
    for name in p1.modules:
        expected = p1.delta_weight(name) + 1.25 * (p2.delta_weight(name) - p1.delta_weight(name))
        torch.testing.assert_close(child.delta_weight(name), expected, rtol=1e-4, atol=1e-5)
    drawn = [crossover("task_vector", [p1, p2], rng=gen(s)) for s in range(3)]
    assert len({round(distance(p1, c), 6) for c in drawn}) == 3
    with pytest.raises(ValueError, match="exactly 2 parents"):
        crossover("task_vector", [p1, p2, p1], rng=gen(0))


def test_svd_subspace_takes_leading_triplets_from_each_parent():
    p1, p2 = genome(1, rank=4), genome(2, rank=4)
    whole = crossover("svd_subspace", [p1, p2], rng=gen(0), j=4)
    for name in p1.modules:
        torch.testing.assert_close(
            whole.delta_weight(name), p1.delta_weight(name), rtol=1e-4, atol=1e-5
        )
    mixed = crossover("svd_subspace", [p1, p2], rng=gen(0), j=1)
    name = "l0.q"
    u1, s1, v1 = torch.linalg.svd(p1.delta_weight(name).double())
    u2, s2, v2 = torch.linalg.svd(p2.delta_weight(name).double())
    expected = s1[0] * torch.outer(u1[:, 0], v1[0]) + (u2[:, :3] * s2[:3]) @ v2[:3]
    torch.testing.assert_close(mixed.delta_weight(name).double(), expected, rtol=1e-4, atol=1e-5)


def test_layer_swap_inherits_whole_modules_across_alphas():
    p1, p2 = genome(1, alpha=8.0), genome(2, alpha=2.0)
    child = crossover("layer_swap", [p1, p2], rng=gen(3))
    sources = set()
    for name in p1.modules:
        dw = child.delta_weight(name)
        hits = [
            i for i, p in enumerate((p1, p2)) if torch.allclose(dw, p.delta_weight(name), atol=1e-6)
        ]
        assert len(hits) == 1, name
        sources.add(hits[0])
    assert sources == {0, 1}
    only_second = crossover("layer_swap", [p1, p2], weights=[0.0, 1.0], rng=gen(0))
    assert all(
        torch.allclose(only_second.delta_weight(n), p2.delta_weight(n), atol=1e-6)
        for n in p1.modules
    )
    with pytest.raises(ValueError, match="non-negative"):
        crossover("layer_swap", [p1, p2], weights=[-1.0, 1.0], rng=gen(0))


def test_dare_without_drop_is_svd_merge_and_is_unbiased():
    p1, p2 = genome(1, rank=2, dtype=torch.float64), genome(2, rank=2, dtype=torch.float64)
    plain = crossover("dare", [p1, p2], rng=gen(0), drop=0.0)
    ref = weighted_svd([p1, p2])
    for name in p1.modules:
        torch.testing.assert_close(plain.delta_weight(name), ref.delta_weight(name))
    # Averaged over masks, a dropped-and-rescaled update returns to the parent (weight 0 on the
    # second parent keeps the child within rank, so no truncation bias).
    target = p1.delta_weight("l0.q")
    children = [
        crossover("dare", [p1, p2], weights=[1.0, 0.0], rng=gen(s), drop=0.3) for s in range(40)
    ]
    single = float((children[0].delta_weight("l0.q") - target).norm() / target.norm())
    mean = sum(c.delta_weight("l0.q") for c in children) / len(children)
    assert single > 0.1
    assert float((mean - target).norm() / target.norm()) < single / 2


def test_ties_of_one_parent_at_full_density_is_that_parent():
    p1 = genome(1, dtype=torch.float64)
    child = crossover("ties", [p1, p1.clone()], rng=gen(0), density=1.0)
    for name in p1.modules:
        torch.testing.assert_close(child.delta_weight(name), p1.delta_weight(name))


def test_ties_elects_signs_and_averages_agreeing_entries():
    shapes = {"m": (2, 2)}
    a = torch.eye(2, dtype=torch.float64)
    g1 = LoRAGenome(
        {"m": (a, torch.tensor([[2.0, 0.0], [0.0, -1.0]], dtype=torch.float64))}, rank=2, alpha=2
    )
    g2 = LoRAGenome(
        {"m": (a, torch.tensor([[4.0, 0.0], [0.0, 3.0]], dtype=torch.float64))}, rank=2, alpha=2
    )
    assert g1.shapes == shapes
    child = crossover("ties", [g1, g2], rng=gen(0), density=1.0)
    # Entry (0, 0): both positive, mean 3. Entry (1, 1): sum positive, only +3 agrees.
    torch.testing.assert_close(
        child.delta_weight("m"), torch.diag(torch.tensor([3.0, 3.0], dtype=torch.float64))
    )


def test_ties_large_modules_use_a_seeded_randomised_svd():
    shapes = {"big": (530, 520)}
    p1, p2 = genome(1, rank=2, shapes=shapes), genome(2, rank=2, shapes=shapes)
    c1 = crossover("ties", [p1, p2], rng=gen(0), density=0.5)
    assert same(c1, crossover("ties", [p1, p2], rng=gen(0), density=0.5))
    assert not same(c1, crossover("ties", [p1, p2], rng=gen(1), density=0.5))
    # On an exactly rank-2 merge the randomised SVD is exact.
    twin = crossover("ties", [p1, p1.clone()], rng=gen(0), density=1.0)
    torch.testing.assert_close(
        twin.delta_weight("big"), p1.delta_weight("big"), rtol=1e-4, atol=1e-6
    )


def test_registration_by_decorator_and_contract_checks():
    @MUTATIONS.register("test_scale_b")
    def scale_b(g, *, rng, factor=2.0):
        """Scale every B factor (test plug-in)."""
        return g.replace({n: (a, b * factor) for n, (a, b) in g.items()})

    @CROSSOVERS.register("test_bad_rank")
    def bad_rank(parents, *, weights, rng):
        """Return a child of another rank (test plug-in that breaks the contract)."""
        return weighted_svd(parents, weights, rank=parents[0].rank + 1)

    try:
        p = genome(1)
        child = mutate("test_scale_b", p, rng=gen(0), factor=3.0)
        torch.testing.assert_close(child.delta_weight("l0.q"), 3 * p.delta_weight("l0.q"))
        with pytest.raises(ValueError, match="test_bad_rank.*rank 5.*rank 4"):
            crossover("test_bad_rank", [p, genome(2)], rng=gen(0))
    finally:
        MUTATIONS._items.pop("test_scale_b")
        CROSSOVERS._items.pop("test_bad_rank")


def test_boundary_errors_are_clear():
    p = genome(1)
    with pytest.raises(UnknownNameError, match="unknown mutation 'nope'.*gaussian"):
        mutate("nope", p, rng=gen(0))
    with pytest.raises(TypeError, match="torch.Generator"):
        mutate("gaussian", p, rng=0)
    with pytest.raises(ValueError, match="'gaussian': fraction"):
        mutate("gaussian", p, rng=gen(0), fraction=0.0)
    with pytest.raises(ValueError, match="3 weights for 2 parents"):
        crossover("svd_merge", [p, genome(2)], weights=[1, 2, 3], rng=gen(0))
    with pytest.raises(ValueError, match="weights must be finite"):
        crossover("svd_merge", [p, genome(2)], weights=[float("nan"), 1], rng=gen(0))
    with pytest.raises(TypeError, match=r"'gaussian': sigmaa: unknown parameter \(known: fraction, sigma\)"):
        mutate("gaussian", p, rng=gen(0), sigmaa=0.1)
    with pytest.raises(TypeError, match="'task_vector': tt: unknown parameter"):
        crossover("task_vector", [p, genome(2)], rng=gen(0), tt=1.2)
    other = genome(2, shapes={**SHAPES, "l1.o": (8, 9)})
    with pytest.raises(GenomeMismatchError, match=r"'l1.o'.*\(8, 10\).*\(8, 9\)"):
        crossover("svd_merge", [p, other], rng=gen(0))
    with pytest.raises(ValueError, match="'dare': drop"):
        crossover("dare", [p, genome(2)], rng=gen(0), drop=1.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize(("kind", "name"), ALL)
def test_cuda_genomes_with_a_cpu_generator_match_cpu(kind, name):
    parents = [genome(1, dtype=torch.float64), genome(2, dtype=torch.float64)]
    on_cpu = apply(kind, name, parents, 3)
    on_gpu = apply(kind, name, [p.to("cuda") for p in parents], 3)
    assert on_gpu.device.type == "cuda"
    for n in on_cpu.modules:
        torch.testing.assert_close(
            on_gpu.delta_weight(n).cpu(), on_cpu.delta_weight(n), rtol=1e-6, atol=1e-8
        )


def test_gaussian_perturbs_a_single_entry_factor_without_a_nan_scale():
    a, b = torch.tensor([[2.0]]), torch.tensor([[-3.0]])
    parent = LoRAGenome({"m": (a, b)}, rank=1, alpha=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # std() of one entry warns and is nan
        child = mutate("gaussian", parent, rng=gen(0), fraction=1.0, sigma=0.5)
    ca, cb = child.factors("m")
    assert child.is_finite() and float(ca) != 2.0 and float(cb) != -3.0


def test_plugin_parameters_are_checked_from_python_as_from_a_config():
    """A plug-in that declares ranges but checks nothing itself: ``mutate``/``crossover`` refuse
    out-of-range values with the wording configuration loading uses."""
    from redqueen.experiments._config_checks import check_operator_params
    from redqueen.experiments.config import ConfigError

    @MUTATIONS.register("test_sign_flip")
    def sign_flip(genome, *, rng, fraction: Annotated[float, Field(gt=0, le=1)] = 0.5,
                  mode: Literal["a", "b"] = "a"):
        return genome

    @CROSSOVERS.register("test_pick")
    def pick(parents, *, weights, rng, fraction: Annotated[float, Field(gt=0, le=1)] = 0.5):
        return parents[0]

    try:
        p = genome(1)
        for bad in ({"fraction": 0}, {"fraction": 7}, {"mode": "x"}):
            key = next(iter(bad))
            with pytest.raises(ValueError) as from_python:
                mutate("test_sign_flip", p, rng=gen(0), **bad)
            with pytest.raises(ConfigError) as from_config:
                check_operator_params("test_sign_flip", bad)
            assert str(from_python.value).startswith(f"mutation 'test_sign_flip': {key}: ")
            problem = str(from_config.value).split(f"test_sign_flip.{key}: ", 1)[1]
            assert str(from_python.value).endswith(problem)
        with pytest.raises(ValueError, match="crossover 'test_pick': fraction: input should be less"):
            crossover("test_pick", [p, genome(2)], rng=gen(0), fraction=7)
        assert mutate("test_sign_flip", p, rng=gen(0), fraction=1.0, mode="b") is p
    finally:
        MUTATIONS.unregister("test_sign_flip")
        CROSSOVERS.unregister("test_pick")


@pytest.mark.parametrize(("kind", "name"), ALL)
def test_a_registry_entry_called_directly_refuses_what_is_not_a_torch_generator(kind, name):
    parents = [genome(1), genome(2)]
    for rng in (
        (0, "seed") if name == "svd_merge" else (None, 0)
    ):  # svd_merge is deterministic: rng may be None
        with pytest.raises(TypeError, match=rf"^{kind} '{name}': rng must be a torch\.Generator"):
            if kind == "mutation":
                MUTATIONS[name](parents[0], rng=rng)
            else:
                CROSSOVERS[name](parents, rng=rng)
    with pytest.raises(
        TypeError, match=r"^mutation 'gaussian': rng must be a torch\.Generator .*got NoneType"
    ):
        mutate("gaussian", parents[0], rng=None)


def test_a_crossover_refuses_fewer_or_more_parents_than_its_declared_arity():
    p, q, r = genome(1), genome(2), genome(3)
    with pytest.raises(
        ValueError, match=r"^crossover 'svd_merge': parents: needs 2 or more parents, got 1$"
    ):
        CROSSOVERS["svd_merge"]([p], rng=torch.Generator())
    with pytest.raises(
        ValueError, match=r"^crossover 'layer_swap': parents: needs 2 or more parents, got 1$"
    ):
        crossover("layer_swap", [p], rng=gen(0))
    with pytest.raises(
        ValueError, match=r"^crossover 'task_vector': parents: needs exactly 2 parents, got 3$"
    ):
        crossover("task_vector", [p, q, r], rng=gen(0))
    with pytest.raises(TypeError, match="parents must be a non-empty sequence of LoRAGenome"):
        CROSSOVERS["svd_merge"](p, rng=gen(0))
    assert crossover("svd_merge", [p, q, r], rng=gen(0)).rank == p.rank


def test_a_direct_call_checks_what_the_front_door_checks():
    p = genome(1)
    with pytest.raises(
        ValueError, match=r"^mutation 'gaussian': fraction: input should be greater than 0"
    ):
        MUTATIONS["gaussian"](p, rng=gen(0), fraction=0.0)
    with pytest.raises(
        TypeError, match="^mutation 'spectral': genome must be a LoRAGenome, got list"
    ):
        MUTATIONS["spectral"]([p], rng=gen(0))
    with pytest.raises(ValueError, match="3 weights for 2 parents"):
        CROSSOVERS["dare"]([p, genome(2)], weights=[1, 2, 3], rng=gen(0))
    # the same child either way, by position or by keyword
    assert same(MUTATIONS["gaussian"](p, rng=gen(5)), mutate("gaussian", p, rng=gen(5)))
    assert same(MUTATIONS["gaussian"](genome=p, rng=gen(5)), mutate("gaussian", p, rng=gen(5)))
