"""Selection schemes: valid, reproducible indices; agreement with pymoo and DEAP; behaviour."""

from __future__ import annotations

import deap.tools
import numpy as np
import pytest
from pymoo.core.population import Population as PymooPopulation
from pymoo.core.problem import Problem
from pymoo.operators.survival.rank_and_crowding import RankAndCrowding
from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

from redqueen._registry import UnknownNameError
from redqueen.evo import Individual
from redqueen.evo.selection import SELECTIONS, select
from redqueen.fitness import NoveltyArchive


def _population(n: int = 12, m: int = 2, seed: int = 0) -> list[Individual]:
    rng = np.random.default_rng(seed)
    inds = []
    for i in range(n):
        ind = Individual(f"x-{i:04d}", "x", fitness_weights=(1.0,) * m)
        ind.fitness.values = tuple(rng.random(m))
        ind.cases = rng.random(6)
        ind.descriptor = rng.random(2)
        ind.rating = (25.0 + 3 * rng.normal(), 8.0 * rng.random() + 0.5)
        inds.append(ind)
    return inds


@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_every_scheme_returns_valid_reproducible_indices(name):
    inds = _population()
    for k in (1, 5, 20):
        a = select(name, inds, k, rng=np.random.default_rng(3))
        b = select(name, inds, k, rng=np.random.default_rng(3))
        assert a == b and len(a) == k and all(0 <= i < len(inds) for i in a)


def test_select_checks_its_arguments():
    inds = _population(4)
    with pytest.raises(UnknownNameError, match="tournament"):
        select("no_such_scheme", inds, 2, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="Generator"):
        select("tournament", inds, 2, rng=0)
    inds[1].fitness.delValues()
    with pytest.raises(ValueError, match="x-0001"):
        select("tournament", inds, 2, rng=np.random.default_rng(0))
    assert select("tournament", inds, 0, rng=np.random.default_rng(0)) == []


def test_select_checks_parameter_names_and_declared_ranges():
    inds = _population(4)
    with pytest.raises(TypeError, match=r"tsize: unknown parameter \(known: tournsize\)"):
        select("tournament", inds, 2, rng=np.random.default_rng(0), tsize=2)
    with pytest.raises(ValueError, match="tournsize: input should be greater than or equal to 1"):
        select("tournament", inds, 2, rng=np.random.default_rng(0), tournsize=0)
    with pytest.raises(ValueError, match="crowding"):
        select("nsga2", inds, 2, rng=np.random.default_rng(0), crowding="nope")


def test_select_leaves_non_scalar_parameters_to_the_scheme():
    inds = _population(4)
    for ind in inds:
        ind.descriptor = np.array([float(ind.fitness.values[0]), 0.0])
    chosen = select("novelty", inds, 2, rng=np.random.default_rng(0), archive=[[0.0, 0.0]], neighbours=2)
    assert len(chosen) == 2


def test_select_takes_the_operators_torch_generator_reproducibly():
    import torch

    inds = _population(8)
    first = select("tournament", inds, 6, rng=torch.Generator().manual_seed(3))
    assert first == select("tournament", inds, 6, rng=torch.Generator().manual_seed(3))
    assert all(0 <= i < 8 for i in first)


def test_nsga2_matches_pymoo_and_deap_fronts():
    for seed in range(5):
        inds = _population(20, m=2, seed=seed)
        w = np.asarray([i.fitness.wvalues for i in inds])
        k = 10
        ours = select("nsga2", inds, k, rng=np.random.default_rng(0))
        assert len(set(ours)) == k
        # pymoo RankAndCrowding on the same (minimised) values.
        pop = PymooPopulation.new(F=-w, index=np.arange(len(inds)))
        theirs = RankAndCrowding().do(Problem(n_var=1, n_obj=2), pop, n_survive=k, random_state=np.random.default_rng(0))
        assert set(ours) == {int(i) for i in theirs.get("index")}
        # DEAP selNSGA2: same non-dominated ranks of the survivors and same first front.
        deap_sel = deap.tools.selNSGA2(list(inds), k)
        fronts = NonDominatedSorting().do(-w)
        rank = {int(i): r for r, front in enumerate(fronts) for i in front}
        by_id = {id(ind): j for j, ind in enumerate(inds)}
        deap_idx = [by_id[id(ind)] for ind in deap_sel]
        assert sorted(rank[i] for i in ours) == sorted(rank[i] for i in deap_idx)
        first = set(int(i) for i in fronts[0])
        if len(first) <= k:
            assert first <= set(ours) and first <= set(deap_idx)
        deap_first = deap.tools.sortNondominated(list(inds), len(inds), first_front_only=True)[0]
        assert {by_id[id(ind)] for ind in deap_first} == first


def test_truncation_and_rating_lcb_rank_best_first():
    inds = _population(6, m=1)
    best = int(np.argmax([i.fitness.values[0] for i in inds]))
    assert select("truncation", inds, 1, rng=np.random.default_rng(0)) == [best]
    lcb = [i.rating[0] - 3 * i.rating[1] for i in inds]
    assert select("rating_lcb", inds, 6, rng=np.random.default_rng(0)) == list(np.argsort(lcb)[::-1])


