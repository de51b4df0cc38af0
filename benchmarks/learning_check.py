"""Learning you can prove: a positive control, held-out transfer, and nulls of the same size.

The pre-registered check of ``benchmarks/LEARNING_CHECK.md``, on the CPU, one student adapter
with the ``tiny`` preset's learner:

- ``c1``: the positive control, 32 fixed ``code_o`` tasks the base model solves sometimes,
  trained on repeatedly; greedy pass@1 on them must rise by the plan's margin;
- ``c2``: training on fresh generator tasks, held-out endpoints (gold answer log-likelihood,
  sampled pass@1 and pass@8, greedy pass@1 and its flips) against two nulls run in the same
  process: a random adapter scaled to the trained one's exact KL, and training with rewards
  shuffled within each batch;
- ``dose``: the trained adapter's gold log-likelihood change over steps x answers per task.

Each finished run is written at once to ``--out`` (default
``benchmarks/results/learning_check.json``) under ``runs``; a run already there is skipped, so
an interrupted check resumes where it stopped. The summary (decisions, intervals, power) is
recomputed from the runs on every write and by ``--summarise``; ``--plot`` draws the figure.

Usage::

    python benchmarks/learning_check.py --part c1 c2 --seeds 0 1 2 3 4 5 6 7
    python benchmarks/learning_check.py --part dose --seeds 0 1 2 3
    python benchmarks/learning_check.py --summarise --plot
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import random
import subprocess
import sys
import time
from collections.abc import Sequence
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
    exact_kl_from_base,
    whiten_pooled,
)
from redqueen.engine._batch import RolloutBatch
from redqueen.experiments.config import load_config
from redqueen.fitness import StudentReward
from redqueen.genomes import LoRAGenome
from redqueen.verifiers import Executor, check_answers, make_task
from redqueen.verifiers.formats import SOLVE_STOP, parse_solution, solve_completion, solve_prompt

RESULTS = Path(__file__).resolve().parent / "results"
HELD_OUT = 96
REFERENCE_TASKS = 64
REFERENCE_SEED = 777_000
STREAM_SEED = 20_000
SESOI = 0.01  # nats per token on E1, fixed in the plan
#: The smallest effect of interest per decision endpoint: E1 in nats per token (the plan);
#: E2, sampled pass@1 on the held-out problems, one percentage point (amendment d).
SESOI_BY_ENDPOINT = {"E1": SESOI, "E2": 0.01}
C1_MARGIN = 0.10
PLANNED_SEEDS = 8
DOSE_CELLS = ((4, 4), (4, 8), (16, 4), (16, 8))


# -- tasks -------------------------------------------------------------------------------------


def stream_tasks(n: int, seed: int, executor: Executor) -> list[Any]:
    """``n`` fresh ``code_o`` tasks from the held-out suite's generator, disjoint from it."""
    from redqueen.experiments.evaluation._code_output import frozen_problems
    from redqueen.tinycoder.canonical import canonical_key
    from redqueen.tinycoder.corpus import build_corpus

    exclude = {canonical_key(p["program"]) for p in frozen_problems()}
    entries = build_corpus(n, seed=seed, executor=executor, exclude=exclude)
    return [
        make_task("code_o", e.program, list(e.inputs[:1]), list(e.outputs[:1])) for e in entries
    ]


def held_out_tasks() -> list[Any]:
    from redqueen.experiments.evaluation._code_output import frozen_problems

    return [
        make_task("code_o", r["program"], (r["input"],), (r["output"],))
        for r in frozen_problems()[:HELD_OUT]
    ]


# -- the model's answers -----------------------------------------------------------------------


