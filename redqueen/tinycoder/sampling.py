"""Sampling from a base model in the environment's formats: completions and teacher proposals.

:func:`generate_texts` completes prompts the way the environment samples (full distribution, no
top-k/top-p cut; temperature 0 is greedy); :func:`sample_proposals` draws teacher proposals on
reference triplets, parses them and validates them in the sandbox, keeping what became of each
one (:class:`ProposalSample`: the rejection reason of an invalid one, its canonical key for a
novelty check against a training corpus). :mod:`redqueen.tinycoder.rates` builds its figures
from these.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import torch

from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.corpus import CorpusEntry, reference_triplets
from redqueen.verifiers import ProgramRunner, Triplet, Validation, validate_programs
from redqueen.verifiers.formats import Proposal, parse_proposal, propose_prompt

__all__ = ["ProposalSample", "generate_texts", "sample_proposals"]


@dataclass(frozen=True)
class ProposalSample:
    """One sampled teacher proposal and what became of it.

    Args:
        references: The reference triplets of its prompt.
        text: The completion as generated.
        proposal: The parsed proposal, or None when the text does not parse.
        verdict: ``validate_programs``' verdict on a parsed proposal (its ``reason`` says
            which check failed), or None when it did not parse.
    """

    references: tuple[Triplet, ...]
    text: str
    proposal: Proposal | None
    verdict: Validation | None

    @property
    def valid(self) -> bool:
        """Parsed and valid."""
        return self.verdict is not None and self.verdict.ok

    def is_new(self, known_keys: AbstractSet[bytes]) -> bool:
        """Valid, and its program's canonical key is not among ``known_keys``."""
        return (
            self.valid
            and self.proposal is not None
            and canonical_key(self.proposal.program) not in known_keys
        )


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


def sample_proposals(
    model,
    tokenizer,
    entries: Sequence[CorpusEntry],
    *,
    task_type: str,
    n: int,
    rng: random.Random,
    executor: ProgramRunner,
    references: int = 2,
    temperature: float = 1.0,
    seed: int = 0,
    max_new_tokens: int = 320,
    batch_size: int = 64,
) -> list[ProposalSample]:
    """``n`` teacher proposals, each prompted with ``references`` triplets drawn from
    ``entries`` by ``rng``, sampled at ``temperature`` (seeded by ``seed``), parsed and
    validated in the sandbox, as :func:`measure_rates` samples them."""
    refs = [reference_triplets(entries, rng, references) for _ in range(n)]
    prompts = [propose_prompt(task_type, r) for r in refs]
    texts = generate_texts(
        model,
        tokenizer,
        prompts,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        seed=seed,
        batch_size=batch_size,
    )
    proposals = [parse_proposal(task_type, t) for t in texts]
    parsed = [(p.program, list(p.inputs)) for p in proposals if p is not None]
    verdicts = iter(validate_programs(parsed, executor) if parsed else [])
    return [
        ProposalSample(tuple(r), t, p, None if p is None else next(verdicts))
        for r, t, p in zip(refs, texts, proposals, strict=True)
    ]
