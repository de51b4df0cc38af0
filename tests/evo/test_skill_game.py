"""The hidden-skill game: when members differ in skill, ratings must cull by skill.

Beside the neutral game (coin flips, where only age could explain culling) every member gets a
hidden skill at birth, independent of its parents and its age, and the student wins a match with
probability ``sigmoid(skill_student - skill_teacher)`` (:func:`redqueen.evo.cull_study`). A
replacement that reads skill through the ratings culls the least skilled far more often than
the most skilled; the same check on the neutral game (no skill to read) must not pass.
"""

from __future__ import annotations

import numpy as np

from redqueen.evo import CullRecord, cull_study


def _cull_rate_by_skill_quartile(records: list[CullRecord]) -> list[float]:
    """Cull rate in each quartile of skill within each role, lowest quartile first."""
    rates = []
    for q in range(4):
        culled = seen = 0
        for role in ("teacher", "student"):
            rows = [r for r in records if r.role == role]
            cuts = np.quantile([r.skill for r in rows], [0.25, 0.5, 0.75])
            in_q = [r for r in rows if int(np.searchsorted(cuts, r.skill, side="right")) == q]
            culled += sum(r.culled for r in in_q)
            seen += len(in_q)
        rates.append(culled / seen)
    return rates


def test_ratings_cull_the_least_skilled_members():
    rates = _cull_rate_by_skill_quartile(cull_study("survivor", skill_sd=1.0))
    assert rates[0] > 2 * rates[3], rates  # the bottom quartile culled at least twice as often
    assert rates[0] > rates[1] > rates[3], rates


def test_the_same_check_fails_when_nobody_has_skill():
    # skill_sd=0: every skill is 0, so quartiles carry no information; jitter them by id order
    records = cull_study("survivor", skill_sd=0.0)
    rng = np.random.default_rng(0)
    shuffled = [CullRecord(r.role, r.age, float(rng.normal()), r.culled) for r in records]
    rates = _cull_rate_by_skill_quartile(shuffled)
    assert not rates[0] > 2 * rates[3], rates
