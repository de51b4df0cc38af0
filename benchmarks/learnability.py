"""Can the inner loop raise tiny-coder's held-out code_output pass@1 from the right tasks?

The pre-registered probe of ``benchmarks/LEARNABILITY.md``: one LoRA adapter in the student
role trains with the ``tiny`` preset's learner settings on fresh ``code_o`` tasks from the
held-out suite's own generator (canonical forms disjoint from the held-out problems), and its
greedy pass@1 on the first 96 held-out problems is compared with the base model's, measured in
the same process. Writes ``benchmarks/results/learnability.json``.

Usage::

    python benchmarks/learnability.py [--steps 24] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy import stats

from redqueen.engine import (
    AdapterHost,
    Learner,
    LearnerConfig,
    Rollout,
    SamplingParams,
    whiten_pooled,
)
from redqueen.experiments.config import load_config
from redqueen.experiments.evaluation import CodeOutputSuite
from redqueen.fitness import StudentReward
from redqueen.genomes import LoRAGenome
from redqueen.verifiers import Executor, check_answers, make_task
from redqueen.verifiers.formats import SOLVE_STOP, parse_solution, solve_prompt

RESULTS = Path(__file__).resolve().parent / "results"
TASKS_PER_STEP = 16
ANSWERS_PER_TASK = 4
EVAL_PROBLEMS = 96
STREAM_SEED = 10_000


def training_stream(n: int, seed: int, executor: Executor) -> list[Any]:
    """``n`` code_o entries from the corpus generator, none sharing a canonical form with any
    frozen held-out problem."""
    from redqueen.experiments.evaluation._code_output import frozen_problems
    from redqueen.tinycoder.canonical import canonical_key
    from redqueen.tinycoder.corpus import build_corpus

    exclude = {canonical_key(p["program"]) for p in frozen_problems()}
    return build_corpus(n, seed=STREAM_SEED + seed, executor=executor, exclude=exclude)


def pass_at_1(host: AdapterHost, adapter: str | None, executor: Executor) -> float:
    """Greedy pass@1 of ``adapter`` (``None``: the base model) on the held-out problems."""
    suite = CodeOutputSuite()
    problems = suite.problems(EVAL_PROBLEMS)
    sampling = SamplingParams(
        max_new_tokens=suite.max_new_tokens, temperature=0.0, stop=tuple(suite.stop)
    )
    gens = host.generate([p.prompt for p in problems], [adapter] * len(problems), sampling)
    completions = [suite.completion(p, g.text) for p, g in zip(problems, gens, strict=True)]
    return float(np.mean(suite.check(problems, completions, executor)))


def train_step(
    host: AdapterHost,
    learner: Learner,
    entries: list[Any],
    executor: Executor,
    *,
    seed: int,
    max_new_tokens: int,
) -> dict[str, float]:
    """One step: sample answers to ``entries`` as code_o tasks, grade, whiten, update."""
    tasks = [
        make_task("code_o", e.program, list(e.inputs[:1]), list(e.outputs[:1])) for e in entries
    ]
    sampling = SamplingParams(
        max_new_tokens=max_new_tokens,
        temperature=1.0,
        stop=(SOLVE_STOP,),
        seed=seed,
        n=ANSWERS_PER_TASK,
    )
    gens = host.generate([solve_prompt(t) for t in tasks], ["probe"] * len(tasks), sampling)
    items = [
        (tasks[i // ANSWERS_PER_TASK], parse_solution("code_o", g.text)) for i, g in enumerate(gens)
    ]
    statuses = [str(getattr(s, "value", s)).lower() for s in check_answers(items, executor)]
    reward = StudentReward()
    rewards = [reward(s) for s in statuses]
    # The environment's rule: one (adapter, role, task type) group, pooled only if too small.
    levels = [(("probe", "student", "code_o"), ("student",))] * len(rewards)
    advantages, _ = whiten_pooled(rewards, levels)
    rollouts = [
        Rollout(
            prompt_ids=list(g.prompt_ids),
            token_ids=list(g.token_ids),
            logprobs=list(g.logprobs),
            advantage=float(a),
        )
        for g, a in zip(gens, advantages, strict=True)
        if g.token_ids
    ]
    result = learner.step("probe", rollouts)
    return {
        "solve_rate": float(np.mean([s == "correct" for s in statuses])),
        "mean_reward": float(np.mean(rewards)),
        "unparseable_share": float(np.mean([s == "unparseable" for s in statuses])),
        "mean_answer_tokens": float(np.mean([len(g.token_ids) for g in gens])),
        "kl_from_base": float(result.kl_from_base),
        "weight_change": float(result.weight_change),
    }


def run_seed(seed: int, steps: int, lr: float | None = None) -> dict[str, Any]:
    """One seed of the probe: base pass@1, training, pass@1 at steps 12 and ``steps``."""
    cfg = load_config("tiny")
    torch.manual_seed(seed)
    random.seed(seed)
    host = AdapterHost(None, device="cpu")
    settings = cfg.learner.model_dump()
    if lr is not None:
        settings["lr"] = lr
    learner = Learner(host, LearnerConfig(**settings))
    genome = LoRAGenome.random(
        host.module_shapes,
        rank=cfg.population.rank,
        alpha=cfg.population.alpha,
        rng=torch.Generator().manual_seed(seed),
        init="peft",
        base_model=str(host.model_path),
    )
    host.add_adapter("probe", genome)
    row: dict[str, Any] = {"per_step": []}
    with Executor(timeout=cfg.environment.executor.timeout) as executor:
        stream = training_stream(TASKS_PER_STEP * steps, seed, executor)
        row["base_pass_at_1"] = pass_at_1(host, None, executor)
        training = 0.0
        for step in range(steps):
            start = time.perf_counter()
            batch = stream[step * TASKS_PER_STEP : (step + 1) * TASKS_PER_STEP]
            record = train_step(
                host,
                learner,
                batch,
                executor,
                seed=seed * 100_003 + step,
                max_new_tokens=cfg.environment.solve_max_new_tokens,
            )
            training += time.perf_counter() - start
            row["per_step"].append(record)
            print(f"seed {seed} step {step}: {record}", file=sys.stderr, flush=True)
            if step + 1 == 12 or step + 1 == steps:
                row[f"pass_at_1_step{step + 1}"] = pass_at_1(host, "probe", executor)
        row["seconds_per_step"] = training / steps  # training only, evaluations excluded
    solve = [r["solve_rate"] for r in row["per_step"]]
    row["P1"] = row[f"pass_at_1_step{steps}"] - row["base_pass_at_1"]
    row["P2"] = row.get("pass_at_1_step12", float("nan")) - row["base_pass_at_1"]
    row["P3"] = float(np.polyfit(np.arange(len(solve)), solve, 1)[0]) if steps > 1 else float("nan")
    row["final_kl_from_base"] = row["per_step"][-1]["kl_from_base"]
    row["final_weight_change"] = row["per_step"][-1]["weight_change"]
    return row


def _ci(values: list[float], seed: int = 0) -> dict[str, float]:
    data = np.asarray(values, dtype=float)
    if len(data) < 2 or np.all(data == data[0]):
        return {"mean": float(data.mean()), "low": float(data.min()), "high": float(data.max())}
    res = stats.bootstrap(
        (data,),
        np.mean,
        n_resamples=10_000,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    low, high = res.confidence_interval
    return {"mean": float(data.mean()), "low": float(low), "high": float(high)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the probe over seeds and write its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--lr", type=float, default=None, help="learning rate (preset's if unset)")
    parser.add_argument("--out", type=Path, default=RESULTS / "learnability.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(1)
    per_seed = {str(seed): run_seed(seed, args.steps, args.lr) for seed in args.seeds}
    estimates = {
        key: _ci([row[key] for row in per_seed.values()])
        for key in ("P1", "P2", "P3", "final_kl_from_base", "seconds_per_step")
    }
    result = {
        "plan": "benchmarks/LEARNABILITY.md",
        "seeds": args.seeds,
        "setup": {
            "steps": args.steps,
            "lr": args.lr if args.lr is not None else load_config("tiny").learner.lr,
            "tasks_per_step": TASKS_PER_STEP,
            "answers_per_task": ANSWERS_PER_TASK,
            "held_out_problems": EVAL_PROBLEMS,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
        },
        "per_seed": per_seed,
        "estimates": estimates,
        "hypotheses": {
            "HL1": estimates["P1"]["low"] > 0,
            "HL2": estimates["P3"]["low"] > 0,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({"estimates": estimates, "hypotheses": result["hypotheses"]}, indent=1))
    return result


if __name__ == "__main__":
    main()