def test_tournament_never_picks_the_worst_with_full_tournaments():
    inds = _population(5, m=1)
    worst = int(np.argmin([i.fitness.values[0] for i in inds]))
    picks = select("tournament", inds, 50, rng=np.random.default_rng(0), tournsize=5)
    assert worst not in picks


@pytest.mark.parametrize("name", ["lexicase", "epsilon_lexicase"])
def test_lexicase_prefers_the_specialist_on_its_case(name):
    inds = _population(5, m=1)
    for ind in inds:
        ind.cases = np.full(4, 0.5)
    specialist = inds[3]
    specialist.cases = np.array([1.0, 0.0, 0.0, 0.0])
    for other in inds:
        if other is not specialist:
            other.cases = np.array([0.2, 0.6, 0.6, 0.6])
    picks = select(name, inds, 400, rng=np.random.default_rng(0))
    share = picks.count(3) / len(picks)
    # The specialist wins whenever case 0 comes first: one time in four.
    assert 0.15 < share < 0.35


def test_novelty_ranks_an_isolated_descriptor_above_a_crowded_one():
    inds = _population(6)
    for j, ind in enumerate(inds):
        ind.descriptor = np.array([0.1 + 0.01 * j, 0.1])
    inds[4].descriptor = np.array([0.9, 0.9])
    assert select("novelty", inds, 1, rng=np.random.default_rng(0), neighbours=2) == [4]
    # An archive around the isolated point makes it crowded.
    archive = NoveltyArchive(k=2)
    archive.add(np.array([[0.9, 0.91], [0.91, 0.9], [0.9, 0.89]]))
    assert select("novelty", inds, 1, rng=np.random.default_rng(0), archive=archive, neighbours=2) != [4]


def test_map_elites_draws_only_cell_elites():
    inds = _population(8, m=1)
    for j, ind in enumerate(inds):
        ind.descriptor = np.array([0.1 if j < 4 else 0.9])
        ind.fitness.values = (float(j % 4),)
    picks = set(select("map_elites", inds, 50, rng=np.random.default_rng(0), bins=2))
    assert picks == {3, 7}


def test_map_elites_grids_on_the_configured_bounds_not_the_defaults():
    # On the default grid (10 bins over [0, 1]) every descriptor below 0 shares the edge cell,
    # so only the best member would be drawn; on 4 bins over [-2, 0] each of these is its own cell.
    inds = _population(4, m=1)
    for j, ind in enumerate(inds):
        ind.descriptor = np.array([-1.75 + 0.5 * j])
        ind.fitness.values = (float(j),)
    assert set(select("map_elites", inds, 60, rng=np.random.default_rng(0))) == {3}
    picks = select("map_elites", inds, 60, rng=np.random.default_rng(0), bins=4, low=-2.0, high=0.0)
    assert set(picks) == {0, 1, 2, 3}
    # Per-dimension bins and bounds: 2 x 1 cells over [0, 1] x [5, 6].
    for ind, desc in zip(inds, ([0.2, 5.5], [0.3, 5.9], [0.7, 5.1], [0.8, 5.2]), strict=True):
        ind.descriptor = np.array(desc)
    picks = select("map_elites", inds, 60, rng=np.random.default_rng(0), bins=[2, 1], low=[0.0, 5.0], high=[1.0, 6.0])
    assert set(picks) == {1, 3}


def test_map_elites_grid_settings_are_checked():
    inds = _population(4, m=1)
    with pytest.raises(TypeError, match="bnis: unknown parameter"):
        select("map_elites", inds, 2, rng=np.random.default_rng(0), bnis=3)
    with pytest.raises(ValueError, match="bins"):
        select("map_elites", inds, 2, rng=np.random.default_rng(0), bins=0)
    with pytest.raises(ValueError, match="high: must be above low"):
        SELECTIONS.validate("map_elites", {"low": [0.0, 1.0], "high": 1.0})
    assert SELECTIONS.effective_params("map_elites", {"bins": 3}) == {
        "bins": 3, "low": 0.0, "high": 1.0, "qd_score_offset": 0.0,
    }


def test_novelty_lc_keeps_an_isolated_good_member():
    inds = _population(8, m=1)
    for j, ind in enumerate(inds):
        ind.descriptor = np.array([0.01 * j, 0.0])
        ind.fitness.values = (0.1,)
    inds[5].descriptor = np.array([1.0, 1.0])
    inds[5].fitness.values = (1.0,)
    assert 5 in select("novelty_lc", inds, 2, rng=np.random.default_rng(0), neighbours=3)


def test_custom_scheme_registers_and_runs():
    @SELECTIONS.register("first_member_test", overwrite=True)
    def first_member(individuals, k, *, rng):
        """Always the first member."""
        return [0] * k

    try:
        assert select("first_member_test", _population(3), 3, rng=np.random.default_rng(0)) == [0, 0, 0]
        assert SELECTIONS.describe("first_member_test") == "Always the first member."
    finally:
        SELECTIONS._items.pop("first_member_test")


