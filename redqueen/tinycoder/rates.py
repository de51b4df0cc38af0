"""Starting rates of a base model: how often its proposals are valid and its answers correct.

An arms race needs room on both sides: a teacher whose proposals are never valid gets no
signal, and a student that already solves everything (or nothing) gives the teacher none. This
module measures, with the environment's own sampling (temperature 1, no top-k/top-p cut), the
share of valid proposals, the solve rate at T=1, pass@k and the solve rate per generator level
per task type on held-out corpus entries. The model card records the numbers;
``python -m redqueen.tinycoder.rates --model DIR`` re-measures a folder on its ``heldout.jsonl``
and ``ood.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from redqueen.tinycoder.corpus import (
    CorpusEntry,
    entry_task,
    load_corpus,
    reference_triplets,
)
from redqueen.verifiers import AnswerStatus, Executor, check_answers, validate_programs
from redqueen.verifiers.formats import (
    TASK_TYPES,
    parse_proposal,
    parse_solution,
    propose_prompt,
    solve_prompt,
)

__all__ = ["StartingRates", "generate_texts", "measure_rates"]


@dataclass(frozen=True)
class StartingRates:
    """Measured starting rates per task type (each a share in [0, 1]).

    Args:
        valid_share: Teacher proposals that parse and pass ``validate_program``.
        parsed_share: Teacher proposals that parse at all.
        solve_rate: Student answers judged correct, sampled at ``temperature`` (mean over all
            ``samples`` answers of every task).
        pass_at_k: Tasks with at least one correct answer among ``samples`` (pass@k, k =
            ``samples``).
        answer_parsed_share: Student answers that parse at all.
        greedy_solve_rate: Student answers judged correct with greedy decoding.
        solve_rate_by_level: Per task type, the sampled solve rate per generator level.
        n_proposals: Proposals sampled per task type.
        n_tasks: Tasks answered per task type.
        samples: Sampled answers per task.
        temperature: Sampling temperature used for the sampled rates.
        references: Reference triplets in each teacher prompt.
    """

    valid_share: dict[str, float]
    parsed_share: dict[str, float]
    solve_rate: dict[str, float]
    pass_at_k: dict[str, float]
    answer_parsed_share: dict[str, float]
    greedy_solve_rate: dict[str, float]
    solve_rate_by_level: dict[str, dict[int, float]]
    n_proposals: int
    n_tasks: int
    samples: int
    temperature: float
    references: int

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        return asdict(self)


@torch.no_grad()
def generate_texts(
    model,
    tokenizer,
    prompts: Sequence[str],
    *,
    max_new_tokens: int,
    temperature: float,
    seed: int,
    batch_size: int = 64,
) -> list[str]:
    """Complete each prompt (left-padded batches); temperature 0 means greedy.

    Sampling uses the full distribution (``top_k=0``, ``top_p=1``), as the environment does.
    """
    device = next(model.parameters()).device
    tokenizer.padding_side = "left"
    torch.manual_seed(seed)
    texts: list[str] = []
    for start in range(0, len(prompts), batch_size):
        chunk = list(prompts[start : start + batch_size])
        batch = tokenizer(chunk, return_tensors="pt", padding=True).to(device)
        sampling = (
            {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
            if temperature > 0
            else {"do_sample": False}
        )
        out = model.generate(
            **batch,
            max_new_tokens=max_new_tokens,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            **sampling,
        )
        new = out[:, batch["input_ids"].shape[1] :]
        texts.extend(tokenizer.batch_decode(new, skip_special_tokens=True))
    return texts


def measure_rates(
    model,
    tokenizer,
    entries: Sequence[CorpusEntry],
    *,
    executor: Executor,
    n: int = 64,
    samples: int = 8,
    references: int = 2,
    temperature: float = 1.0,
    seed: int = 0,
    max_new_tokens: int = 320,
    task_types: Sequence[str] = TASK_TYPES,
    batch_size: int = 64,
) -> StartingRates:
    """Measure valid-proposal shares, solve rates and pass@k per task type on ``entries``.

    Args:
        model: A causal LM (eval mode is set here).
        tokenizer: Its tokenizer.
        entries: Corpus entries (references and tasks come from here).
        executor: Sandbox for validation and answer checking.
        n: Proposals and tasks per task type.
        samples: Sampled answers per task (pass@k uses k = ``samples``).
        references: Reference triplets per teacher prompt.
        temperature: Sampling temperature (the environment samples at 1).
        seed: Seed for references, task choice and sampling.
        max_new_tokens: Generation budget per completion.
        task_types: The task types measured, in this order (a leading subset of
            :data:`TASK_TYPES` draws exactly the tasks a full measurement draws for them).
        batch_size: Prompts per generation batch (larger on a GPU; sampled answers depend on
            the batching, the tasks drawn do not).

    Raises:
        ValueError: If there are fewer entries than ``references + 1``, ``samples < 1`` or
            ``batch_size < 1``.
    """
    if len(entries) <= references:
        raise ValueError(f"measure_rates: need more than {references} entries, got {len(entries)}")
    if samples < 1:
        raise ValueError(f"measure_rates: samples must be >= 1, got {samples}")
    if batch_size < 1:
        raise ValueError(f"measure_rates: batch_size must be >= 1, got {batch_size}")
    model.eval()
    rng = random.Random(seed)
    figures: dict[str, dict] = {
        key: {}
        for key in (
            "valid_share",
            "parsed_share",
            "solve_rate",
            "pass_at_k",
            "answer_parsed_share",
            "greedy_solve_rate",
            "solve_rate_by_level",
        )
    }

    def complete(prompts: list[str], temp: float, offset: int) -> list[str]:
        return generate_texts(
            model,
            tokenizer,
            prompts,
            max_new_tokens=max_new_tokens,
            temperature=temp,
            seed=seed + offset,
            batch_size=batch_size,
        )

    for offset, task_type in enumerate(task_types):
        prompts = [
            propose_prompt(task_type, reference_triplets(entries, rng, references))
            for _ in range(n)
        ]
        proposals = [parse_proposal(task_type, t) for t in complete(prompts, temperature, offset)]
        parsed = [(p.program, list(p.inputs)) for p in proposals if p is not None]
        verdicts = validate_programs(parsed, executor) if parsed else []
        figures["parsed_share"][task_type] = len(parsed) / n
        figures["valid_share"][task_type] = sum(v.ok for v in verdicts) / n

        picked = [entries[rng.randrange(len(entries))] for _ in range(n)]
        tasks = [entry_task(e, task_type, rng.randrange(len(e.inputs))) for e in picked]
        prompts = [solve_prompt(task) for task in tasks]
        # (task, sample) pairs, task-major: sample s of task t is row t * samples + s.
        sampled = complete([p for p in prompts for _ in range(samples)], temperature, 10 + offset)
        answers = [parse_solution(task_type, text) for text in sampled]
        items = [(tasks[row // samples], a) for row, a in enumerate(answers)]
        correct = [s == AnswerStatus.CORRECT for s in check_answers(items, executor)]
        figures["solve_rate"][task_type] = sum(correct) / len(correct)
        figures["answer_parsed_share"][task_type] = sum(a is not None for a in answers) / len(
            answers
        )
        per_task = [any(correct[t * samples : (t + 1) * samples]) for t in range(n)]
        figures["pass_at_k"][task_type] = sum(per_task) / n
        by_level: dict[int, list[bool]] = {}
        for row, ok in enumerate(correct):
            by_level.setdefault(picked[row // samples].level, []).append(ok)
        figures["solve_rate_by_level"][task_type] = {
            level: sum(oks) / len(oks) for level, oks in sorted(by_level.items())
        }
        greedy = [parse_solution(task_type, t) for t in complete(prompts, 0.0, 20 + offset)]
        statuses = check_answers(list(zip(tasks, greedy, strict=True)), executor)
        figures["greedy_solve_rate"][task_type] = (
            sum(s == AnswerStatus.CORRECT for s in statuses) / n
        )
    return StartingRates(
        **figures,
        n_proposals=n,
        n_tasks=n,
        samples=samples,
        temperature=temperature,
        references=references,
    )


def main(argv: Sequence[str] | None = None) -> dict:
    """Command line: measure a model folder's rates on its held-out and OOD splits, print JSON.

    With ``--write`` the figures replace the ``rates`` of the folder's ``training.json`` and the
    model card is rewritten, so the card's figures are re-measurable by this one command.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from redqueen.tinycoder.card import write_model_card

    parser = argparse.ArgumentParser(
        prog="python -m redqueen.tinycoder.rates", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--model", required=True, type=Path, help="model folder")
    parser.add_argument("--n", type=int, default=128, help="proposals and tasks per task type")
    parser.add_argument("--samples", type=int, default=8, help="sampled answers per task (pass@k)")
    parser.add_argument("--max-new-tokens", type=int, default=320)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workers", type=int, default=None, help="sandbox workers (all cores)")
    parser.add_argument("--cpu-threads", type=int, default=1, help="torch threads on the CPU")
    parser.add_argument(
        "--batch-size", type=int, default=64, help="prompts per generation batch (more on a GPU)"
    )
    parser.add_argument("--write", action="store_true", help="update training.json and README.md")
    parser.add_argument(
        "--splits",
        type=Path,
        help="read heldout.jsonl and ood.jsonl from this folder instead (e.g. another model's, "
        "to compare two models on the same tasks: tasks are chosen by --seed alone)",
    )
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error(f"--batch-size must be >= 1, got {args.batch_size}")
    if args.write and args.splits is not None:
        parser.error("--write records the model's own splits; leave out --splits")
    if args.device == "cpu":
        torch.set_num_threads(args.cpu_threads)
    model = AutoModelForCausalLM.from_pretrained(args.model).to(args.device)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    folder = args.splits if args.splits is not None else args.model
    splits = [s for s in ("heldout", "ood") if (folder / f"{s}.jsonl").is_file()]
    if not splits:
        parser.error(f"{folder} has neither heldout.jsonl nor ood.jsonl")
    with Executor(workers=args.workers) as executor:
        rates = {
            split: measure_rates(
                model,
                tokenizer,
                load_corpus(folder / f"{split}.jsonl"),
                executor=executor,
                n=args.n,
                samples=args.samples,
                seed=args.seed,
                max_new_tokens=args.max_new_tokens,
                batch_size=args.batch_size,
            ).to_dict()
            for split in splits
        }
    print(json.dumps(rates, indent=2))
    if args.write:
        path = args.model / "training.json"
        summary = json.loads(path.read_text(encoding="utf-8"))
        summary["rates"] = rates
        path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        write_model_card(args.model, summary)
    return rates


if __name__ == "__main__":
    main()
