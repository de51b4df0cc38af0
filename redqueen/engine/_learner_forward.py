"""How the learner runs rollouts through the model: rows grouped by length
(:func:`length_groups`) and a shared prompt's key-value cache copied to its rows
(:func:`select_cache`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from torch import Tensor

__all__ = ["GROUP_OVERHEAD", "length_groups", "select_cache"]


#: What running one more group of rows costs, in padded token positions, per device type. On
#: the CPU a forward and backward of one more group is taken to cost about as much as 32 more
#: tokens of ``tiny`` (an estimate; ``benchmarks/learner_groups.py`` measures the result). On a
#: GPU padding is nearly free and every group is more launches, so rows run together.
GROUP_OVERHEAD: dict[str, float] = {"cpu": 32.0}


def length_groups(
    prompt: Sequence[int], completion: Sequence[int], overhead: float | None
) -> list[list[int]]:
    """Rows split into groups that run together, so little of a group is padding.

    A group runs padded to its longest prompt plus its longest completion, and each group
    costs ``overhead`` padded positions more. Rows are sorted by length and the contiguous
    grouping of least total cost is found exactly (dynamic programming over the sorted rows).
    ``overhead=None`` keeps every row in one group. Rows with no completion tokens are left
    out (nothing of theirs is scored).
    """
    rows = [r for r in range(len(completion)) if completion[r] > 0]
    if overhead is None or len(rows) <= 1:
        return [rows] if rows else []
    rows.sort(key=lambda r: (prompt[r] + completion[r], completion[r]))
    n = len(rows)
    best = [0.0] + [math.inf] * n  # best[j]: least cost of grouping rows[:j]
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        longest_prompt = longest_completion = 0
        for i in range(j - 1, -1, -1):  # the last group is rows[i:j]
            longest_prompt = max(longest_prompt, prompt[rows[i]])
            longest_completion = max(longest_completion, completion[rows[i]])
            cost = best[i] + overhead + (j - i) * (longest_prompt + longest_completion)
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], n
    while j > 0:
        groups.append(rows[cut[j] : j])
        j = cut[j]
    return groups[::-1]


def select_cache(cache: object, index: Tensor) -> object:
    """A new key-value cache (a transformers ``Cache``) holding rows ``index`` of ``cache``;
    gradients flow back to it."""
    kind: Callable[..., object] = type(cache)
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return kind([(layer.keys[index], layer.values[index]) for layer in layers])
    # Older transformers: per-layer lists of keys and values.
    keys, values = getattr(cache, "key_cache"), getattr(cache, "value_cache")  # noqa: B009
    legacy = tuple((k[index], v[index]) for k, v in zip(keys, values, strict=True))
    return getattr(kind, "from_legacy_cache")(legacy)  # noqa: B009
