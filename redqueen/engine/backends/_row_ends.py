"""Where each row's completion ends: end-of-sequence, a stop string, or its token budget.

A row's tokens do not depend on the rows beside it nor on how long it keeps decoding, so the
end of each row can be found from its tokens after the fact, one rule for every backend,
instead of synchronising with the device at every step. :class:`RowEnds` scans tokens as they
come back (every step, or every few steps to stop early once every row has ended); every
backend that decodes in PyTorch ends its rows with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set

from redqueen.engine._sampling import SamplingParams
from redqueen.engine.backends._common import completes_stop

__all__ = ["RowEnds"]


class RowEnds:
    """End of each row's completion, found from its sampled tokens.

    Args:
        params: Sampling parameters per row (budget and stop strings).
        eos_token_ids: Tokens that end a completion.
        decode: Token ids -> text (special tokens skipped), to look for stop strings.
    """

    def __init__(
        self,
        params: Sequence[SamplingParams],
        eos_token_ids: Set[int],
        decode: Callable[[list[int]], str],
    ) -> None:
        self.budgets = [p.max_new_tokens for p in params]
        self.stops = [p.stop for p in params]
        self.eos = set(eos_token_ids)
        self.decode = decode
        self.lengths: list[int | None] = [None] * len(params)
        self.finished = [False] * len(params)
        self.scanned = 0  # tokens per row already looked at
        self._seen: list[list[int]] = [[] for _ in params]

    @property
    def all_ended(self) -> bool:
        """Whether every row's completion has ended."""
        return all(n is not None for n in self.lengths)

    def final_lengths(self, steps: int) -> list[int]:
        """Each row's length, ``steps`` for a row not ended within the tokens scanned."""
        return [steps if n is None else n for n in self.lengths]

    def scan(self, new_tokens: Sequence[Sequence[int]]) -> None:
        """Look at the next tokens of every row (the same number per row)."""
        start = self.scanned
        for row, tokens in enumerate(new_tokens):
            if self.lengths[row] is not None:
                continue
            for offset, token in enumerate(tokens):
                length = start + offset + 1
                if token in self.eos or self._completes_stop(row, token):
                    self.lengths[row], self.finished[row] = length, True
                    break
                if length >= self.budgets[row]:
                    self.lengths[row] = length
                    break
        self.scanned = start + (len(new_tokens[0]) if new_tokens else 0)

    def scan_rows(self, rows: Sequence[int], new_tokens: Sequence[Sequence[int]]) -> None:
        """Like :meth:`scan`, for some of the rows: ``new_tokens[i]`` are those of row
        ``rows[i]``; every row not listed must have ended already."""
        count = len(new_tokens[0]) if new_tokens else 0
        full: list[Sequence[int]] = [[0] * count for _ in self.lengths]
        for row, tokens in zip(rows, new_tokens, strict=True):
            full[row] = tokens
        listed = set(rows)
        missing = [r for r, n in enumerate(self.lengths) if n is None and r not in listed]
        if missing:
            raise ValueError(f"RowEnds.scan_rows: rows {missing} are running but not scanned")
        self.scan(full)

    def _completes_stop(self, row: int, token: int) -> bool:
        stops = self.stops[row]
        if not stops:
            return False
        seen = self._seen[row]
        seen.append(token)
        return completes_stop(seen, stops, self.decode)