class Probe:
    """One process's base model, learner and sandbox, with the plan's fixed settings."""

    def __init__(self, seed: int, executor: Executor, lr: float | None = None) -> None:
        self.cfg = load_config("tiny")
        torch.manual_seed(seed)
        random.seed(seed)
        self.seed = seed
        default = self.cfg.model.name if self.cfg.model.name != "tiny-coder" else None
        self.host = AdapterHost(os.environ.get("REDQUEEN_LEARNING_CHECK_MODEL") or default)
        settings = self.cfg.learner.model_dump()
        if lr is not None:
            settings["lr"] = lr
        self.learner = Learner(self.host, LearnerConfig(**settings))
        self.executor = executor
        self.budget = self.cfg.environment.solve_max_new_tokens

    def student(self, name: str) -> None:
        pop = self.cfg.population
        genome = LoRAGenome.random(
            self.host.module_shapes,
            rank=pop.rank,
            alpha=pop.alpha,
            rng=torch.Generator().manual_seed(self.seed),
            init="peft",
            base_model=str(self.host.model_path),
        )
        self.host.set_adapter(name, genome)

    def answers(
        self, adapter: str | None, tasks: Sequence[Any], n: int, seed: int, greedy: bool = False
    ) -> tuple[list[Any], list[str]]:
        params = SamplingParams(
            max_new_tokens=self.budget,
            temperature=0.0 if greedy else 1.0,
            stop=(SOLVE_STOP,),
            seed=seed,
            n=1 if greedy else n,
        )
        gens = self.host.generate([solve_prompt(t) for t in tasks], [adapter] * len(tasks), params)
        per = 1 if greedy else n
        items = [(tasks[i // per], parse_solution("code_o", g.text)) for i, g in enumerate(gens)]
        statuses = [
            str(getattr(s, "value", s)).lower() for s in check_answers(items, self.executor)
        ]
        return gens, statuses

    def correct(self, adapter: str | None, tasks: Sequence[Any], n: int, seed: int) -> np.ndarray:
        """(tasks, n) booleans of ``n`` answers at temperature 1."""
        _, statuses = self.answers(adapter, tasks, n, seed)
        return np.array([s == "correct" for s in statuses]).reshape(len(tasks), n)

    def greedy(self, adapter: str | None, tasks: Sequence[Any]) -> list[bool]:
        _, statuses = self.answers(adapter, tasks, 1, 0, greedy=True)
        return [s == "correct" for s in statuses]

    def step(
        self,
        adapter: str,
        tasks: Sequence[Any],
        answers: int,
        seed: int,
        shuffle: random.Random | None = None,
    ) -> dict[str, float]:
        """One learner step on ``answers`` samples per task; rewards permuted if ``shuffle``."""
        gens, statuses = self.answers(adapter, tasks, answers, seed)
        reward = StudentReward()
        rewards = [reward(s) for s in statuses]
        used = list(rewards)
        if shuffle is not None:
            shuffle.shuffle(used)
        levels = [((adapter, "student", "code_o"), ("student",))] * len(used)
        advantages, _ = whiten_pooled(used, levels)
        rollouts = [
            Rollout(g.prompt_ids, g.token_ids, g.logprobs, float(a))
            for g, a in zip(gens, advantages, strict=True)
            if g.token_ids
        ]
        self.learner.step(adapter, rollouts)
        return {
            "reward": float(np.mean(rewards)),
            "solve_rate": float(np.mean([s == "correct" for s in statuses])),
        }

    def gold(self, tasks: Sequence[Any]) -> list[tuple[list[int], list[int]]]:
        tok = self.host.tokenizer
        return [
            (
                tok(solve_prompt(t))["input_ids"],
                tok(solve_completion(t), add_special_tokens=False)["input_ids"],
            )
            for t in tasks
        ]

    @torch.no_grad()
    def gold_loglik(
        self, adapter: str | None, gold: Sequence[tuple[list[int], list[int]]]
    ) -> list[float]:
        """Per task, the mean per-token log-probability of the gold answer (teacher-forced)."""
        out: list[float] = []
        for start in range(0, len(gold), 16):
            chunk = [Rollout(p, c, [0.0] * len(c), 0.0) for p, c in gold[start : start + 16]]
            batch = RolloutBatch.build(chunk, self.host.pad_token_id, self.host.device)
            with self.host.use_adapter(adapter):
                logp = self.learner.logprobs(batch)
            mask = batch.mask.float()
            out += ((logp * mask).sum(-1) / mask.sum(-1)).tolist()
        return out

    def matched_random(
        self, name: str, target: float, refs: list[list[int]]
    ) -> tuple[float, float]:
        """A Gaussian adapter with B scaled so its exact KL is ``target`` (within 5%)."""
        pop = self.cfg.population
        template = LoRAGenome.random(
            self.host.module_shapes,
            rank=pop.rank,
            alpha=pop.alpha,
            rng=torch.Generator().manual_seed(10_000 + self.seed),
            init="gaussian",
            std=0.02,
        )

        def kl_at(scale: float) -> float:
            self.host.set_adapter(
                name, template.replace({n: (a, scale * b) for n, (a, b) in template.items()})
            )
            return exact_kl_from_base(self.host, name, refs)

        if target <= 0:
            return 0.0, kl_at(0.0)
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
        return scale, kl


def references(probe: Probe) -> list[list[int]]:
    tasks = stream_tasks(REFERENCE_TASKS, REFERENCE_SEED, probe.executor)
    return [p + c for p, c in probe.gold(tasks)]


# -- runs --------------------------------------------------------------------------------------


def screen_tasks(
    probe: Probe, seed: int, n_tasks: int, answers: int, screen_limit: int, batch: int = 64
) -> list[Any]:
    """The first ``n_tasks`` stream tasks the base model solves sometimes (rate in (0, 1))."""
    pool = stream_tasks(screen_limit, STREAM_SEED + 500 + seed, probe.executor)
    chosen: list[Any] = []
    for start in range(0, len(pool), batch):
        part = pool[start : start + batch]
        rates = probe.correct(None, part, answers, seed=seed).mean(1)
        chosen += [t for t, r in zip(part, rates, strict=True) if 0 < r < 1]
        if len(chosen) >= n_tasks:
            break
    return chosen[:n_tasks]


def train_c1(
    probe: Probe, tasks: list[Any], *, steps: int, answers: int, name: str = "s"
) -> dict[str, Any]:
    """Train a fresh student on the fixed ``tasks``; greedy pass@1 before and after."""
    probe.student(name)
    before = probe.greedy(name, tasks)
    log = [probe.step(name, tasks, answers, probe.seed * 1000 + k) for k in range(steps)]
    after = probe.greedy(name, tasks)
    return {
        "tasks": len(tasks),
        "steps": steps,
        "answers": answers,
        "greedy_before": float(np.mean(before)),
        "greedy_after": float(np.mean(after)),
        "C1a": float(np.mean(after) - np.mean(before)),
        "C1b": log[-1]["reward"] - log[0]["reward"],
        "per_step": log,
    }


def run_c1(
    seed: int,
    *,
    lr: float | None = None,
    n_tasks: int = 32,
    steps: int = 6,
    answers: int = 8,
    screen_limit: int = 600,
) -> dict[str, Any]:
    """The positive control: train on ``n_tasks`` fixed tasks the base solves sometimes."""
    with Executor() as executor:
        probe = Probe(seed, executor, lr)
        tasks = screen_tasks(probe, seed, n_tasks, answers, screen_limit)
        return train_c1(probe, tasks, steps=steps, answers=answers)


def run_c2(seed: int, *, steps: int = 16, answers: int = 8, nulls: bool = True) -> dict[str, Any]:
    """Transfer: train on fresh tasks; held-out endpoints for base, trained and nulls."""
    t0 = time.perf_counter()
    with Executor() as executor:
        probe = Probe(seed, executor)
        stream = stream_tasks(16 * steps, STREAM_SEED + seed, executor)
        held = held_out_tasks()
        gold = probe.gold(held)
        refs = references(probe) if nulls else []
        arms = ["trained", "shuffled"] if nulls else ["trained"]
        logs: dict[str, list[dict[str, float]]] = {}
        for arm in arms:
            probe.student(arm)
            shuffle = random.Random(seed) if arm == "shuffled" else None
            logs[arm] = [
                probe.step(arm, stream[16 * k : 16 * (k + 1)], answers, seed * 1000 + k, shuffle)
                for k in range(steps)
            ]
        kl = {arm: exact_kl_from_base(probe.host, arm, refs) for arm in arms if refs}
        if nulls:
            scale, kl["random"] = probe.matched_random("random", kl["trained"], refs)
            arms.append("random")
        evaluated = [None, *arms] if nulls else [None, "trained"]
        row: dict[str, Any] = {"steps": steps, "answers": answers, "kl_exact": kl, "train": logs}
        for arm in evaluated:
            key = arm or "base"
            ll = probe.gold_loglik(arm, gold)
            entry: dict[str, Any] = {"E1": float(np.mean(ll))}
            if nulls:
                sampled = probe.correct(arm, held, 8, seed=seed + 99)
                greedy = probe.greedy(arm, held)
                entry.update(
                    {
                        "E2": float(sampled.mean()),
                        "E3": float(sampled.any(1).mean()),
                        "greedy": float(np.mean(greedy)),
                        "greedy_per_problem": greedy,
                    }
                )
            row[key] = entry
        if nulls:
            row["random_scale"] = scale
            base = row["base"]["greedy_per_problem"]
            row["flips"] = {
                arm: {
                    "to_right": [
                        i
                        for i, (b, a) in enumerate(
                            zip(base, row[arm]["greedy_per_problem"], strict=True)
                        )
                        if a and not b
                    ],
                    "to_wrong": [
                        i
                        for i, (b, a) in enumerate(
                            zip(base, row[arm]["greedy_per_problem"], strict=True)
                        )
                        if b and not a
                    ],
                }
                for arm in arms
            }
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


# -- statistics --------------------------------------------------------------------------------


def t_interval(values: Sequence[float]) -> dict[str, float]:
    x = np.asarray(values, dtype=float)
    n, mean = len(x), float(x.mean()) if len(x) else float("nan")
    if n < 2:  # no interval from one seed (null in the JSON, not NaN)
        return {"mean": mean, "low": None, "high": None, "n": n}
    half = float(stats.t.ppf(0.975, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n}


def sign_flip_p(values: Sequence[float]) -> float:
    """Exact two-sided sign-flip permutation p-value of the mean (all 2^n patterns)."""
    x = np.asarray(values, dtype=float)
    observed = abs(x.mean())
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(x))))
    return float(np.mean(np.abs((signs * x).mean(1)) >= observed - 1e-15))


def holm(pvalues: dict[str, float], alpha: float = 0.05) -> dict[str, bool]:
    order = sorted(pvalues, key=pvalues.get)
    reject, still = {}, True
    for rank, key in enumerate(order):
        still = still and pvalues[key] <= alpha / (len(order) - rank)
        reject[key] = still
    return reject


def detectable(values: Sequence[float]) -> float | None:
    """Mean difference a paired t test (alpha 0.05) detects with 80% power at this n and sd."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return None
    n, sd = len(x), float(x.std(ddof=1))
    return float((stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * sd / math.sqrt(n))


def summarise(runs: dict[str, Any], endpoint: str = "E1") -> dict[str, Any]:
    """Decisions, endpoint intervals and dose-response of the runs; the two null decisions
    are taken on ``endpoint`` (E1 by the plan; E2 under amendment d)."""
    sesoi = SESOI_BY_ENDPOINT[endpoint]
    c1 = {k.split("/")[1]: v for k, v in runs.items() if k.startswith("c1/")}
    c2 = {k.split("/")[1]: v for k, v in runs.items() if k.startswith("c2/")}
    out: dict[str, Any] = {"seeds": sorted({int(s) for s in (*c1, *c2)})}
    by_lr: dict[str, list[dict[str, Any]]] = {}
    for key, run in runs.items():
        if key.startswith("c1@lr"):
            by_lr.setdefault(key.split("/")[0].removeprefix("c1@lr"), []).append(run)
    if by_lr:  # exploratory (LEARNING_CHECK.md, amendment 2026-11-26 b): no decision
        out["exploratory_c1_by_lr"] = {
            lr: {
                "C1a": t_interval([r["C1a"] for r in rows]),
                "C1b": t_interval([r["C1b"] for r in rows]),
            }
            for lr, rows in sorted(by_lr.items())
        }
    decisions: dict[str, Any] = {}
    if c1:
        a = t_interval([r["C1a"] for r in c1.values()])
        b = t_interval([r["C1b"] for r in c1.values()])
        decisions["positive_control"] = {
            "value": bool(a["low"] is not None and a["low"] > C1_MARGIN and b["mean"] > 0),
            "C1a_greedy_pass_at_1_change": a,
            "C1b_reward_change": b,
            "margin": C1_MARGIN,
        }
    if c2:
        change = {
            arm: [r[arm][endpoint] - r["base"][endpoint] for r in c2.values()]
            for arm in ("trained", "shuffled", "random")
        }
        diffs = {
            "beats_random_adapter": [
                t - n for t, n in zip(change["trained"], change["random"], strict=True)
            ],
            "beats_shuffled_reward": [
                t - n for t, n in zip(change["trained"], change["shuffled"], strict=True)
            ],
        }
        pvalues = {k: sign_flip_p(v) for k, v in diffs.items()}
        rejected = holm(pvalues)
        for key, values in diffs.items():
            ci = t_interval(values)
            decisions[key] = {
                "value": bool(rejected[key] and ci["mean"] >= sesoi),
                f"{endpoint}_difference": ci,
                "p_sign_flip": pvalues[key],
                "holm_rejects": rejected[key],
                "smallest_effect_of_interest": sesoi,
                "detectable_at_80pct_power": detectable(values),
            }
        out["endpoints"] = {
            arm: {
                e: t_interval([r[arm][e] - r["base"][e] for r in c2.values()])
                for e in ("E1", "E2", "E3", "greedy")
            }
            for arm in ("trained", "shuffled", "random")
        }
        out["kl_exact"] = {
            arm: t_interval([r["kl_exact"][arm] for r in c2.values()])
            for arm in ("trained", "shuffled", "random")
        }
    # The plan's decisions are taken at 8 seeds; until then they are marked provisional.
    for key, decision in decisions.items():
        n = len(c1) if key == "positive_control" else len(c2)
        decision["seeds"] = n
        decision["provisional"] = n < PLANNED_SEEDS
    out["decision_endpoint"] = endpoint
    out["complete"] = len(c1) >= PLANNED_SEEDS and len(c2) >= PLANNED_SEEDS
    out["decisions"] = decisions
    dose: dict[str, Any] = {}
    for steps, answers in DOSE_CELLS:
        rows = [r for k, r in runs.items() if k.startswith(f"dose/{steps}x{answers}/")]
        if (steps, answers) == (16, 8):
            rows += [r for k, r in runs.items() if k.startswith("c2/") and int(k.split("/")[1]) < 4]
        if rows:
            dose[f"{steps}x{answers}"] = t_interval(
                [r["trained"]["E1"] - r["base"]["E1"] for r in rows]
            )
    out["dose_response_E1_change"] = dose
    return out


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {k: v for k, v in result["runs"].items() if k.startswith("c2/")}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    arms = ("trained", "shuffled", "random")
    for i, arm in enumerate(arms):
        ys = [r[arm]["E1"] - r["base"]["E1"] for r in runs.values()]
        axes[0].scatter([i] * len(ys), ys, alpha=0.6)
        ci = t_interval(ys)
        if ci["low"] is not None:
            axes[0].errorbar(
                [i + 0.15],
                [ci["mean"]],
                yerr=[[ci["mean"] - ci["low"]], [ci["high"] - ci["mean"]]],
                fmt="o",
                color="k",
            )
    axes[0].axhline(0, color="grey", lw=0.8)
    axes[0].set_xticks(range(3), ["trained", "shuffled reward", "random, same KL"])
    axes[0].set_ylabel("held-out gold log-likelihood change (nats/token)")
    axes[0].set_title("C2: per seed, mean and 95% t interval")
    c1 = [v for k, v in result["runs"].items() if k.startswith("c1/")]
    for r in c1:
        axes[1].plot([0, 1], [r["greedy_before"], r["greedy_after"]], marker="o", alpha=0.6)
    axes[1].set_xticks([0, 1], ["before", "after"])
    axes[1].set_ylabel("greedy pass@1 on the 32 fixed tasks")
    axes[1].set_title("C1: positive control, per seed")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", nargs="*", default=[], choices=("c1", "c2", "dose"))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    parser.add_argument("--summarise", action="store_true", help="recompute the summary only")
    parser.add_argument("--plot", action="store_true", help="draw learning_check.png")
    parser.add_argument("--out", type=Path, default=RESULTS / "learning_check.json")
    parser.add_argument(
        "--model", help="base model path or id (default: the tiny preset's); use its own --out"
    )
    parser.add_argument(
        "--lr",
        type=float,
        help="exploratory: run C1 at this learning rate (stored as c1@lrLR/SEED, never decided on)",
    )
    parser.add_argument(
        "--endpoint",
        choices=sorted(SESOI_BY_ENDPOINT),
        help="the endpoint the null decisions are taken on (default: the file's, else E1; "
        "a file keeps the endpoint it was started with)",
    )
    args = parser.parse_args(argv)
    if args.lr is not None and set(args.part) - {"c1"}:
        parser.error("--lr runs C1 only (--part c1)")
    if args.model:
        os.environ["REDQUEEN_LEARNING_CHECK_MODEL"] = args.model
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(1)
    result: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    result.setdefault("plan", "benchmarks/LEARNING_CHECK.md")
    result.setdefault("model", args.model or "tiny preset")
    result.setdefault("runs", {})
    recorded = result.get("decision_endpoint")
    if recorded is not None and args.endpoint not in (None, recorded):
        parser.error(
            f"{args.out} decides on {recorded}; decisions on {args.endpoint} need their own --out"
        )
    endpoint = args.endpoint or recorded or "E1"
    result["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}"
    jobs = [
        (part, seed, cell)
        for part in args.part
        for seed in args.seeds
        for cell in (DOSE_CELLS if part == "dose" else [None])
        if not (part == "dose" and cell == (16, 8))
    ]

    def write() -> None:
        # Several processes may run parts of the check at once: merge their runs under a lock.
        import fcntl

        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if args.out.exists():
                on_disk = json.loads(args.out.read_text()).get("runs", {})
                result["runs"] = {**on_disk, **result["runs"]}
            result.update(summarise(result["runs"], endpoint))
            tmp = args.out.with_suffix(f".json.tmp-{os.getpid()}")
            tmp.write_text(json.dumps(result, indent=1) + "\n")
            tmp.replace(args.out)

    for part, seed, cell in jobs:
        key = f"{part}/{seed}" if cell is None else f"dose/{cell[0]}x{cell[1]}/{seed}"
        if args.lr is not None:
            key = f"c1@lr{args.lr:g}/{seed}"
        if key in result["runs"]:
            continue
        print(f"learning_check: {key} ...", file=sys.stderr, flush=True)
        if part == "c1":
            result["runs"][key] = run_c1(seed, lr=args.lr)
        elif part == "c2":
            result["runs"][key] = run_c2(seed)
        else:
            result["runs"][key] = run_c2(seed, steps=cell[0], answers=cell[1], nulls=False)
        result["runs"][key]["code"] = _code_version()
        write()
    write()
    if args.plot:
        plot(result, args.out.with_suffix(".png"))
    print(json.dumps({k: result[k] for k in ("seeds", "decisions")}, indent=1))
    return result


def _code_version() -> str:
    """The checkout's commit (short), with ``+changes`` if tracked files other than the
    committed results differ from it."""
    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git(
        "status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results"
    )
    return commit + ("+changes" if changed else "")


if __name__ == "__main__":
    main()
