"""DEAP's eaMuPlusLambda and pymoo's NSGA-II evolve LoRA genomes scored by the surrogate env."""

from __future__ import annotations

import copy
import random

import deap.algorithms
import deap.base
import deap.tools
import pytest
import torch
from deap import creator
from pymoo.algorithms.moo.nsga2 import NSGA2

from redqueen.environments.surrogate import SurrogateEnv
from redqueen.evo import Individual, Lineage, Population
from redqueen.evo.interop_deap import DeapBridge
from redqueen.evo.interop_pymoo import PymooBridge


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: one torch thread is faster than several on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def env():
    population = SurrogateEnv.default_population.updated(teachers=1, students=6, rank=2, alpha=4.0)
    return SurrogateEnv(population=population, seed=0)


def _founders(env):
    pop, lin = Population(), Lineage()
    for member in env.population.members("student"):
        ind = pop.add(Individual(pop.new_id("student"), "student", member.genome, (1.0, -1.0)))
        lin.record_birth(ind, 0)
    return pop, lin


def _objectives(env):
    def evaluate(ind):
        scores = env.evaluate(ind.genome)
        return scores["solve_rate"], scores["error"]

    return evaluate


def _check_lineage(pop, lin, final_ids):
    assert sorted(m.id for m in pop.living) == sorted(set(final_ids))
    assert sorted(lin.living()) == sorted(set(final_ids))
    children = [r for r in lin.records if r.parents]
    assert children, "no child was born"
    for record in lin.records:
        assert all(p in lin for p in record.parents)
    for member in pop.living:
        assert member.genome.rank == 2 and member.genome.alpha == 4.0
        assert member.fitness.valid and member.id in lin


def test_deap_ea_mu_plus_lambda_runs_on_lora_genomes(env):
    pop, lin = _founders(env)
    bridge = DeapBridge(population=pop, lineage=lin, role="student", evaluate=_objectives(env), seed=0)
    toolbox = bridge.toolbox(mate="svd_merge", mutate="lowrank_noise", select="nsga2")
    random.seed(0)
    final, _ = deap.algorithms.eaMuPlusLambda(
        pop.members("student"), toolbox, mu=6, lambda_=6, cxpb=0.5, mutpb=0.5, ngen=2, verbose=False
    )
    assert len(final) == 6 and bridge.generation == 2  # one select per generation
    _check_lineage(pop, lin, [i.id for i in final])
    ops = {r.operator for r in lin.records if r.parents}
    assert ops <= {"svd_merge", "lowrank_noise"}
    assert all(len(r.parents) == (2 if r.operator == "svd_merge" else 1) for r in lin.records if r.parents)


def test_deap_ea_simple_chains_mate_and_mutate(env):
    pop, lin = _founders(env)
    bridge = DeapBridge(population=pop, lineage=lin, role="student", evaluate=_objectives(env), seed=1)
    toolbox = bridge.toolbox(mate="svd_merge", mutate="gaussian", select="tournament", select_params={"tournsize": 2})
    random.seed(1)
    final, _ = deap.algorithms.eaSimple(pop.members("student"), toolbox, cxpb=1.0, mutpb=1.0, ngen=1, verbose=False)
    assert any(r.operator == "svd_merge+gaussian" for r in lin.records)
    bridge.survive(final)  # eaSimple replaces the population without a final select
    _check_lineage(pop, lin, [i.id for i in final])


def test_pymoo_nsga2_ask_tell_runs_on_lora_genomes(env):
    pop, lin = _founders(env)
    bridge = PymooBridge(population=pop, lineage=lin, role="student", evaluate=_objectives(env), n_obj=2, seed=0)
    algorithm = NSGA2(pop_size=6, sampling=bridge.sampling(), crossover=bridge.crossover("svd_merge"),
                      mutation=bridge.mutation("lowrank_noise"), eliminate_duplicates=bridge.duplicates())
    bridge.run(algorithm, n_gen=3, seed=0)
    final = [x[0] for x in algorithm.pop.get("X")]
    assert len(final) == 6 and bridge.generation == 3
    _check_lineage(pop, lin, [i.id for i in final])
    dup = bridge.duplicates()
    first = algorithm.pop[0]
    assert dup.is_equal(first, first) and not dup.is_equal(algorithm.pop[0], algorithm.pop[1])


