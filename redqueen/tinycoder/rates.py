"""Starting rates of a base model: how often its proposals are valid and its answers correct.

An arms race needs room on both sides: a teacher whose proposals are never valid gets no
signal, and a student that already solves everything (or nothing) gives the teacher none. This
module measures, with the environment's own sampling (temperature 1, no top-k/top-p cut), the
share of valid proposals (and of valid proposals new to the training corpus: a model that
recites its corpus proposes valid programs and nothing new), the solve rate at T=1, pass@k and
the solve rate per generator level per task type on held-out corpus entries, and greedy
accuracy on the hand-written code_o set (programs as people write them, which the generator
does not). The model card records the numbers;
``python -m redqueen.tinycoder.rates --model DIR`` re-measures a folder on its ``heldout.jsonl``
and ``ood.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.corpus import CorpusEntry, entry_task, load_corpus
from redqueen.tinycoder.handwritten import HandwrittenProgram, load_handwritten
from redqueen.tinycoder.sampling import generate_texts, sample_proposals
from redqueen.verifiers import AnswerStatus, Executor, ProgramRunner, check_answers
from redqueen.verifiers.formats import TASK_TYPES, parse_solution, solve_prompt

__all__ = [
    "HandwrittenScore",
    "StartingRates",
    "generate_texts",
    "measure_handwritten",
    "measure_rates",
]


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
        new_valid_share: Teacher proposals that are valid *and* new: their canonical key is in
            none of the known programs (the model's training corpus); None when no known
            programs were given. A model that recites its corpus has valid proposals but no
            new ones.
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
    new_valid_share: dict[str, float] | None = None

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        return asdict(self)


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
    known_keys: AbstractSet[bytes] | None = None,
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
        known_keys: Canonical keys of the model's training programs; given, the rates count
            the valid proposals that are new (``new_valid_share``).

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
    new_valid: dict[str, float] = {}

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
        drawn = sample_proposals(
            model,
            tokenizer,
            entries,
            task_type=task_type,
            n=n,
            rng=rng,
            executor=executor,
            references=references,
            temperature=temperature,
            seed=seed + offset,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
        )
        figures["parsed_share"][task_type] = sum(s.proposal is not None for s in drawn) / n
        figures["valid_share"][task_type] = sum(s.valid for s in drawn) / n
        if known_keys is not None:
            new_valid[task_type] = sum(s.is_new(known_keys) for s in drawn) / n

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
        new_valid_share=new_valid if known_keys is not None else None,
    )


@dataclass(frozen=True)
class HandwrittenScore:
    """Greedy answers to the hand-written code_o set (:mod:`redqueen.tinycoder.handwritten`).

    Args:
        ids: The programs' ids, in the set's order.
        idioms: Each program's idiom.
        answers: Each parsed answer (None when the text did not parse).
        statuses: Each answer's :class:`~redqueen.verifiers.AnswerStatus` value.
        max_new_tokens: Generation budget per answer.
    """

    ids: tuple[str, ...]
    idioms: tuple[str, ...]
    answers: tuple[str | None, ...]
    statuses: tuple[str, ...]
    max_new_tokens: int

    @property
    def correct(self) -> int:
        """Answers judged correct."""
        return sum(s == AnswerStatus.CORRECT.value for s in self.statuses)

    def summary(self) -> dict:
        """The card's figures: accuracy, parsed share, and accuracy per idiom."""
        n = len(self.statuses)
        by_idiom: dict[str, list[bool]] = {}
        for idiom, status in zip(self.idioms, self.statuses, strict=True):
            by_idiom.setdefault(idiom, []).append(status == AnswerStatus.CORRECT.value)
        return {
            "n": n,
            "correct": self.correct,
            "accuracy": self.correct / n,
            "parsed_share": sum(s != AnswerStatus.UNPARSEABLE.value for s in self.statuses) / n,
            "max_new_tokens": self.max_new_tokens,
            "by_idiom": {k: sum(v) / len(v) for k, v in sorted(by_idiom.items())},
        }


def measure_handwritten(
    model,
    tokenizer,
    executor: ProgramRunner,
    *,
    programs: Sequence[HandwrittenProgram] | None = None,
    max_new_tokens: int = 96,
    batch_size: int = 64,
) -> HandwrittenScore:
    """Greedy code_o answers to the hand-written set, in the environment's prompt and parser.

    Args:
        model: A causal LM (eval mode is set here).
        tokenizer: Its tokenizer.
        executor: Sandbox (code_o answers are judged without running anything, as the
            environment judges them).
        programs: The set (default: the committed one).
        max_new_tokens: Generation budget per answer (the ``tiny`` preset's solve budget).
        batch_size: Prompts per generation batch.
    """
    programs = list(programs) if programs is not None else load_handwritten()
    model.eval()
    tasks = [p.task() for p in programs]
    texts = generate_texts(
        model,
        tokenizer,
        [solve_prompt(t) for t in tasks],
        max_new_tokens=max_new_tokens,
        temperature=0.0,
        seed=0,
        batch_size=batch_size,
    )
    answers = [parse_solution("code_o", t) for t in texts]
    statuses = check_answers(list(zip(tasks, answers, strict=True)), executor)
    return HandwrittenScore(
        ids=tuple(p.id for p in programs),
        idioms=tuple(p.idiom for p in programs),
        answers=tuple(answers),
        statuses=tuple(s.value for s in statuses),
        max_new_tokens=max_new_tokens,
    )


def main(argv: Sequence[str] | None = None) -> dict:
    """Command line: measure a model folder's rates on its held-out and OOD splits, print JSON.

    With ``--train-corpus`` (the model's ``train.jsonl``) the valid proposals that are new to it
    are counted too. With ``--write`` the figures replace the ``rates`` of the folder's
    ``training.json``, the hand-written set is scored (``handwritten``) and the model card is
    rewritten, so the card's figures are re-measurable by this one command.
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
    parser.add_argument(
        "--train-corpus",
        type=Path,
        help="the model's training split (train.jsonl): count valid proposals new to it",
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
    known = (
        {canonical_key(e.program) for e in load_corpus(args.train_corpus)}
        if args.train_corpus is not None
        else None
    )
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
                known_keys=known,
            ).to_dict()
            for split in splits
        }
        handwritten = (
            measure_handwritten(model, tokenizer, executor, batch_size=args.batch_size).summary()
            if args.write
            else None
        )
    print(json.dumps(rates, indent=2))
    if args.write:
        path = args.model / "training.json"
        summary = json.loads(path.read_text(encoding="utf-8"))
        summary["rates"] = rates
        summary["handwritten"] = handwritten
        path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        write_model_card(args.model, summary)
    return rates


if __name__ == "__main__":
    main()
