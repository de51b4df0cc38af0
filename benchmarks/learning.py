"""Does REINFORCE++ on tiny-coder learn? Student role, a fixed set of code_o tasks, CPU.

A student LoRA adapter (PEFT-style init: B = 0, so it starts as the base model) is trained with
the engine's :class:`~redqueen.engine.Learner` on a fixed set of code_o tasks taken from
tiny-coder's held-out programs: each step samples ``--samples`` answers per task at temperature
1 (as the environment does), judges them with ``check_answer``, rewards them with
:class:`~redqueen.fitness.StudentReward` (+1 correct, -0.5 wrong, -1 unparseable), whitens the
rewards over the (student, code_o) batch and takes one clipped policy-gradient step.

The anchor is the same adapter before training, measured in the same run on the same tasks with
the same sampling seeds: the solve rate at temperature 1 (``--eval-samples`` answers per task)
and with greedy decoding. A second set of held-out tasks that are never trained on shows how much
of the gain carries over. Repeated over ``--seeds`` (adapter init and sampling differ).
Writes ``benchmarks/results/learning.json``.

Usage::

    python benchmarks/learning.py [--seeds 0 1 2] [--tasks 16] [--steps 12]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch
import transformers

from redqueen.assets import tiny_coder_path
from redqueen.engine import (
    AdapterHost,
    Learner,
    LearnerConfig,
    Rollout,
    SamplingParams,
    whiten_advantages,
)
from redqueen.fitness import StudentReward
from redqueen.genomes import LoRAGenome
from redqueen.tinycoder.corpus import entry_task, load_corpus
from redqueen.verifiers import AnswerStatus, CodeTask, Executor, check_answer
from redqueen.verifiers.formats import STOP_STRINGS, parse_solution, solve_completion, solve_prompt

RESULTS = Path(__file__).resolve().parent / "results"


def pick_tasks(host: AdapterHost, n: int, *, max_prompt_tokens: int, max_answer_tokens: int):
    """Two disjoint lists of short code_o tasks from the held-out programs (train, transfer)."""
    heldout = load_corpus(tiny_coder_path() / "heldout.jsonl")
    tok = host.tokenizer
    tasks: list[CodeTask] = []
    for entry in heldout:
        task = entry_task(entry, "code_o")
        if (
            len(tok(solve_prompt(task))["input_ids"]) <= max_prompt_tokens
            and len(tok(solve_completion(task))["input_ids"]) <= max_answer_tokens
        ):
            tasks.append(task)
        if len(tasks) == 2 * n:
            break
    if len(tasks) < 2 * n:
        raise SystemExit(f"learning.py: only {len(tasks)} short code_o tasks; lower --tasks")
    return tasks[:n], tasks[n:]


def sample(host, adapter_id, tasks, *, n, temperature, seed, max_new_tokens):
    """``n`` answers per task, task by task (the environment's sampling, one seed per call)."""
    params = SamplingParams(
        max_new_tokens=max_new_tokens, temperature=temperature, stop=STOP_STRINGS, seed=seed, n=n
    )
    return host.generate([solve_prompt(t) for t in tasks], [adapter_id] * len(tasks), params)


def solve_rate(host, adapter_id, tasks, executor, *, n, temperature, seed, max_new_tokens):
    """Share of correct answers (``n`` per task)."""
    gens = sample(
        host,
        adapter_id,
        tasks,
        n=n,
        temperature=temperature,
        seed=seed,
        max_new_tokens=max_new_tokens,
    )
    per_task = [t for t in tasks for _ in range(n)]
    statuses = [
        check_answer(t, parse_solution("code_o", g.text), executor)
        for t, g in zip(per_task, gens, strict=True)
    ]
    return sum(s == AnswerStatus.CORRECT for s in statuses) / len(statuses)


def evaluate(host, adapter_id, train, transfer, executor, args, seed):
    kw = {"max_new_tokens": args.max_new_tokens}
    return {
        "train_sampled": solve_rate(
            host,
            adapter_id,
            train,
            executor,
            n=args.eval_samples,
            temperature=1.0,
            seed=10_000 + seed,
            **kw,
        ),
        "train_greedy": solve_rate(
            host, adapter_id, train, executor, n=1, temperature=0.0, seed=0, **kw
        ),
        "transfer_sampled": solve_rate(
            host,
            adapter_id,
            transfer,
            executor,
            n=args.eval_samples,
            temperature=1.0,
            seed=20_000 + seed,
            **kw,
        ),
    }


def run_seed(host, train, transfer, executor, args, seed):
    adapter_id = f"student-{seed}"
    genome = LoRAGenome.random(
        host.module_shapes,
        rank=args.rank,
        alpha=2.0 * args.rank,
        rng=torch.Generator().manual_seed(seed),
        init="peft",
    )
    host.add_adapter(adapter_id, genome)
    learner = Learner(host, LearnerConfig(lr=args.lr, clip=0.2, max_grad_norm=1.0))
    reward = StudentReward()
    before = evaluate(host, adapter_id, train, transfer, executor, args, seed)
    t0 = time.perf_counter()
    curve = []
    per_task = [t for t in train for _ in range(args.samples)]
    for step in range(args.steps):
        gens = sample(
            host,
            adapter_id,
            train,
            n=args.samples,
            temperature=1.0,
            seed=seed * 1_000_003 + step,
            max_new_tokens=args.max_new_tokens,
        )
        statuses = [
            check_answer(t, parse_solution("code_o", g.text), executor)
            for t, g in zip(per_task, gens, strict=True)
        ]
        rewards = [reward(s) for s in statuses]
        advantages = whiten_advantages(rewards, [("student", "code_o")] * len(rewards))
        rollouts = [
            Rollout(g.prompt_ids, g.token_ids, g.logprobs, a)
            for g, a in zip(gens, advantages, strict=True)
            if g.token_ids
        ]
        stats = learner.step(adapter_id, rollouts)
        curve.append(
            {
                "step": step,
                "mean_reward": round(statistics.fmean(rewards), 4),
                "solved": round(
                    sum(s == AnswerStatus.CORRECT for s in statuses) / len(statuses), 4
                ),
                "loss": round(stats.loss, 5),
                "skipped": stats.skipped,
            }
        )
        print(
            f"seed {seed} step {step:3d} reward {curve[-1]['mean_reward']:+.3f} "
            f"solved {curve[-1]['solved']:.3f}",
            flush=True,
        )
    train_seconds = time.perf_counter() - t0
    after = evaluate(host, adapter_id, train, transfer, executor, args, seed)
    host.remove_adapter(adapter_id)
    return {
        "seed": seed,
        "before": before,
        "after": after,
        "train_seconds": round(train_seconds, 1),
        "curve": curve,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--tasks", type=int, default=16, help="trained tasks (and as many transfer tasks)"
    )
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--samples", type=int, default=4, help="answers per task per step")
    parser.add_argument(
        "--eval-samples", type=int, default=4, help="answers per task for the rates"
    )
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (more oversubscribes a shared CPU)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "learning.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    host = AdapterHost(tiny_coder_path(), device="cpu")
    train, transfer = pick_tasks(host, args.tasks, max_prompt_tokens=160, max_answer_tokens=16)
    t0 = time.perf_counter()
    with Executor(workers=2) as executor:
        runs = [run_seed(host, train, transfer, executor, args, seed) for seed in args.seeds]

    def mean(key: str, when: str) -> float:
        return round(statistics.fmean(r[when][key] for r in runs), 4)

    keys = ("train_sampled", "train_greedy", "transfer_sampled")
    summary = {
        key: {
            "before": mean(key, "before"),
            "after": mean(key, "after"),
            "gain": round(mean(key, "after") - mean(key, "before"), 4),
            "ratio_after_over_before": (
                round(mean(key, "after") / mean(key, "before"), 3) if mean(key, "before") else None
            ),
            "seeds_improved": sum(r["after"][key] > r["before"][key] for r in runs),
        }
        for key in keys
    }
    result = {
        "benchmark": "learning",
        "what": "REINFORCE++ (Learner) on the student role, fixed code_o tasks from tiny-coder's held-out programs",
        "anchor": "the same adapter before training, same tasks and sampling seeds, same run",
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "n_train_tasks": len(train),
        "n_transfer_tasks": len(transfer),
        "summary": summary,
        "runs": runs,
        "total_seconds": round(time.perf_counter() - t0, 1),
        "machine": {
            "platform": platform.platform(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "threads": args.threads,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({"summary": summary, "total_seconds": result["total_seconds"]}, indent=2))


if __name__ == "__main__":
    main()
