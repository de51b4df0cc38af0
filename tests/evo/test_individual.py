"""Individuals: DEAP fitness protocol, copies share genomes, DEAP selection runs unchanged."""

from __future__ import annotations

import copy
import pickle

import deap.tools
import numpy as np
import pytest

from redqueen.evo import Fitness, Individual, Population


def _individuals(n: int, weights=(1.0, 1.0), seed: int = 0) -> list[Individual]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        ind = Individual(f"x-{i:04d}", "x", genome=object(), fitness_weights=weights)
        ind.fitness.values = tuple(rng.random(len(weights)))
        out.append(ind)
    return out


def test_fitness_follows_deap_protocol():
    f = Fitness((1.0, -1.0), (2.0, 3.0))
    assert f.values == (2.0, 3.0) and f.wvalues == (2.0, -3.0) and f.valid
    g = Fitness((1.0, -1.0), (2.0, 4.0))
    assert f.dominates(g) and not g.dominates(f)
    assert f > g and g < f and f != g
    del f.values
    assert not f.valid
    with pytest.raises(ValueError, match="weights"):
        Fitness(())


def test_copies_share_the_genome_but_not_the_fitness():
    ind = _individuals(1)[0]
    ind.objectives["a"] = 1.0
    for clone in (copy.copy(ind), copy.deepcopy(ind)):
        assert clone.genome is ind.genome
        del clone.fitness.values
        clone.objectives["a"] = 2.0
        assert ind.fitness.valid and ind.objectives["a"] == 1.0
        assert clone.fitness.weights == ind.fitness.weights


def test_individual_pickles_without_creator():
    ind = Individual("x-0000", "x", genome=[1, 2], fitness_weights=(1.0, -1.0))
    ind.fitness.values = (1.0, 2.0)
    back = pickle.loads(pickle.dumps(ind))
    assert back.fitness.values == (1.0, 2.0) and back.fitness.weights == (1.0, -1.0)


def test_deap_selection_functions_run_on_our_individuals():
    inds = _individuals(12)
    for ind in inds:
        ind.cases = np.random.default_rng(hash(ind.id) % 100).random(4)
    assert len(deap.tools.selNSGA2(inds, 6)) == 6
    assert len(deap.tools.selSPEA2(inds, 6)) == 6
    assert all(s in inds for s in deap.tools.selTournament(inds, 5, tournsize=3))
    single = _individuals(8, weights=(1.0,))
    best = max(single, key=lambda i: i.fitness.values[0])
    assert deap.tools.selBest(single, 1)[0] is best
    lex = _individuals(6, weights=(1.0,) * 4)
    assert all(s in lex for s in deap.tools.selLexicase(lex, 3))


def test_population_ids_births_deaths_and_replacement():
    pop = Population(roles=("teacher", "student"))
    ids = [pop.new_id("teacher") for _ in range(3)]
    assert ids == ["teacher-0000", "teacher-0001", "teacher-0002"]
    for i in ids:
        pop.add(Individual(i, "teacher"))
    pop.add(Individual(pop.new_id("student"), "student"))
    assert [m.id for m in pop.members("teacher")] == ids and len(pop) == 4
    with pytest.raises(ValueError, match="teacher-0000"):
        pop.add(Individual("teacher-0000", "teacher"))
    dead = pop.replace("teacher-0001", Individual(pop.new_id("teacher"), "teacher"), step=5)
    assert dead.death == 5 and "teacher-0001" not in pop and "teacher-0003" in pop
    with pytest.raises(KeyError, match="teacher-0001"):
        pop.get("teacher-0001")
    with pytest.raises(KeyError, match="nobody"):
        pop.members("nobody")
    state = pop.state_dict()
    again = Population()
    again.load_state_dict(state)
    assert [m.id for m in again.living] == [m.id for m in pop.living]
    assert again.new_id("teacher") == "teacher-0004"
