"""Lineage: births and deaths, ALife CSV round trip, networkx view, phylogenetic diversity."""

from __future__ import annotations

import csv

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redqueen.evo import Individual, Lineage


def _tree() -> Lineage:
    """Two founders a, b; c = a x b at step 1; d = mutant of c at step 2; a dies at 2."""
    lin = Lineage()
    a = Individual("t-0000", "teacher")
    a.rating = (25.0, 8.0)
    lin.record_birth(a, 0)
    lin.record_birth(Individual("t-0001", "teacher"), 0)
    c = Individual("t-0002", "teacher", parents=["t-0000", "t-0001"], operator="svd_merge",
                   operator_params={"weights": (0.5, 0.5)}, birth=1)
    c.objectives["solve_rate"] = 0.25
    lin.record_birth(c, 1)
    lin.record_birth(Individual("t-0003", "teacher", parents=["t-0002"], operator="gaussian",
                                operator_params={"std": 0.01}, birth=2), 2)
    lin.record_death("t-0000", 2, a)
    return lin


def test_births_need_recorded_parents():
    lin = Lineage()
    with pytest.raises(ValueError, match="never recorded"):
        lin.record_birth(Individual("t-0005", "teacher", parents=["t-0004"]), 3)
    lin.record_birth(Individual("t-0000", "teacher"), 0)
    with pytest.raises(ValueError, match="already"):
        lin.record_birth(Individual("t-0000", "teacher"), 0)


def test_alife_csv_round_trip(tmp_path):
    lin = _tree()
    path = lin.to_csv(tmp_path / "lineage.csv")
    header = path.read_text().splitlines()[0].split(",")
    assert header[:4] == ["id", "ancestor_list", "origin_time", "destruction_time"]
    text = path.read_text()
    assert "[none]" in text and "[0,1]" in text
    back = Lineage.from_csv(path)
    assert [r.name for r in back.records] == [r.name for r in lin.records]
    for old, new in zip(lin.records, back.records, strict=True):
        assert (old.parents, old.operator, old.origin_time, old.destruction_time) == (
            new.parents, new.operator, new.origin_time, new.destruction_time)
        assert new.operator_params == old.operator_params
        assert new.fitness == pytest.approx(old.fitness)
        assert all(p in back for p in new.parents)
    assert back["t-0000"].fitness["rating_lcb"] == pytest.approx(1.0)


def test_alife_converter_reads_the_csv(tmp_path):
    """The ALife converters reject ``[0, 1]`` (a space) and a self-crossover's ``[0, 0]``."""
    convert = pytest.importorskip(
        "alifedata_phyloinformatics_convert", reason="alifedata-phyloinformatics-convert is not installed")
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    lin = _tree()
    lin.record_birth(Individual("t-0004", "teacher", parents=["t-0002", "t-0002"], operator="svd_merge"), 3)
    frame = pd.read_csv(lin.to_csv(tmp_path / "lineage.csv"))
    ancestors = convert.alife_dataframe_to_dict_of_lists(frame)
    assert ancestors == {0: [], 1: [], 2: [0, 1], 3: [2], 4: [2]}
    graph = convert.alife_dataframe_to_networkx_digraph(frame)
    assert sorted(graph.edges) == [(2, 0), (2, 1), (3, 2), (4, 2)]
    assert Lineage.from_csv(tmp_path / "lineage.csv")["t-0004"].parents == ("t-0002",)


def test_from_csv_rejects_unknown_ancestor(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,ancestor_list,origin_time\n0,[none],0\n1,[7],1\n")
    with pytest.raises(ValueError, match="ancestor 7"):
        Lineage.from_csv(path)


def test_networkx_and_phylogenetic_measures():
    lin = _tree()
    g = lin.to_networkx()
    assert set(g.predecessors("t-0002")) == {"t-0000", "t-0001"}
    assert g.nodes["t-0003"]["operator"] == "gaussian"
    assert lin.ancestors("t-0003") == {"t-0000", "t-0001", "t-0002"}
    # Living: t-0001, t-0002, t-0003. Edges ancestral to them: 0->2, 1->2, 2->3.
    assert lin.phylogenetic_diversity() == 3.0
    # distances: (1,2)=1, (1,3)=2, (2,3)=1 -> mean 4/3
    assert lin.mean_pairwise_distance() == pytest.approx(4 / 3)
    assert lin.phylogenetic_diversity(branch_length="time") == 1 + 1 + 1
    state = lin.state_dict()
    again = Lineage()
    again.load_state_dict(state)
    assert again.records == lin.records


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_phylogenies_round_trip(tmp_path, data):
    lin = Lineage()
    names = []
    for step in range(data.draw(st.integers(1, 12), label="births")):
        parents = data.draw(st.lists(st.sampled_from(names), max_size=3, unique=True), label="parents") if names else []
        ind = Individual(f"m-{step:04d}", data.draw(st.sampled_from(["teacher", "student"])), parents=parents,
                         operator="svd_merge" if parents else None, operator_params={"w": [0.5, 0.5]} if parents else {})
        ind.objectives["score"] = data.draw(st.floats(-1e6, 1e6, allow_nan=False))
        lin.record_birth(ind, step)
        names.append(ind.id)
        if data.draw(st.booleans(), label="kill one") and len(lin.living()) > 1:
            lin.record_death(lin.living()[0], step)
    path = lin.to_csv(tmp_path / "random.csv")
    back = Lineage.from_csv(path)
    assert [(r.name, r.parents, r.origin_time, r.destruction_time, r.role, r.operator_params) for r in back.records] == [
        (r.name, r.parents, r.origin_time, r.destruction_time, r.role, r.operator_params) for r in lin.records]
    assert all(p in back for r in back.records for p in r.parents)
    assert lin.phylogenetic_diversity(names) >= len({p for r in lin.records for p in r.parents})


def test_lineage_records_the_operator_parameters_used_defaults_included(tmp_path):
    """``operator_params`` in ``lineage.csv`` holds every value the operator ran with, not only
    the ones the configuration set."""
    import json

    import numpy as np
    import torch

    from redqueen.evo import EvolutionLoop, Individual, Population, ReplacementConfig
    from redqueen.fitness import RatingSystem
    from redqueen.genomes import LoRAGenome

    pop, lin, ratings = Population(roles=("solo",)), Lineage(), RatingSystem()
    gen = torch.Generator().manual_seed(0)
    for _ in range(4):
        genome = LoRAGenome.random({"net.0": (6, 4)}, rank=2, alpha=4.0, rng=gen, init="gaussian", std=0.1)
        ind = pop.add(Individual(pop.new_id("solo"), "solo", genome))
        lin.record_birth(ind, 0)
        ratings.add(ind.id)
    cfg = ReplacementConfig(cull_fraction=0.5, selection="tournament", operators={"gaussian": 1.0},
                            operator_params={"gaussian": {"sigma": 0.3}})
    births, _ = EvolutionLoop(pop, lin, cfg, np.random.default_rng(0)).replace(1, ratings)
    assert births
    lin.to_csv(tmp_path / "lineage.csv")
    rows = list(csv.DictReader(open(tmp_path / "lineage.csv")))
    recorded = [json.loads(r["operator_params"]) for r in rows if r["operator"] == "gaussian"]
    assert recorded and all(p == {"fraction": 0.25, "sigma": 0.3} for p in recorded)
