"""EvolutionLoop: replacement per role, lineage, newborn ratings, ask/tell, seeded resume."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from redqueen._registry import UnknownNameError
from redqueen.evo import EvolutionLoop, Individual, Lineage, Population, ReplacementConfig
from redqueen.fitness import RatingSystem
from redqueen.genomes import LoRAGenome

SHAPES = {"net.0": (6, 4), "net.1": (3, 6)}


def _world(seed: int = 0, size: int = 4):
    pop, lin, ratings = Population(roles=("teacher", "student")), Lineage(), RatingSystem()
    gen = torch.Generator().manual_seed(seed)
    for role in ("teacher", "student"):
        for _ in range(size):
            genome = LoRAGenome.random(SHAPES, rank=2, alpha=4.0, rng=gen, init="gaussian", std=0.1)
            ind = pop.add(Individual(pop.new_id(role), role, genome))
            lin.record_birth(ind, 0)
            ratings.add(ind.id)
    rng = np.random.default_rng(seed)
    for _ in range(30):  # some matches so that ratings differ
        t = pop.members("teacher")[rng.integers(size)].id
        s = pop.members("student")[rng.integers(size)].id
        ratings.record(*((t, s) if rng.random() < 0.5 else (s, t)))
    return pop, lin, ratings


def test_replace_culls_the_bottom_and_records_lineage():
    pop, lin, ratings = _world()
    cfg = ReplacementConfig(cull_fraction=0.5, selection="rating_lcb", operators={"svd_merge": 1.0, "gaussian": 1.0})
    loop = EvolutionLoop(pop, lin, cfg, np.random.default_rng(0))
    before = {role: sorted(pop.members(role), key=lambda m: ratings.lcb(m.id)) for role in pop.roles}
    births, deaths = loop.replace(7, ratings)
    assert len(births) == 4 and len(deaths) == 4
    for role in pop.roles:
        assert len(pop.members(role)) == 4
        worst = {m.id for m in before[role][:2]}
        survivors = {m.id for m in before[role][2:]}
        assert worst <= set(deaths) and not worst & {m.id for m in pop.members(role)}
        for child in (b for b in births if b.role == role):
            assert set(child.parents) <= survivors
            assert child.genome.rank == 2 and child.genome.alpha == 4.0
            assert child.rating in {ratings.get(s) for s in survivors}  # the default newborn rule
            assert ratings.get(child.id) == child.rating
            assert child.birth == 7 and lin[child.id].origin_time == 7 and lin[child.id].operator == child.operator
            assert child.operator in ("svd_merge", "gaussian")
    assert all(lin[d].destruction_time == 7 for d in deaths)
    assert not set(deaths) & set(ratings)


def test_elitism_protects_the_best_even_when_everything_else_goes():
    pop, lin, ratings = _world(size=3)
    cfg = ReplacementConfig(cull_fraction=1.0, elitism=1, selection="tournament", operators={"gaussian": 1.0})
    best = max(pop.members("teacher"), key=lambda m: ratings.lcb(m.id)).id
    EvolutionLoop(pop, lin, cfg, 0).replace(1, ratings)
    assert best in pop and len(pop.members("teacher")) == 3


def test_replacement_is_seeded_and_resumes_bit_for_bit():
    def run(resume: bool):
        pop, lin, ratings = _world(1)
        cfg = ReplacementConfig(cull_fraction=0.25, selection="tournament", operators={"svd_merge": 1.0, "lowrank_noise": 1.0})
        loop = EvolutionLoop(pop, lin, cfg, 5)
        loop.replace(1, ratings)
        if resume:
            state = loop.state_dict()
            loop = EvolutionLoop(pop, lin, cfg, 999)
            loop.load_state_dict(state)
        births, _ = loop.replace(2, ratings)
        return [(b.id, b.parents, b.operator) for b in births], [b.genome.factors("net.0")[0] for b in births]

    a_meta, a_gen = run(False)
    b_meta, b_gen = run(True)
    assert a_meta == b_meta and all(torch.equal(x, y) for x, y in zip(a_gen, b_gen, strict=True))


def test_ask_tell_keeps_role_sizes():
    pop, lin, _ = _world(size=4)
    for ind in pop.living:
        ind.rating = None
        ind.fitness.values = (float(ind.genome.factors("net.0")[0].sum()),)
    cfg = ReplacementConfig(selection="tournament", ranking="truncation", operators={"gaussian": 1.0})
    loop = EvolutionLoop(pop, lin, cfg, 0)
    with pytest.raises(RuntimeError, match="before ask"):
        loop.tell(1)
    children = loop.ask(1, n=2)
    with pytest.raises(RuntimeError, match="twice"):
        loop.ask(1)
    assert len(children) == 4 and all(c.id in lin for c in children)
    for c in children:
        c.fitness.values = (1e6,)  # better than everyone: all survive
    births, deaths = loop.tell(1)
    assert {b.id for b in births} == {c.id for c in children} and len(deaths) == 4
    assert all(len(pop.members(r)) == 4 for r in pop.roles)


def test_unknown_operator_is_named():
    pop, lin, _ = _world(size=2)
    with pytest.raises(UnknownNameError, match="svd_merge"):
        EvolutionLoop(pop, lin, ReplacementConfig(operators={"nope": 1.0}), 0)
    with pytest.raises(ValueError, match="cull_fraction"):
        ReplacementConfig(cull_fraction=2.0)


@pytest.mark.parametrize("selection", ["nsga2", "novelty", "lexicase", "map_elites"])
def test_replace_with_objectives_and_other_schemes(selection):
    pop, lin, ratings = _world(2)
    rng = np.random.default_rng(0)
    for ind in pop.living:
        ind.objectives["solve_rate"] = float(rng.random())
        ind.descriptor = rng.random(2)
        ind.cases = rng.random(3)
    cfg = ReplacementConfig(cull_fraction=0.5, selection=selection, ranking="nsga2", operators={"gaussian": 1.0})
    loop = EvolutionLoop(pop, lin, cfg, 0, objectives={"teacher": ("rating", "solve_rate"), "student": ["solve_rate"]})
    births, deaths = loop.replace(3, ratings)
    assert len(births) == len(deaths) == 4
    teacher = pop.members("teacher")[0]
    assert teacher.fitness.weights == (1.0, 1.0)
    assert all(set(b.parents) <= {m.id for m in pop.living} | set(deaths) for b in births)


def test_novelty_selection_keeps_an_archive_per_role_through_resume():
    pop, lin, ratings = _world(3)
    rng = np.random.default_rng(0)
    for ind in pop.living:
        ind.descriptor = rng.random(2)
    cfg = ReplacementConfig(cull_fraction=0.5, selection="novelty", selection_params={"neighbours": 2},
                            operators={"gaussian": 1.0})
    loop = EvolutionLoop(pop, lin, cfg, 0)
    births, _ = loop.replace(1, ratings)
    assert set(loop.archives) == {"teacher", "student"} and len(loop.archives["teacher"]) == 2
    again = EvolutionLoop(pop, lin, cfg, 1)
    again.load_state_dict(loop.state_dict())
    assert np.array_equal(again.archives["student"].descriptors, loop.archives["student"].descriptors)


def test_a_member_with_a_non_finite_genome_is_culled_first_and_never_a_parent():
    pop, lin, ratings = _world()
    best = max(pop.members("teacher"), key=lambda m: ratings.lcb(m.id))
    (name, (a, b)), *_ = best.genome.items()
    best.genome = best.genome.replace({name: (torch.full_like(a, float("nan")), b)})
    cfg = ReplacementConfig(cull_fraction=0.25, elitism=1, operators={"gaussian": 1.0})
    births, deaths = EvolutionLoop(pop, lin, cfg, 0).replace(3, ratings)
    assert best.id in deaths and best.id not in pop and best.id not in ratings
    assert all(best.id not in child.parents for child in births)


@pytest.mark.parametrize("rule", ["survivor", "parents", "fresh"])
def test_newborn_rules(rule):
    pop, lin, ratings = _world()
    cfg = ReplacementConfig(cull_fraction=0.5, newborn=rule, operators={"svd_merge": 1.0})
    births, _ = EvolutionLoop(pop, lin, cfg, 0).replace(5, ratings)
    for child in births:
        survivors = [m for m in pop.members(child.role) if m.birth < 5]
        parents = [ratings.get(p) for p in child.parents]
        if rule == "survivor":
            assert child.rating in {ratings.get(m.id) for m in survivors}
        elif rule == "parents":
            mean_sigma = np.mean([s for _, s in parents])
            assert child.rating[0] == pytest.approx(np.mean([mu for mu, _ in parents]))
            assert child.rating[1] == pytest.approx(mean_sigma + 0.5 * (25 / 3 - mean_sigma))
        else:
            assert child.rating == (25.0, pytest.approx(25 / 3))
    with pytest.raises(ValueError, match="newborn"):
        ReplacementConfig(newborn="lucky")


def test_grace_spares_the_young():
    pop, lin, ratings = _world()
    cfg = ReplacementConfig(cull_fraction=0.5, grace=3, operators={"gaussian": 1.0}, newborn="fresh")
    loop = EvolutionLoop(pop, lin, cfg, 0)
    births, _ = loop.replace(10, ratings)
    _, deaths = loop.replace(12, ratings)  # the newborns are at the bottom but two steps old
    assert not {b.id for b in births} & set(deaths) and len(deaths) == 4
    _, deaths = loop.replace(13, ratings)
    assert {b.id for b in births} & set(deaths)


def test_snapshots_freeze_members_into_the_hall_of_fame_and_resume():
    pop, lin, ratings = _world()
    loop = EvolutionLoop(pop, lin, ReplacementConfig(hall_of_fame=2), 0)
    loop.sync_ratings(ratings)
    for step in (5, 10, 15):
        loop.snapshot(step)
    assert loop.hall.steps == [10, 15] and len(loop.hall.members("teacher")) == 8
    frozen = loop.hall.get("teacher-0001@15")
    assert frozen.rating == ratings.get("teacher-0001") and frozen.genome is pop.get("teacher-0001").genome
    buffer = io.BytesIO()
    torch.save(loop.state_dict(), buffer)
    buffer.seek(0)
    other = EvolutionLoop(pop, lin, ReplacementConfig(), 1)
    other.load_state_dict(torch.load(buffer, weights_only=True))
    assert other.hall.steps == [10, 15]
    restored = other.hall.get("teacher-0001@15")
    assert restored.rating == frozen.rating and torch.equal(restored.genome.delta_weight("net.0"), frozen.genome.delta_weight("net.0"))


def test_map_elites_draws_parents_across_the_configured_cells():
    # Four survivors in four cells of a 20-bin grid over [-1, 1]: the archive's elites must be
    # drawn from on that grid, not re-gridded on the scheme's defaults (10 bins over [0, 1],
    # where all four fall into the edge cell and one parent would father every child).
    pop, lin, ratings = _world(size=8)
    cfg = ReplacementConfig(
        cull_fraction=0.5,
        selection="map_elites",
        selection_params={"bins": 20, "low": -1.0, "high": 1.0},
        operators={"gaussian": 1.0},
    )
    loop = EvolutionLoop(pop, lin, cfg, 0)
    parents: set[str] = set()
    for step in range(1, 31):
        for role in pop.roles:
            for i, ind in enumerate(pop.members(role)):
                ind.descriptor = np.array([-0.8 + 0.2 * (i % 4)])
        births, _ = loop.replace(step, ratings)
        parents |= {p for b in births if b.role == "teacher" for p in b.parents}
    assert len(parents) >= 4
    assert len(loop.grids["teacher"].elites) >= 4


def test_map_elites_keeps_its_archive_on_the_configured_grid_through_resume():
    from redqueen.evo.selection import GridSettings

    pop, lin, ratings = _world(size=6)
    params = {"bins": [2, 3], "low": [-1.0, 10.0], "high": [1.0, 13.0], "qd_score_offset": -40.0}
    cfg = ReplacementConfig(cull_fraction=0.5, selection="map_elites", selection_params=params,
                            operators={"gaussian": 1.0})
    loop = EvolutionLoop(pop, lin, cfg, 0)
    rng = np.random.default_rng(2)
    for step in (1, 2, 3):
        for ind in pop.living:
            ind.descriptor = np.array([rng.uniform(-1, 1), rng.uniform(10, 13)])
        births, _ = loop.replace(step, ratings)
        grid = loop.grids["teacher"]
        elite_ids = {e.id for e in grid.elites}
        assert {p for b in births if b.role == "teacher" for p in b.parents} <= elite_ids
    assert grid.settings == GridSettings(**params) and grid.dims == (2, 3) and grid.cells == 6
    assert 3 <= grid.stats.num_elites <= 6  # on the default 10 x 10 grid over [0, 1]^2 the
    # second descriptor (10 to 13) would put every member in one edge row
    metrics = loop.archive_metrics()
    assert metrics["qd_score/teacher"] == pytest.approx(sum(q + 40.0 for _, q, _ in grid.data()))
    assert metrics["coverage/teacher"] == pytest.approx(grid.stats.num_elites / 6)
    buffer = io.BytesIO()
    torch.save(loop.state_dict(), buffer)
    buffer.seek(0)
    again = EvolutionLoop(pop, lin, cfg, 1)
    again.load_state_dict(torch.load(buffer, weights_only=True))
    assert again.grids["teacher"].settings == grid.settings and again.grids["teacher"].data() == grid.data()
    assert again.archive_metrics() == metrics


def test_archives_follow_the_schemes_declared_needs_not_their_names():
    """A plug-in scheme that declares ``Needs(archive=True)`` gets the loop's archive: past
    behaviours when it takes an ``archive`` parameter, else a grid of elites as its parent pool."""
    from redqueen._registry import Needs
    from redqueen.evo.selection import SELECTIONS
    from redqueen.fitness import NoveltyArchive

    seen: list[object] = []

    @SELECTIONS.register("test_remembers", needs=Needs(archive=True, member_fields=("descriptor",)))
    def remembers(individuals, k, *, rng, archive=None):
        seen.append(archive)
        return [int(i) for i in rng.integers(0, len(individuals), size=k)]

    @SELECTIONS.register("test_elites", needs=Needs(archive=True, member_fields=("descriptor",)))
    def elites(individuals, k, *, rng, bins: int = 4):
        return [int(i) for i in rng.integers(0, len(individuals), size=k)]

    try:
        for name in ("test_remembers", "test_elites"):
            pop, lin, ratings = _world(size=6)
            for ind in pop.living:
                ind.descriptor = np.array([0.1 * len(ind.id)])
            cfg = ReplacementConfig(cull_fraction=0.5, selection=name, operators={"gaussian": 1.0})
            loop = EvolutionLoop(pop, lin, cfg, 0)
            loop.replace(1, ratings)
            if name == "test_remembers":
                assert seen and all(isinstance(a, NoveltyArchive) for a in seen)
                assert set(loop.archives) == set(pop.roles) and not loop.grids
            else:
                assert set(loop.grids) == set(pop.roles) and not loop.archives
    finally:
        SELECTIONS.unregister("test_remembers")
        SELECTIONS.unregister("test_elites")


def test_an_integer_rng_is_any_integer_and_anything_else_is_named():
    negative = EvolutionLoop(Population(), Lineage(), rng=-1)
    wrapped = EvolutionLoop(Population(), Lineage(), rng=2**64 - 1)
    assert negative.rng.integers(1 << 30) == wrapped.rng.integers(1 << 30)
    for bad in ("0", 1.5, torch.Generator()):
        with pytest.raises(
            TypeError,
            match=r"^EvolutionLoop: rng must be a numpy\.random\.Generator, an integer seed or None",
        ):
            EvolutionLoop(Population(), Lineage(), rng=bad)


def test_the_cull_study_takes_any_integer_seed():
    from redqueen.evo import cull_study

    short = dict(rounds=3, burn_in=1, size=3)
    assert cull_study(seed=-1, **short) == cull_study(seed=2**64 - 1, **short)
    with pytest.raises(TypeError, match=r"^cull_study: seed must be an integer, got float$"):
        cull_study(seed=0.5, **short)
