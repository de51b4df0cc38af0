"""Per-step accounting of learning and compute in the code game.

Whether the inner loop learns, and what it cost, read from the logs rather than asserted:
:func:`learning_metrics` gives the population's figures for ``metrics.jsonl``,
:func:`member_accounting` each adapter's for its row of ``ratings.jsonl``. Compute is counted
in tokens: ``tokens_generated`` (sampled by the adapter, as proposer and as solver) and
``tokens_trained`` (completion tokens through a forward and backward pass, over all epochs),
so that budgets of co-evolution and self-play runs can be compared from their logs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from redqueen.environments._round import PlayedTask

if TYPE_CHECKING:
    from redqueen.engine import LearnerStats

__all__ = ["LEARNING_KEYS", "learning_metrics", "member_accounting"]

#: Learner figures averaged over the adapters that were updated in a step.
LEARNING_KEYS: tuple[str, ...] = ("kl_from_base", "weight_change", "clip_fraction")


def tokens_generated(played: Sequence[PlayedTask]) -> dict[str, int]:
    """Tokens each adapter sampled this step: its proposals and its answers."""
    out: dict[str, int] = defaultdict(int)
    for item in played:
        out[item.teacher] += len(item.proposal_gen.token_ids)
        out[item.student] += sum(len(a.token_ids) for a in item.answers)
    return dict(out)


def member_accounting(
    played: Sequence[PlayedTask],
    learner_stats: Mapping[str, LearnerStats],
    members: Sequence[str] = (),
) -> dict[str, dict[str, float | None]]:
    """Per adapter (every one that played or learned, and every id in ``members``):
    ``tokens_generated``, ``tokens_trained``, and the learner figures of
    :data:`LEARNING_KEYS` (``None`` for an adapter the learner did not step this time)."""
    generated = tokens_generated(played)
    out: dict[str, dict[str, float | None]] = {}
    for adapter in set(generated) | set(learner_stats) | set(members):
        stats = learner_stats.get(adapter)
        row: dict[str, float | None] = {
            "tokens_generated": float(generated.get(adapter, 0)),
            "tokens_trained": float(stats.tokens_trained if stats is not None else 0),
        }
        for key in LEARNING_KEYS:
            row[key] = None if stats is None else float(getattr(stats, key))
        out[adapter] = row
    return out


def learning_metrics(
    played: Sequence[PlayedTask], learner_stats: Mapping[str, LearnerStats]
) -> dict[str, float]:
    """Step totals and means for ``metrics.jsonl``.

    - ``kl_from_base``, ``weight_change``, ``clip_fraction``: means over updated adapters;
    - ``informative_share``: share of samples (proposals and answers) whose advantage is not 0,
      the ones that carry a learning signal;
    - ``whiten_pooled_share``: share of samples whitened with pooled statistics (their own
      (adapter, role, task type) group was too small; see :func:`learn`);
    - ``tokens_generated``, ``tokens_trained``: totals over adapters.
    """
    accounts = member_accounting(played, learner_stats)
    advantages = [a for item in played for a in item.advantages]
    pooled = [p for item in played for p in item.pooled]
    metrics = {
        "informative_share": float(np.mean([a != 0 for a in advantages])) if advantages else 0.0,
        "whiten_pooled_share": float(np.mean(pooled)) if pooled else 0.0,
        "tokens_generated": float(sum(a["tokens_generated"] or 0 for a in accounts.values())),
        "tokens_trained": float(sum(a["tokens_trained"] or 0 for a in accounts.values())),
    }
    for key in LEARNING_KEYS:
        values = [float(getattr(s, key)) for s in learner_stats.values()]
        metrics[key] = float(np.mean(values)) if values else 0.0
    return metrics
