"""Starting rates of a base model: how often its proposals are valid and its answers correct.

An arms race needs room on both sides: a teacher whose proposals are never valid gets no
signal, and a student that already solves everything (or nothing) gives the teacher none. This
module measures, with the environment's own sampling (temperature 1, no top-k/top-p cut), the
share of valid proposals and the solve rate per task type on held-out corpus entries. The model
card records the numbers; ``python -m redqueen.tinycoder.rates`` re-measures a folder.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch

from redqueen.tinycoder.corpus import (
    CorpusEntry,
    entry_task,
    load_corpus,
    reference_triplets,
)
from redqueen.verifiers import AnswerStatus, Executor, check_answer, validate_program
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
        solve_rate: Student answers judged correct (sampled at ``temperature``).
        answer_parsed_share: Student answers that parse at all.
        greedy_solve_rate: Student answers judged correct with greedy decoding.
        n_proposals: Proposals sampled per task type.
        n_tasks: Tasks answered per task type.
        temperature: Sampling temperature used for the sampled rates.
        references: Reference triplets in each teacher prompt.
    """

    valid_share: dict[str, float]
    parsed_share: dict[str, float]
    solve_rate: dict[str, float]
    answer_parsed_share: dict[str, float]
    greedy_solve_rate: dict[str, float]
    n_proposals: int
    n_tasks: int
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
    references: int = 2,
    temperature: float = 1.0,
    seed: int = 0,
    max_new_tokens: int = 320,
) -> StartingRates:
    """Measure valid-proposal shares and solve rates per task type on ``entries``.

    Args:
        model: A causal LM (eval mode is set here).
        tokenizer: Its tokenizer.
        entries: Held-out corpus entries (references and tasks come from here).
        executor: Sandbox for validation and answer checking.
        n: Proposals and tasks per task type.
        references: Reference triplets per teacher prompt.
        temperature: Sampling temperature (the environment samples at 1).
        seed: Seed for references, task choice and sampling.
        max_new_tokens: Generation budget per completion.

    Raises:
        ValueError: If there are fewer entries than ``references + 1``.
    """
    if len(entries) <= references:
        raise ValueError(f"measure_rates: need more than {references} entries, got {len(entries)}")
    model.eval()
    rng = random.Random(seed)
    valid, parsed, solved, answered, greedy = {}, {}, {}, {}, {}
    for offset, task_type in enumerate(TASK_TYPES):
        prompts = [
            propose_prompt(task_type, reference_triplets(entries, rng, references))
            for _ in range(n)
        ]
        texts = generate_texts(
            model,
            tokenizer,
            prompts,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            seed=seed + offset,
        )
        proposals = [parse_proposal(task_type, text) for text in texts]
        ok = [
            p is not None and validate_program(p.program, list(p.inputs), executor).ok
            for p in proposals
        ]
        parsed[task_type] = sum(p is not None for p in proposals) / n
        valid[task_type] = sum(ok) / n

        tasks = [
            entry_task(entries[i], task_type, rng.randrange(len(entries[i].inputs)))
            for i in (rng.randrange(len(entries)) for _ in range(n))
        ]
        prompts = [solve_prompt(task) for task in tasks]
        for temp, store in ((temperature, solved), (0.0, greedy)):
            texts = generate_texts(
                model,
                tokenizer,
                prompts,
                max_new_tokens=max_new_tokens,
                temperature=temp,
                seed=seed + 10 + offset,
            )
            answers = [parse_solution(task_type, text) for text in texts]
            statuses = [check_answer(t, a, executor) for t, a in zip(tasks, answers, strict=True)]
            store[task_type] = sum(s == AnswerStatus.CORRECT for s in statuses) / n
            if temp == temperature:
                answered[task_type] = sum(a is not None for a in answers) / n
    return StartingRates(
        valid_share=valid,
        parsed_share=parsed,
        solve_rate=solved,
        answer_parsed_share=answered,
        greedy_solve_rate=greedy,
        n_proposals=n,
        n_tasks=n,
        temperature=temperature,
        references=references,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: measure a model folder's starting rates on a corpus file, print JSON."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model folder")
    parser.add_argument(
        "--corpus", default=None, help="corpus JSON lines (default: the model's heldout.jsonl)"
    )
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    model = AutoModelForCausalLM.from_pretrained(args.model).to(args.device)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    with Executor() as executor:
        rates = measure_rates(
            model,
            tokenizer,
            load_corpus(args.corpus or f"{args.model}/heldout.jsonl"),
            executor=executor,
            n=args.n,
            seed=args.seed,
        )
    print(json.dumps(rates.to_dict(), indent=2))


if __name__ == "__main__":
    main()