def test_deap_clone_gives_each_clone_its_own_id_and_the_source_as_parent(env):
    pop, lin = _founders(env)
    bridge = DeapBridge(population=pop, lineage=lin, role="student", evaluate=_objectives(env), seed=2)
    toolbox = bridge.toolbox(mutate="gaussian")
    source = pop.members("student")[0]
    clones = [toolbox.clone(source) for _ in range(8)]
    assert len({c.id for c in clones} | {source.id}) == 9
    assert all(c.genome is source.genome and c.parents == (source.id,) for c in clones)
    again = toolbox.clone(clones[0])
    assert again.parents == (source.id,)
    (child,) = toolbox.mutate(clones[1])
    assert child.parents == (source.id,) and child.operator == "gaussian"
    assert copy.deepcopy(source) == source and clones[0] != source


def test_deap_ea_simple_with_double_tournament_and_hall_of_fame(env):
    pop, lin = _founders(env)
    bridge = DeapBridge(population=pop, lineage=lin, role="student", evaluate=_objectives(env), seed=3)
    toolbox = bridge.toolbox(mate="svd_merge", mutate="gaussian")
    toolbox.register("select", deap.tools.selDoubleTournament, fitness_size=2, parsimony_size=1.4,
                     fitness_first=True)
    hall = deap.tools.HallOfFame(4)
    random.seed(3)
    for ind in pop.members("student"):
        ind.fitness.values = toolbox.evaluate(ind)
    final, _ = deap.algorithms.eaSimple(pop.members("student"), toolbox, cxpb=0.5, mutpb=0.5, ngen=3,
                                        halloffame=hall, verbose=False)
    assert len({ind.id for ind in final}) == len(final) == 6  # every clone a member of its own
    assert len(hall) == 4 and len({h.id for h in hall}) == 4
    bridge.survive(final)
    _check_lineage(pop, lin, [i.id for i in final])


def test_deap_creator_individuals_keep_their_fitness_class(env):
    creator.create("LoraFitness", deap.base.Fitness, weights=(1.0, -1.0))
    creator.create("LoraIndividual", Individual, fitness=creator.LoraFitness)
    try:
        pop, lin = Population(), Lineage()
        for member in env.population.members("student"):
            ind = pop.add(creator.LoraIndividual(pop.new_id("student"), "student", member.genome))
            lin.record_birth(ind, 0)
        assert isinstance(ind.fitness, creator.LoraFitness) and ind.fitness.weights == (1.0, -1.0)
        bridge = DeapBridge(population=pop, lineage=lin, role="student", evaluate=_objectives(env), seed=4)
        toolbox = bridge.toolbox(mate="svd_merge", mutate="gaussian", select="nsga2")
        random.seed(4)
        final, _ = deap.algorithms.eaMuPlusLambda(pop.members("student"), toolbox, mu=6, lambda_=6,
                                                  cxpb=0.5, mutpb=0.5, ngen=2, verbose=False)
        assert all(isinstance(i, creator.LoraIndividual) and isinstance(i.fitness, creator.LoraFitness)
                   and i.fitness.valid for i in final)
        assert all(isinstance(toolbox.clone(i).fitness, creator.LoraFitness) for i in final)
        _check_lineage(pop, lin, [i.id for i in final])
    finally:
        del creator.LoraIndividual, creator.LoraFitness


def test_pymoo_nsga2_eliminates_duplicates_with_its_default(env):
    pop, lin = _founders(env)
    bridge = PymooBridge(population=pop, lineage=lin, role="student", evaluate=_objectives(env), n_obj=2, seed=5)
    algorithm = NSGA2(pop_size=6, sampling=bridge.sampling(), crossover=bridge.crossover("svd_merge"),
                      mutation=bridge.mutation("gaussian"), eliminate_duplicates=True)
    bridge.run(algorithm, n_gen=2, seed=5)
    final = [x[0] for x in algorithm.pop.get("X")]
    assert len(final) == 6 and len({id(i.genome) for i in final}) == 6
    _check_lineage(pop, lin, [i.id for i in final])


def test_the_bridges_take_any_integer_seed(env):
    pop, lin = _founders(env)
    make = dict(population=pop, lineage=lin, role="student", evaluate=_objectives(env))
    negative, wrapped = DeapBridge(**make, seed=-1), DeapBridge(**make, seed=2**64 - 1)
    assert negative.torch_rng.initial_seed() == wrapped.torch_rng.initial_seed() == 2**64 - 1
    assert negative.rng.integers(1 << 30) == wrapped.rng.integers(1 << 30)
    assert PymooBridge(**make, n_obj=2, seed=-1).torch_rng.initial_seed() == 2**64 - 1
    with pytest.raises(TypeError, match=r"^DeapBridge: seed must be an integer, got float$"):
        DeapBridge(**make, seed=0.5)
