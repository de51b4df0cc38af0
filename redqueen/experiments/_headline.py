"""Which logged number says whether a run made progress, and how metrics are labelled.

Ratings (``best_rating``) rise in every run: each member is rated against the others, and
the conservative rating ``mu - 3 sigma`` climbs as sigma shrinks whatever anyone learns. They
are relative and inflate, so they are shown as such. The headline of a run is an objective
measure, the first of :data:`HEADLINE_METRICS` it logs:

- ``heldout_lift`` (surrogate, and code runs with ``environment.heldout_every``, as ``tiny``
  sets): the students' mean solve rate on a fixed held-out task set minus the frozen base
  model's on the same set.
- ``objective_skill`` (surrogate games): the game's ground-truth skill of the students.
- ``base_lift`` (code runs without a held-out probe): the students' solve rate minus the
  frozen base model's on the same tasks of the step (the difficulty probe,
  ``environment.base_probe_answers``); a larger held-out benchmark is ``redqueen eval``.

This module imports nothing heavy: the progress line and ``compare`` both use it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping

#: Objective measures, most telling first; a run's headline is the first one it logs.
HEADLINE_METRICS = ("heldout_lift", "objective_skill", "base_lift")

#: How a metric is labelled on plots and in tables, where its name alone misleads.
METRIC_LABELS = {
    "best_rating": "best_rating (relative, inflates)",
    "heldout_lift": "held-out lift over the base model",
    "base_lift": "lift over the base model (same tasks)",
    "objective_skill": "objective skill",
}

#: Metrics whose values lie in [-1, 1] (differences of two rates).
_LIFTS = re.compile(r"(^|/)(heldout_lift|base_lift)$")
#: Metrics whose values lie in [0, 1]: rates and shares, and the games' detectors.
_RATES = re.compile(r"(^|/|_)(rate|share)(/.*)?$|^(disengagement|cycling|focusing)$")


def headline_metric(columns: Collection[str]) -> str | None:
    """The first of :data:`HEADLINE_METRICS` among ``columns``, ``None`` if none is there."""
    return next((name for name in HEADLINE_METRICS if name in columns), None)


def metric_label(name: str) -> str:
    """``name`` with what it is, where the name alone misleads (ratings are relative)."""
    return METRIC_LABELS.get(name, name)


def metric_bounds(name: str) -> tuple[float, float] | None:
    """The range a metric's values cannot leave, from its name: ``(0, 1)`` for rates and
    shares, ``(-1, 1)`` for lifts (a difference of two rates), ``None`` when not known."""
    if _LIFTS.search(name):
        return (-1.0, 1.0)
    if _RATES.search(name):
        return (0.0, 1.0)
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def progress_stats(metrics: Mapping[str, object]) -> str:
    """The progress line's numbers: the headline first, then the step's game, then the
    rating labelled as relative."""
    parts = []
    headline = headline_metric(metrics)
    if headline is not None and (value := _number(metrics[headline])) is not None:
        name = {"heldout_lift": "held-out lift", "base_lift": "lift vs base", "objective_skill": "skill"}[headline]
        parts.append(f"{name} {value:+.3g}" if headline.endswith("lift") else f"{name} {value:.3g}")
    for key, name in (("solve_rate", "solve"), ("teacher_reward", "teacher"), ("valid_share", "valid"),
                      ("best_rating", "rating (relative)")):
        if (value := _number(metrics.get(key))) is not None:
            parts.append(f"{name} {value:.3g}")
    return "  ".join(parts)