def test_grid_archive_keeps_elites_and_reports_pyribs_stats():
    from redqueen.evo import Individual
    from redqueen.evo.selection import GridArchive, GridSettings

    def member(i, desc, value):
        ind = Individual(f"x-{i:04d}", "x", genome=None)
        ind.descriptor, ind.fitness.values = np.asarray(desc), (value,)
        return ind

    archive = GridArchive(settings=GridSettings(bins=[2, 2], low=[0.0, 0.0], high=[1.0, 1.0], qd_score_offset=-1.0))
    assert archive.add([member(0, [0.1, 0.1], 1.0), member(1, [0.2, 0.2], 3.0), member(2, [0.9, 0.9], 2.0)]) == 3
    assert [e.id for e in archive.elites] == ["x-0001", "x-0002"]  # one elite per cell, best first
    assert archive.add([member(3, [0.3, 0.3], 2.5), member(4, [1.5, -3.0], 0.5)]) == 1  # worse; edge cell
    stats = archive.stats
    assert stats.num_elites == 3 and stats.coverage == pytest.approx(3 / 4)
    assert stats.qd_score == pytest.approx((3 + 1) + (2 + 1) + (0.5 + 1)) and stats.obj_max == 3.0
    back = GridArchive()
    back.load_state_dict(archive.state_dict())
    assert back.data() == archive.data() and back.stats == stats


def test_grid_archive_samples_its_elites_on_a_non_default_grid():
    from redqueen.evo.selection import GridArchive, GridSettings

    settings = GridSettings(bins=[3, 2], low=[-3.0, 10.0], high=[3.0, 20.0], qd_score_offset=-5.0)
    archive = GridArchive(settings=settings)
    inds = _population(6, m=1)
    for j, ind in enumerate(inds):
        ind.descriptor = np.array([-2.5 + j, 11.0 if j % 2 else 19.0])
        ind.fitness.values = (float(j),)
    assert archive.add(inds) == 6 and archive.dims == (3, 2) and archive.cells == 6
    assert archive.index_of(np.array([[-2.5, 11.0], [2.9, 19.9], [100.0, -100.0]])) == [(0, 0), (2, 1), (2, 0)]
    assert archive.stats.qd_score == pytest.approx(sum(range(6)) + 6 * 5.0)
    drawn = archive.sample_elites(200, rng=np.random.default_rng(7))
    assert {d.id for d in drawn} == {ind.id for ind in inds}  # uniform over the six cells
    again = archive.sample_elites(200, rng=np.random.default_rng(7))
    assert [d.id for d in again] == [d.id for d in drawn]
    # The j-th draw of rng.integers is the j-th elite, best first.
    order = np.random.default_rng(7).integers(0, 6, size=200)
    assert [d.id for d in drawn] == [archive.elites[j].id for j in order]
    back = GridArchive()
    back.load_state_dict(archive.state_dict())
    assert back.settings == settings and back.dims == (3, 2) and back.stats == archive.stats
    with pytest.raises(ValueError, match="empty"):
        GridArchive(settings=settings).sample_elites(1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="do not fit"):
        GridArchive(settings=GridSettings(bins=[2, 2, 2])).add(inds)


@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_every_scheme_names_a_member_that_is_not_a_candidate(name):
    # tournament and rating_lcb raised AttributeError ('int' object has no attribute 'fitness')
    with pytest.raises(ValueError, match=r"member 7 has no"):
        select(name, [7, 8], 1, rng=np.random.default_rng(0))


@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_every_scheme_refuses_an_empty_population_and_a_negative_k(name):
    rng = np.random.default_rng(0)
    for call in (SELECTIONS[name], lambda inds, k, **kw: select(name, inds, k, **kw)):
        with pytest.raises(
            ValueError, match=rf"^select\('{name}'\): cannot select 3 from an empty population$"
        ):
            call([], 3, rng=rng)
        with pytest.raises(ValueError, match=rf"^select\('{name}'\): k must be >= 0, got -1$"):
            call(_population(4), -1, rng=rng)
        with pytest.raises(
            TypeError, match=rf"^select\('{name}'\): k must be an integer, got float$"
        ):
            call(_population(4), 2.0, rng=rng)
        assert call([], 0, rng=rng) == []


def test_a_scheme_called_directly_checks_its_parameters_and_rng():
    inds = _population(4)
    with pytest.raises(
        ValueError,
        match=r"^select\('tournament'\): tournsize: input should be greater than or equal to 1",
    ):
        SELECTIONS["tournament"](inds, 2, rng=np.random.default_rng(0), tournsize=0)
    with pytest.raises(
        TypeError, match=r"^select\('tournament'\): rng must be a numpy\.random\.Generator"
    ):
        SELECTIONS["tournament"](inds, 2, rng=None)
    # a torch generator works as in select(), and gives the same choice
    import torch

    direct = SELECTIONS["tournament"](inds, 5, rng=torch.Generator().manual_seed(1))
    assert direct == select("tournament", inds, 5, rng=torch.Generator().manual_seed(1))
