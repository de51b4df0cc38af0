"""Non-finite values never kill a run: genomes report them, operators refuse them, the surrogate's
updates are bounded and skip (and count) a non-finite loss or gradient."""

from __future__ import annotations

import math

import pytest
import torch

from redqueen.environments.surrogate import SurrogateEnv, SurrogateOptions
from redqueen.evo import ReplacementConfig
from redqueen.evo.operators import crossover, mutate
from redqueen.genomes import LoRAGenome

SHAPES = {"layers.0": (6, 4), "layers.1": (4, 6)}


def _genome(seed: int = 0, std: float = 0.05) -> LoRAGenome:
    return LoRAGenome.random(
        SHAPES, rank=2, alpha=4.0, rng=torch.Generator().manual_seed(seed), init="gaussian", std=std
    )


def _poisoned(genome: LoRAGenome, value: float) -> LoRAGenome:
    a, b = genome.factors("layers.1")
    return genome.replace({**dict(genome.items()), "layers.1": (a, b.clone().fill_(value))})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_is_finite_sees_nan_and_inf(value):
    assert _genome().is_finite()
    assert not _poisoned(_genome(), value).is_finite()


def test_operators_refuse_non_finite_parents_naming_the_module():
    rng = torch.Generator().manual_seed(0)
    bad = _poisoned(_genome(1), math.nan)
    with pytest.raises(
        ValueError, match=r"mutation 'gaussian': the genome has non-finite factors .* layers\.1"
    ):
        mutate("gaussian", bad, rng=rng)
    with pytest.raises(
        ValueError, match=r"crossover 'svd_merge': the parent 1 has non-finite factors"
    ):
        crossover("svd_merge", [_genome(2), bad], rng=rng)
    assert crossover("svd_merge", [_genome(2), _genome(3)], rng=rng).is_finite()


def _env() -> SurrogateEnv:
    return SurrogateEnv(
        population=SurrogateEnv.default_population.updated(teachers=2, students=2),
        match=SurrogateEnv.default_match.updated(tasks_per_teacher=4),
        options=SurrogateOptions(hidden=8),
        replacement=ReplacementConfig(replace_every=0),
        seed=0,
    )


def test_a_surrogate_update_moves_factors_by_at_most_lr_times_max_grad_norm():
    # Large factors put a teacher where the domain penalty's gradient is huge: the blow-up regime.
    env = _env()
    teacher = LoRAGenome.random(
        env.shapes,
        rank=4,
        alpha=8.0,
        rng=torch.Generator().manual_seed(4),
        init="gaussian",
        std=3.0,
    )
    student = LoRAGenome.random(
        env.shapes,
        rank=4,
        alpha=8.0,
        rng=torch.Generator().manual_seed(5),
        init="gaussian",
        std=0.05,
    )
    probes = list(torch.randn(4, env.dim, generator=torch.Generator().manual_seed(6)))
    new = env.update("teacher", teacher, student, probes, [])
    moved = torch.sqrt(
        sum(
            ((a1 - a0) ** 2).sum() + ((b1 - b0) ** 2).sum()
            for (a0, b0), (a1, b1) in zip(
                dict(teacher.items()).values(), dict(new.items()).values(), strict=True
            )
        )
    )
    assert 0 < float(moved) <= env.lr * env.max_grad_norm * (1 + 1e-5)


def test_a_non_finite_member_skips_its_update_and_the_step_counts_it():
    env = _env()
    victim = env.population.members("student")[0]
    victim.genome = _poisoned(victim.genome, math.inf)
    record = env.step()
    assert record.metrics["learner_skipped"] >= 1
    assert not victim.genome.is_finite()  # kept as it was, not made worse
    assert all(m.genome.is_finite() for m in env.population.living if m is not victim)
    assert _env().step().metrics["learner_skipped"] == 0
