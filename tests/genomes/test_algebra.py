"""Low-rank algebra against dense float64 computations, on small random shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from redqueen.genomes import (
    GenomeMismatchError,
    LoRAGenome,
    distance,
    genome_svd,
    inner,
    lowrank_svd,
    norm,
    pairwise_distances,
    weighted_svd,
)

FAST = settings(max_examples=50, deadline=None)


def random_genomes(seed: int, shapes, ranks, alphas, dtype=torch.float64) -> list[LoRAGenome]:
    rng = torch.Generator().manual_seed(seed)
    return [
        LoRAGenome.random(shapes, rank=r, alpha=a, rng=rng, init="gaussian", std=0.5, dtype=dtype)
        for r, a in zip(ranks, alphas, strict=True)
    ]


def dense_sum(genomes, weights, name) -> torch.Tensor:
    return sum(w * g.delta_weight(name).double() for g, w in zip(genomes, weights, strict=True))


def rel(x: torch.Tensor, ref: torch.Tensor) -> float:
    return float((x.double() - ref.double()).norm() / ref.double().norm().clamp_min(1e-300))


shape_st = st.tuples(st.integers(1, 24), st.integers(1, 24))
cases = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**16),
        "shapes": st.lists(shape_st, min_size=1, max_size=3),
        "ranks": st.lists(st.integers(1, 6), min_size=1, max_size=4),
        "alphas": st.lists(st.floats(0.5, 32.0), min_size=4, max_size=4),
        "weights": st.lists(st.floats(-2.0, 2.0), min_size=4, max_size=4),
        "method": st.sampled_from(["qr", "gram"]),
    }
)


@FAST
@given(cases)
def test_weighted_svd_is_the_dense_truncated_svd_of_the_weighted_sum(case):
    k = len(case["ranks"])
    # Two modules share a shape so the batched path is exercised.
    shapes = {f"m{i}": s for i, s in enumerate(case["shapes"] + case["shapes"][:1])}
    genomes = random_genomes(case["seed"], shapes, case["ranks"], case["alphas"][:k])
    weights = case["weights"][:k]
    child = weighted_svd(genomes, weights, method=case["method"])
    r = genomes[0].rank
    assert child.rank == r and child.alpha == genomes[0].alpha
    for name in shapes:
        total = dense_sum(genomes, weights, name)
        u, s, vh = torch.linalg.svd(total, full_matrices=False)
        assume(float(s[0]) > 1e-6)
        # Truncation is only unique when the r-th and (r+1)-th singular values are apart.
        if len(s) > r:
            assume(float(s[r - 1] - s[r]) > 1e-3 * float(s[0]))
        ref = (u[:, :r] * s[:r]) @ vh[:r]
        assert rel(child.delta_weight(name), ref) < 1e-4


@FAST
@given(cases)
def test_weighted_svd_is_exact_when_summed_ranks_fit(case):
    ranks = (case["ranks"] * 2)[:2]
    shapes = {f"m{i}": s for i, s in enumerate(case["shapes"])}
    genomes = random_genomes(case["seed"], shapes, ranks, case["alphas"][:2])
    weights = case["weights"][:2]
    child = weighted_svd(genomes, weights, rank=sum(ranks), alpha=3.0, method=case["method"])
    assert child.rank == sum(ranks) and child.alpha == 3.0
    for name in shapes:
        total = dense_sum(genomes, weights, name)
        assume(float(total.norm()) > 1e-6)
        # Gram matrices square the conditioning: directions below ~3e-7 of the top one are dropped,
        # so for them the sum may hold no direction near that edge (absent ones are fine).
        if case["method"] == "gram":
            values = torch.linalg.svdvals(total)
            top = float(values[0])
            assume(all(float(v) > 1e-5 * top or float(v) < 1e-12 * top for v in values))
        assert rel(child.delta_weight(name), total) < (1e-9 if case["method"] == "qr" else 1e-6)


def test_weighted_svd_in_float32_matches_float64_reference():
    shapes = {"a": (64, 40), "b": (64, 40), "c": (16, 40)}
    genomes = random_genomes(3, shapes, [8, 8], [16.0, 16.0], dtype=torch.float32)
    child = weighted_svd(genomes, [0.5, 0.5])
    assert child.dtype == torch.float32
    for name in shapes:
        u, s, vh = torch.linalg.svd(dense_sum(genomes, [0.5, 0.5], name))
        assert rel(child.delta_weight(name), (u[:, :8] * s[:8]) @ vh[:8]) < 1e-4


def test_weighted_svd_of_zero_updates_is_zero_with_the_right_rank():
    rng = torch.Generator().manual_seed(0)
    zero = LoRAGenome.random({"m": (6, 5)}, rank=4, alpha=8, rng=rng)
    for method in ("qr", "gram"):
        child = weighted_svd([zero, zero], method=method)
        assert child.factors("m")[0].shape == (4, 5)
        assert float(child.delta_weight("m").abs().max()) == 0.0


def test_lowrank_svd_returns_orthonormal_singular_vectors():
    rng = torch.Generator().manual_seed(1)
    b = torch.randn(3, 20, 5, generator=rng, dtype=torch.float64)
    a = torch.randn(3, 5, 9, generator=rng, dtype=torch.float64)
    for method in ("qr", "gram"):
        u, s, v = lowrank_svd(b, a, method=method)
        eye = torch.eye(5, dtype=torch.float64).expand(3, 5, 5)
        torch.testing.assert_close(u.mT @ u, eye)
        torch.testing.assert_close(v.mT @ v, eye)
        torch.testing.assert_close((u * s.unsqueeze(-2)) @ v.mT, b @ a)
        assert bool((s[:, :-1] >= s[:, 1:]).all())
    with pytest.raises(ValueError, match="method"):
        lowrank_svd(b, a, method="dense")


def test_genome_svd_reconstructs_each_module():
    (g,) = random_genomes(5, {"x": (7, 9), "y": (7, 9), "z": (3, 4)}, [3], [5.0])
    for name, (u, s, v) in genome_svd(g).items():
        torch.testing.assert_close((u * s) @ v.T, g.delta_weight(name))


@FAST
@given(
    seed=st.integers(0, 2**16),
    shapes=st.lists(shape_st, min_size=1, max_size=3),
    ranks=st.lists(st.integers(1, 5), min_size=3, max_size=3),
)
def test_inner_norm_distance_equal_dense_computation(seed, shapes, ranks):
    shapes = {f"m{i}": s for i, s in enumerate(shapes)}
    gs = random_genomes(seed, shapes, ranks, [2.0, 4.0, 8.0])
    dense = [{n: g.delta_weight(n) for n in shapes} for g in gs]
    ip = sum(float((dense[0][n] * dense[1][n]).sum()) for n in shapes)
    assert inner(gs[0], gs[1]) == pytest.approx(ip, rel=1e-9, abs=1e-12)
    nrm = sum(float(dense[0][n].pow(2).sum()) for n in shapes) ** 0.5
    assert norm(gs[0]) == pytest.approx(nrm, rel=1e-9)
    expected = np.array(
        [[sum(float((di[n] - dj[n]).norm()) for n in shapes) for dj in dense] for di in dense]
    )
    np.testing.assert_allclose(pairwise_distances(gs), expected, rtol=1e-7, atol=1e-9)
    assert distance(gs[0], gs[2]) == pytest.approx(expected[0, 2], rel=1e-7)
    assert distance(gs[1], gs[1].clone()) == pytest.approx(0.0, abs=1e-12 * norm(gs[1]))
    # Near-identical genomes keep full relative precision (no Gram cancellation).
    a, b = gs[0].factors("m0")
    near = gs[0].replace({**dict(gs[0].items()), "m0": (a, b * (1 + 1e-9))})
    expected_near = float((near.delta_weight("m0") - gs[0].delta_weight("m0")).norm())
    assert distance(gs[0], near) == pytest.approx(expected_near, rel=1e-5)


def test_pairwise_distances_is_symmetric_with_zero_diagonal():
    gs = random_genomes(9, {"m": (8, 6), "n": (8, 6)}, [2, 2, 2, 2], [4.0] * 4)
    d = pairwise_distances(gs)
    assert d.shape == (4, 4)
    np.testing.assert_allclose(d, d.T)
    assert (np.diag(d) == 0).all() and (d[~np.eye(4, dtype=bool)] > 0).all()


def test_algebra_rejects_mismatched_genomes():
    (a,) = random_genomes(0, {"m": (4, 3)}, [2], [2.0])
    (b,) = random_genomes(0, {"m": (4, 5)}, [2], [2.0])
    for call in (lambda: weighted_svd([a, b]), lambda: distance(a, b), lambda: inner(a, b)):
        with pytest.raises(GenomeMismatchError, match=r"'m'.*\(4, 3\).*\(4, 5\)"):
            call()
    with pytest.raises(ValueError, match="2 weights for 1"):
        weighted_svd([a], [0.5, 0.5])


def test_many_batches_at_once_equal_one_at_a_time_and_threaded_host_solves():
    from redqueen.genomes import lowrank_svd_many
    from redqueen.genomes._algebra import _core_svd, _on_cpu

    rng = torch.Generator().manual_seed(2)
    pairs = [
        (torch.randn(3, 9, 4, generator=rng), torch.randn(3, 4, 7, generator=rng)),
        (torch.randn(2, 2, 4, generator=rng), torch.randn(2, 4, 7, generator=rng)),
        (torch.randn(5, 9, 4, generator=rng), torch.randn(5, 4, 7, generator=rng)),
    ]
    for method in ("qr", "gram"):
        together = lowrank_svd_many(pairs, rank=3, method=method)
        for (b, a), (u, s, v) in zip(pairs, together, strict=True):
            u1, s1, v1 = lowrank_svd(b, a, rank=3, method=method)
            torch.testing.assert_close(
                (u * s.unsqueeze(-2)) @ v.mT, (u1 * s1.unsqueeze(-2)) @ v1.mT
            )
    cores = torch.randn(2, 9, 6, 6, generator=rng, dtype=torch.float64)
    for got, want in zip(_on_cpu(_core_svd, cores), _core_svd(cores), strict=True):
        torch.testing.assert_close(got, want)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("method", ["qr", "gram"])
@pytest.mark.parametrize("small_on_cpu", [False, True])
def test_weighted_svd_on_cuda_matches_cpu(method, small_on_cpu):
    shapes = {"a": (48, 40), "b": (48, 40), "c": (16, 40)}
    genomes = random_genomes(4, shapes, [6, 6], [12.0, 12.0])
    on_cpu = weighted_svd(genomes, [0.4, 0.6], method=method)
    on_gpu = weighted_svd(
        [g.to("cuda") for g in genomes], [0.4, 0.6], method=method, small_on_cpu=small_on_cpu
    )
    assert on_gpu.device.type == "cuda"
    for name in shapes:
        torch.testing.assert_close(on_gpu.delta_weight(name).cpu(), on_cpu.delta_weight(name))


def test_gram_route_handles_rank_deficient_stacks():
    # [B, B] is rank deficient, so the Cholesky route must hand over to the eigen route.
    (g,) = random_genomes(11, {"m": (20, 12), "n": (20, 12)}, [4], [8.0])
    for method in ("qr", "gram"):
        child = weighted_svd([g, g], [0.5, 0.5], method=method)
        for name in g.modules:
            assert rel(child.delta_weight(name), g.delta_weight(name)) < 1e-6
