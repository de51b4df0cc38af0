"""Evaluation of one finished run of the co-evolution-at-dose experiment (``COEVOLUTION_DOSE.md``).

Every solver living at the last step (students; solo agents) is measured with the learning
check's instruments (``learning_check.Probe``) on all 256 frozen ``code_output`` problems:

- E1, the change of the gold answer's mean per-token log-likelihood from the base model;
- the same for a random adapter of its own, scaled to the solver's exact KL on the answer
  positions of the reference set (the positions E1 reads);
- sampled pass@1 (4 answers at temperature 1) against the base model at a temperature T*
  chosen on 128 fresh generated calibration tasks, where the base's sampled pass@1 reaches the
  solvers'; greedy pass@1; per problem, the answer entropy of the samples.

The base model's figures that do not depend on the run (its calibration curve over the
temperature grid, its per-problem values at T = 1 and greedy) are computed once and cached in
the work directory (``base_reference.json``).
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

SOLVER_ROLES = ("student", "solo")
CALIBRATION_SEED = 30_000
CALIBRATION_TASKS = 128
SAMPLES = 4
TEMPERATURE_GRID = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: Sampling seeds shared by every solver and the base model (common random numbers).
EVAL_SEED, CALIBRATION_SAMPLE_SEED = 99, 98
RANDOM_TEMPLATE_SEED = 50_000
EVAL_FILE = "coevolution_dose_eval.json"
BASE_FILE = "base_reference.json"


def frozen_tasks() -> list[Any]:
    """All 256 frozen ``code_output`` problems as ``code_o`` tasks."""
    from redqueen.experiments.evaluation._code_output import frozen_problems
    from redqueen.verifiers import make_task

    return [
        make_task("code_o", r["program"], (r["input"],), (r["output"],)) for r in frozen_problems()
    ]


def answer_entropy(texts: Sequence[str | None]) -> float:
    """Entropy (nats) of the empirical distribution of answer texts; unparseable ones are one
    answer (``None``)."""
    counts = Counter(None if t is None else t.strip() for t in texts)
    p = np.array(list(counts.values()), dtype=float) / max(1, len(texts))
    return float(-(p * np.log(p)).sum()) + 0.0  # + 0.0: one answer gives 0.0, not -0.0


def sample(
    probe: Any, adapter: str | None, tasks: Sequence[Any], n: int, seed: int, temperature: float
) -> tuple[np.ndarray, list[list[str | None]]]:
    """(tasks, n) correct booleans and the parsed answers of ``n`` samples at ``temperature``."""
    from redqueen.engine import SamplingParams
    from redqueen.verifiers import check_answers
    from redqueen.verifiers.formats import SOLVE_STOP, parse_solution, solve_prompt

    params = SamplingParams(
        max_new_tokens=probe.budget, temperature=temperature, stop=(SOLVE_STOP,), seed=seed, n=n
    )
    gens = probe.host.generate([solve_prompt(t) for t in tasks], [adapter] * len(tasks), params)
    parsed = [parse_solution("code_o", g.text) for g in gens]
    items = [(tasks[i // n], p) for i, p in enumerate(parsed)]
    statuses = [str(getattr(s, "value", s)).lower() for s in check_answers(items, probe.executor)]
    correct = np.array([s == "correct" for s in statuses]).reshape(len(tasks), n)
    texts = [parsed[i * n : (i + 1) * n] for i in range(len(tasks))]
    return correct, texts


def exact_kl_on_answers(
    host: Any, adapter: str, pairs: Sequence[tuple[list[int], list[int]]], batch_size: int = 16
) -> float:
    """Mean exact KL(adapter || base) over the positions that predict the answer tokens of
    ``(prompt, answer)`` pairs: the positions E1 reads."""
    import torch

    total, count = 0.0, 0
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        rows = [p + c for p, c in chunk]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), host.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        answer = torch.zeros((len(rows), width - 1), dtype=torch.bool)
        for i, ((prompt, _completion), row) in enumerate(zip(chunk, rows, strict=True)):
            ids[i, : len(row)] = torch.tensor(row)
            attention[i, : len(row)] = 1
            # position j predicts token j + 1: the answer's tokens are predicted from len(prompt) - 1
            answer[i, len(prompt) - 1 : len(row) - 1] = True
        ids, attention, answer = ids.to(host.device), attention.to(host.device), answer.to(host.device)
        logp = {}
        with torch.no_grad():
            for name in (adapter, None):
                with host.use_adapter(name):
                    logits = host.model(input_ids=ids, attention_mask=attention, use_cache=False).logits
                logp[name] = torch.log_softmax(logits[:, :-1].float(), dim=-1)  # (batch, width-1, vocab)
        kl = (logp[adapter].exp() * (logp[adapter] - logp[None])).sum(-1)  # (batch, width-1)
        total += float(torch.where(answer, kl, 0.0).sum())
        count += int(answer.sum())
    return total / count if count else 0.0


def matched_random(
    probe: Any, name: str, target: float, pairs: Sequence[tuple[list[int], list[int]]], seed: int
) -> dict[str, float]:
    """A Gaussian adapter (the learning check's template) with B scaled by log-scale bisection
    so its answer-position exact KL is ``target`` within 5%; left installed as ``name``."""
    import torch

    from redqueen.genomes import LoRAGenome

    pop = probe.cfg.population
    template = LoRAGenome.random(
        probe.host.module_shapes,
        rank=pop.rank,
        alpha=pop.alpha,
        rng=torch.Generator().manual_seed(seed),
        init="gaussian",
        std=0.02,
    )

    def kl_at(scale: float) -> float:
        probe.host.set_adapter(
            name, template.replace({n: (a, scale * b) for n, (a, b) in template.items()})
        )
        return exact_kl_on_answers(probe.host, name, pairs)

    if target <= 0:
        return {"scale": 0.0, "kl_answers": kl_at(0.0)}
    lo, hi = 0.0, 1.0
    while kl_at(hi) < target and hi < 1e6:
        lo, hi = hi, hi * 4
    scale, kl = hi, kl_at(hi)
    for _ in range(40):
        scale = math.sqrt(lo * hi) if lo > 0 else hi / 4
        kl = kl_at(scale)
        if abs(kl / target - 1) <= 0.05:
            break
        lo, hi = (scale, hi) if kl < target else (lo, scale)
    return {"scale": scale, "kl_answers": kl}


def temperature_star(
    grid: Sequence[float], curve: Sequence[float], target: float
) -> tuple[float, str]:
    """Where the base's calibration pass@1 (``curve`` over ``grid``, ascending temperatures),
    linearly interpolated and searched downward from the highest temperature, first reaches
    ``target``. Returns (T*, how it was found)."""
    temps, values = list(grid), list(curve)
    if target <= values[-1]:
        return float(temps[-1]), "at or below the base at the highest temperature"
    for i in range(len(temps) - 1, 0, -1):
        hi_t, lo_t, hi_v, lo_v = temps[i], temps[i - 1], values[i], values[i - 1]
        if lo_v >= target > hi_v or lo_v >= target >= hi_v:
            frac = (target - hi_v) / (lo_v - hi_v) if lo_v != hi_v else 0.0
            return float(hi_t - frac * (hi_t - lo_t)), "interpolated"
    return float(temps[int(np.argmax(values))]), "above the whole grid (flagged)"


def living_solvers(run_dir: Path, steps: int) -> list[dict[str, Any]]:
    """Solvers alive at the last step with a saved adapter, each with its age."""
    with (run_dir / "lineage.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [
        {
            "name": r["name"],
            "role": r["role"],
            "age": steps - int(float(r.get("origin_time") or 0)),
            "operator": r.get("operator") or None,
        }
        for r in rows
        if not r.get("destruction_time")
        and r.get("role") in SOLVER_ROLES
        and (run_dir / "population" / r["name"] / "adapter_config.json").is_file()
    ]


def base_reference(probe: Any, held: list[Any], calibration: list[Any], path: Path) -> dict[str, Any]:
    """The run-independent base-model figures, computed once and cached at ``path``."""
    if path.is_file():
        return json.loads(path.read_text())
    gold = probe.gold(held)
    correct, texts = sample(probe, None, held, SAMPLES, EVAL_SEED, 1.0)
    curve = [
        float(sample(probe, None, calibration, SAMPLES, CALIBRATION_SAMPLE_SEED, t)[0].mean())
        for t in TEMPERATURE_GRID
    ]
    ref = {
        "gold_loglik": probe.gold_loglik(None, gold),
        "sampled_correct": correct.sum(1).tolist(),
        "answer_entropy": [answer_entropy(t) for t in texts],
        "greedy": [bool(x) for x in probe.greedy(None, held)],
        "calibration_grid": list(TEMPERATURE_GRID),
        "calibration_pass_at_1": curve,
    }
    path.write_text(json.dumps(ref) + "\n")
    return ref


def evaluate(run_dir: Path, steps: int, cache: Path) -> dict[str, Any]:
    """Every endpoint of the plan for one finished run; written to ``run_dir/EVAL_FILE``."""
    import torch
    from learning_check import Probe, stream_tasks

    from redqueen.engine import exact_kl_from_base
    from redqueen.genomes import LoRAGenome
    from redqueen.verifiers import Executor

    start = time.perf_counter()
    torch.set_num_threads(int(os.environ.get("COEVOLUTION_DOSE_EVAL_THREADS", "1")))
    solvers = living_solvers(run_dir, steps)
    with Executor() as executor:
        probe = Probe(0, executor)
        held = frozen_tasks()
        gold = probe.gold(held)
        calibration = stream_tasks(CALIBRATION_TASKS, CALIBRATION_SEED, executor)
        ref_tasks = stream_tasks(64, 777_000, executor)  # the learning check's reference set
        ref_pairs = probe.gold(ref_tasks)
        ref_rows = [p + c for p, c in ref_pairs]
        base = base_reference(probe, held, calibration, cache / BASE_FILE)
        base_ll = np.asarray(base["gold_loglik"])
        members = []
        for index, solver in enumerate(solvers):
            name = solver["name"]
            probe.host.set_adapter(name, LoRAGenome.from_peft(run_dir / "population" / name))
            ll = np.asarray(probe.gold_loglik(name, gold))
            correct, texts = sample(probe, name, held, SAMPLES, EVAL_SEED, 1.0)
            cal = float(sample(probe, name, calibration, SAMPLES, CALIBRATION_SAMPLE_SEED, 1.0)[0].mean())
            greedy = probe.greedy(name, held)
            kl_answers = exact_kl_on_answers(probe.host, name, ref_pairs)
            kl_all = exact_kl_from_base(probe.host, name, ref_rows)
            probe.host.remove_adapter(name)
            seed = RANDOM_TEMPLATE_SEED + 1000 * probe_seed(run_dir) + index
            random_fit = matched_random(probe, "random", kl_answers, ref_pairs, seed)
            random_ll = np.asarray(probe.gold_loglik("random", gold))
            random_kl_all = exact_kl_from_base(probe.host, "random", ref_rows)
            probe.host.remove_adapter("random")
            members.append(
                {
                    **solver,
                    "e1_change": float((ll - base_ll).mean()),
                    "random_e1_change": float((random_ll - base_ll).mean()),
                    "sampled_pass_at_1": float(correct.mean()),
                    "calibration_pass_at_1": cal,
                    "greedy_pass_at_1": float(np.mean(greedy)),
                    "kl_answers": kl_answers,
                    "kl_all_positions": kl_all,
                    "random_kl_answers": random_fit["kl_answers"],
                    "random_kl_all_positions": random_kl_all,
                    "random_scale": random_fit["scale"],
                    "random_template_seed": seed,
                    "per_problem": {
                        "gold_loglik_change": (ll - base_ll).tolist(),
                        "random_gold_loglik_change": (random_ll - base_ll).tolist(),
                        "sampled_correct": correct.sum(1).tolist(),
                        "answer_entropy": [answer_entropy(t) for t in texts],
                        "greedy": [bool(x) for x in greedy],
                    },
                }
            )
        trained = [m for m in members if m["age"] >= 1]
        target = float(np.mean([m["calibration_pass_at_1"] for m in trained])) if trained else 0.0
        t_star, how = temperature_star(base["calibration_grid"], base["calibration_pass_at_1"], target)
        base_t_correct, base_t_texts = sample(probe, None, held, SAMPLES, EVAL_SEED, t_star)
    report = {
        "steps": steps,
        "samples_per_problem": SAMPLES,
        "calibration": {
            "tasks": CALIBRATION_TASKS,
            "generator_seed": CALIBRATION_SEED,
            "solver_pass_at_1": target,
            "base_grid": base["calibration_grid"],
            "base_pass_at_1": base["calibration_pass_at_1"],
            "temperature_star": t_star,
            "found": how,
        },
        "base": {
            "gold_loglik": float(base_ll.mean()),
            "sampled_pass_at_1": float(np.sum(base["sampled_correct"]) / (SAMPLES * len(held))),
            "greedy_pass_at_1": float(np.mean(base["greedy"])),
            "sampled_pass_at_1_temperature_star": float(base_t_correct.mean()),
            "per_problem_temperature_star": {
                "sampled_correct": base_t_correct.sum(1).tolist(),
                "answer_entropy": [answer_entropy(t) for t in base_t_texts],
            },
        },
        "members": members,
        "seconds": round(time.perf_counter() - start, 1),
    }
    (run_dir / EVAL_FILE).write_text(json.dumps(report) + "\n")
    return report


def probe_seed(run_dir: Path) -> int:
    """The run's seed, from its resolved configuration."""
    import yaml

    return int(yaml.safe_load((run_dir / "config.yaml").read_text())["seed"])
