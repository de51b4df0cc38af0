"""The neutral game: when match outcomes are coin flips, culling must not depend on age.

Teachers and students are paired by PFSP and every match is a fair coin flip, whatever the
genomes (:func:`redqueen.evo.cull_study` with ``skill_sd=0``); every two steps the evolution
loop replaces the bottom quarter of each role by ``mu - 3 sigma``. With no real skill to find,
a member's chance of being culled should be the same at every age. The old rule (a child starts
from the initial rating) culls nearly every newborn at its first replacement; the default rule
(a child starts from the rating of a random survivor) does not. The same check is run on both,
so it is shown to be able to fail.
"""

from __future__ import annotations

import pytest
from scipy.stats import chi2_contingency

from redqueen.evo import CullRecord, ReplacementConfig, cull_study


def _age_dependence(records: list[CullRecord]) -> tuple[float, dict[int, float]]:
    """p-value of a chi-square test that culling is independent of age, and the rates."""
    counts: dict[int, list[int]] = {}
    for r in records:
        row = counts.setdefault(r.age, [0, 0])
        row[0] += r.culled
        row[1] += 1
    table = [[culled, seen - culled] for culled, seen in counts.values()]
    rates = {age: culled / seen for age, (culled, seen) in sorted(counts.items())}
    return float(chi2_contingency(table)[1]), rates


def test_culling_is_independent_of_age_under_the_default_rule():
    assert ReplacementConfig().newborn == "survivor"
    p_value, rates = _age_dependence(cull_study("survivor"))
    assert set(rates) == {1, 2, 3}, rates  # newborns, one-round survivors, older members
    assert p_value > 1e-3, rates
    for rate in rates.values():
        assert rate == pytest.approx(0.25, abs=0.05), rates


def test_the_same_check_catches_the_old_rule():
    p_value, rates = _age_dependence(cull_study("fresh"))
    assert p_value < 1e-6, rates
    assert rates[1] > 0.8  # a newborn at the initial rating is almost always culled
