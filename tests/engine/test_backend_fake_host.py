"""Generation backends against a fake host: a bigram torch module, no transformers model.

The fake host implements :class:`~redqueen.engine.backends.BackendHost` and nothing more, so
these tests also check that a backend reads only what that protocol names. Its model makes
token ``t`` most likely followed by ``t + 1`` (``t + 2`` under the adapter ``"skip"``), so
greedy outputs, budgets, stop strings and end-of-sequence are known in advance.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from redqueen.engine import SamplingParams
from redqueen.engine.backends import BACKENDS, BackendHost, HFBackend
from redqueen.engine.backends._common import cut_at_stop, left_pad, row_seeds
from redqueen.engine.backends._supported import UnsupportedModelError
from redqueen.genomes import LoRAGenome

PAD, EOS, VOCAB = 0, 11, 12
LETTERS = " abcdefghij"  # token i (1..10) is LETTERS[i]
SHARPNESS = 2.0  # logit of the likely next token; the others have 0


class BigramLM(nn.Module):
    """Logits depend on the last token and the row's adapter only (no cache needed)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[str | None] | None = None
        self.calls = 0

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        past_key_values: object = None,
        use_cache: bool = False,
        logits_to_keep: int = 0,
    ) -> dict[str, object]:
        self.calls += 1
        rows = self.rows or [None] * len(input_ids)
        shift = torch.tensor([2 if a == "skip" else 1 for a in rows])[:, None]
        target = (input_ids + shift).clamp(max=EOS)  # (batch, seq)
        logits = SHARPNESS * F.one_hot(target, VOCAB).float()  # (batch, seq, vocab)
        return _Output(logits=logits, past_key_values=("cache", self.calls))


class _Output(dict):
    @property
    def logits(self) -> Tensor:
        return self["logits"]


class LetterTokenizer:
    def decode(self, token_ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join(LETTERS[t] if 1 <= t <= 10 else "" for t in token_ids)


class FakeHost:
    """The :class:`BackendHost` protocol over :class:`BigramLM`."""

    def __init__(self) -> None:
        self.model = BigramLM()
        self.tokenizer = LetterTokenizer()
        self.device = torch.device("cpu")
        self.dtype = torch.float32
        self.max_batch_size = 64
        self.pad_token_id = PAD
        self.eos_token_ids = {EOS}
        self.model_path = "bigram"
        self.routed: list[list[str | None]] = []

    @property
    def adapter_ids(self) -> list[str]:
        return ["skip"]

    def genome(self, adapter_id: str) -> LoRAGenome:
        raise KeyError(adapter_id)

    @contextmanager
    def route_rows(self, adapter_ids: Sequence[str | None]) -> Iterator[nn.Module]:
        self.routed.append(list(adapter_ids))
        self.model.rows = list(adapter_ids)
        try:
            yield self.model
        finally:
            self.model.rows = None


def hf_backend(host: BackendHost) -> HFBackend:
    return HFBackend(host)  # typed against the protocol: the fake must satisfy it


@pytest.fixture
def host() -> FakeHost:
    return FakeHost()


def test_the_fake_host_is_a_backend_host(host):
    assert isinstance(host, BackendHost)
    assert isinstance(BACKENDS["hf"](host), HFBackend)


def test_greedy_rows_follow_their_adapters_and_end_at_eos(host):
    backend = hf_backend(host)
    greedy = SamplingParams(max_new_tokens=10, temperature=0.0)
    out = backend.generate([[1, 2, 3], [5], [9]], [None, "skip", None], [greedy] * 3)
    assert [g.token_ids for g in out] == [[4, 5, 6, 7, 8, 9, 10, EOS], [7, 9, EOS], [10, EOS]]
    assert [g.text for g in out] == ["defghij", "gi", "j"]
    assert all(g.finished for g in out)
    assert [g.prompt_ids for g in out] == [[1, 2, 3], [5], [9]]
    assert host.routed == [[None, "skip", None]]
    likely = SHARPNESS - math.log(math.exp(SHARPNESS) + VOCAB - 1)
    assert all(lp == pytest.approx(likely) for g in out for lp in g.logprobs)


def test_budgets_and_stop_strings_end_rows(host):
    backend = hf_backend(host)
    params = [
        SamplingParams(max_new_tokens=3, temperature=0.0),
        SamplingParams(max_new_tokens=10, temperature=0.0, stop=("fg",)),
        SamplingParams(max_new_tokens=10, temperature=0.0, stop=("zz",)),
    ]
    out = backend.generate([[1, 2, 3], [3], [8]], [None, None, None], params)
    assert out[0].token_ids == [4, 5, 6] and out[0].text == "def" and not out[0].finished
    # The token that completes the stop string stays; the text stops before the string.
    assert out[1].token_ids == [4, 5, 6, 7] and out[1].text == "de" and out[1].finished
    assert out[2].token_ids == [9, 10, EOS] and out[2].text == "ij" and out[2].finished
    # The batch stops at its longest row's end: 4 decode steps after the prefill, not 10.
    assert host.model.calls == 4


def test_seeded_rows_repeat_and_do_not_depend_on_their_batch(host):
    backend = hf_backend(host)
    prompts, rows = [[1], [1], [2], [1]], [None, None, "skip", "skip"]
    params = [SamplingParams(max_new_tokens=12, temperature=1.0, seed=7)] * 4
    first = backend.generate(prompts, rows, params)
    assert [g.token_ids for g in backend.generate(prompts, rows, params)] == [
        g.token_ids for g in first
    ]
    host.max_batch_size = 1
    alone = backend.generate(prompts, rows, params)
    assert [g.token_ids for g in alone] == [g.token_ids for g in first]
    # The same (adapter, prompt) twice: the repeat index gives the second its own draws.
    assert first[0].token_ids != first[1].token_ids
    other = SamplingParams(max_new_tokens=12, temperature=1.0, seed=8)
    assert backend.generate(prompts, rows, [other] * 4)[0].token_ids != first[0].token_ids
    # Log-probabilities are the policy's own (temperature 1) for whichever token was drawn.
    norm = math.log(math.exp(SHARPNESS) + VOCAB - 1)
    allowed = [pytest.approx(SHARPNESS - norm), pytest.approx(-norm)]
    assert all(any(lp == a for a in allowed) for g in first for lp in g.logprobs)
    assert any(lp == allowed[1] for g in first for lp in g.logprobs)  # an unlikely token drawn


def test_the_static_backend_refuses_a_model_it_cannot_run(host):
    with pytest.raises(UnsupportedModelError, match="backend 'hf'"):
        BACKENDS["static"](host)


def test_shared_helpers():
    assert cut_at_stop("abc:de", (":", "d")) == "abc" and cut_at_stop("abc", ("x",)) == "abc"
    ids, valid = left_pad([[5, 6], [7]], PAD, rows=3)
    assert ids.tolist() == [[5, 6], [PAD, 7], [PAD, PAD]]
    assert valid.tolist() == [[True, True], [False, True], [False, True]]
    with pytest.raises(ValueError, match="empty prompt"):
        left_pad([[1], []], PAD)
    # A row's seed depends on what it is, not where it sits.
    seeds = row_seeds(3, [[1], [2], [1]], ["a", "b", "a"])
    assert row_seeds(3, [[2], [1], [1]], ["b", "a", "a"]) == [seeds[1], seeds[0], seeds[2]]
    assert len(set(seeds)) == 3
