"""Statistics for comparing runs: confidence intervals and rank tests (scipy.stats).

Two intervals, each where it keeps its coverage:

- :func:`bootstrap_ci` (``eval``'s CIs over problems): ``scipy.stats.bootstrap`` of the mean
  with the percentile method and a fixed seed (the same data give the same interval). It needs
  many samples: from n = 2 seeds it is about the range of the two values and covers the mean
  about half the time.
- :func:`t_ci` (``compare``'s bands and tables, over seeds): Student's t interval of the mean,
  which keeps its nominal coverage for any n >= 2 when seed means are roughly normal; cut to
  a metric's range by :func:`within` (rates stay inside [0, 1]).

Tests between conditions: :func:`paired_t_test` when the conditions ran the same seeds,
:func:`rank_test` (Mann-Whitney U) otherwise, and :func:`holm_adjusted` across the comparisons.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Bootstrap resamples used everywhere unless a caller asks for another number.
N_RESAMPLES = 9999


@dataclass(frozen=True)
class Interval:
    """A mean with its confidence interval.

    Attributes:
        mean: The sample mean.
        low: Lower end of the interval (equal to ``mean`` for fewer than two samples).
        high: Upper end of the interval.
        n: Number of samples.
        confidence: Confidence level, e.g. 0.95.
    """

    mean: float
    low: float
    high: float
    n: int
    confidence: float = 0.95

    def __str__(self) -> str:
        if self.n < 2:
            return f"{self.mean:.3g} (n={self.n})"
        return f"{self.mean:.3g} [{self.low:.3g}, {self.high:.3g}]"


def bootstrap_ci(
    samples: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
) -> Interval:
    """Mean of ``samples`` with a percentile bootstrap interval (``scipy.stats.bootstrap``).

    The percentile method rather than scipy's default BCa: BCa's jackknife is unstable for the
    handful of seeds a sweep runs and undefined when every sample is equal.

    Args:
        samples: One value per independent unit (problem, seed, run).
        confidence: Confidence level of the interval.
        n_resamples: Bootstrap resamples.
        seed: Seed of the resampling, so a report is reproducible.

    Raises:
        ValueError: If ``samples`` is empty or holds a non-finite value.
    """
    from scipy.stats import bootstrap

    data = np.asarray(samples, dtype=float).ravel()
    if data.size == 0:
        raise ValueError("bootstrap_ci: no samples")
    if not np.all(np.isfinite(data)):
        raise ValueError("bootstrap_ci: samples must be finite")
    mean = float(data.mean())
    if data.size < 2:
        return Interval(mean, mean, mean, int(data.size), confidence)
    if np.all(data == data[0]):
        return Interval(mean, mean, mean, int(data.size), confidence)
    result = bootstrap(
        (data,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
        method="percentile", vectorized=True, rng=np.random.default_rng(seed),
    )
    ci = result.confidence_interval
    return Interval(mean, float(ci.low), float(ci.high), int(data.size), confidence)


def t_ci(samples: Sequence[float] | np.ndarray, *, confidence: float = 0.95) -> Interval:
    """Mean of ``samples`` with Student's t interval, ``mean +- t(n-1) * sd / sqrt(n)``.

    For the handful of seeds a sweep runs: its width grows as n shrinks (t with one degree of
    freedom is 12.7 at 95%), where a percentile bootstrap shrinks to the sample's range.

    Args:
        samples: One value per independent unit (seed, run).
        confidence: Confidence level of the interval.

    Raises:
        ValueError: If ``samples`` is empty or holds a non-finite value.
    """
    from scipy.stats import t

    data = np.asarray(samples, dtype=float).ravel()
    if data.size == 0:
        raise ValueError("t_ci: no samples")
    if not np.all(np.isfinite(data)):
        raise ValueError("t_ci: samples must be finite")
    mean = float(data.mean())
    if data.size < 2:
        return Interval(mean, mean, mean, int(data.size), confidence)
    half = float(t.ppf(0.5 + confidence / 2, data.size - 1) * data.std(ddof=1) / np.sqrt(data.size))
    return Interval(mean, mean - half, mean + half, int(data.size), confidence)


def smallest_rank_p(n_first: int, n_second: int) -> float:
    """The smallest two-sided p-value an exact Mann-Whitney U test can give for these sample
    sizes, ``2 / C(n1 + n2, n1)`` (capped at 1): with 2 seeds each it is 1/3, never below 0.05."""
    return min(1.0, 2 / math.comb(n_first + n_second, n_first)) if n_first and n_second else 1.0


def rank_test(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Two-sided Mann-Whitney U test p-value (``scipy.stats.mannwhitneyu``) between two
    conditions' samples; ``None`` when either has no samples."""
    from scipy.stats import mannwhitneyu

    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if a.size == 0 or b.size == 0:
        return None
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)


def welch_ci(
    first: Sequence[float] | np.ndarray,
    second: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
) -> tuple[Interval, float]:
    """Difference of means ``mean(first) - mean(second)`` of two independent samples with
    Welch's t interval (unequal variances), and the two-sided p-value of Welch's t test.

    ``Interval.n`` is the smaller sample size. With no spread in either sample the interval has
    zero width and the p-value is 1 for a zero difference and 0 otherwise.

    Raises:
        ValueError: If either sample has fewer than two values or holds a non-finite value.
    """
    from scipy.stats import t

    a = np.asarray(first, dtype=float).ravel()
    b = np.asarray(second, dtype=float).ravel()
    if a.size < 2 or b.size < 2:
        raise ValueError("welch_ci: each sample needs at least two values")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("welch_ci: samples must be finite")
    diff = float(a.mean() - b.mean())
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    n = int(min(a.size, b.size))
    if se == 0.0:
        return Interval(diff, diff, diff, n, confidence), 1.0 if diff == 0.0 else 0.0
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = float(t.ppf(0.5 + confidence / 2, df) * se)
    p_value = float(2 * t.sf(abs(diff) / se, df))
    return Interval(diff, diff - half, diff + half, n, confidence), p_value


def within(interval: Interval, bounds: tuple[float, float] | None) -> Interval:
    """``interval`` cut to ``bounds``, the range the metric cannot leave (``None``: unchanged).

    For a rate the t interval of the mean over seeds can reach below 0 or above 1. Cutting it
    at the bounds keeps its coverage exactly: the true mean lies inside the bounds, so the part
    cut away never holds it. Rates averaged over seeds carry no counts, so a Wilson or
    Clopper-Pearson interval (binomial counts) does not apply to them.
    """
    if bounds is None:
        return interval
    low, high = bounds
    return Interval(interval.mean, min(max(interval.low, low), high), max(min(interval.high, high), low),
                    interval.n, interval.confidence)


def paired_t_test(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Two-sided paired t test p-value (``scipy.stats.ttest_rel``) of matched samples, e.g.
    two conditions run on the same seeds; ``None`` under two pairs. Identical samples give 1.

    A seed shifts both conditions alike, so the differences of pairs drop that spread where an
    unpaired test keeps it: five seeds that all favour one condition can reach p < 0.05 paired
    when a rank test over the same ten values cannot.
    """
    from scipy.stats import ttest_rel

    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if a.size != b.size:
        raise ValueError(f"paired_t_test: {a.size} values against {b.size}")
    if a.size < 2:
        return None
    differences = a - b
    if np.all(differences == differences[0]):  # no spread: t is 0 or infinite
        return 1.0 if differences[0] == 0 else 0.0
    return float(ttest_rel(a, b).pvalue)


def holm_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (step-down, family-wise error): reject where the adjusted value
    is at most alpha, the same decisions as :func:`holm`. ``None`` (no test) stays ``None``
    and does not count towards the family."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (len(present) - rank) * p))
        adjusted[i] = running
    return adjusted


def holm(p_values: dict[str, float], *, alpha: float = 0.05) -> dict[str, bool]:
    """Holm's step-down correction: which hypotheses are rejected at family-wise level ``alpha``.

    Sorted by p-value, the k-th smallest (from 0) is rejected while every p-value so far is at
    most ``alpha / (m - k)``; once one is not, none after it is.
    """
    order = sorted(p_values, key=lambda key: p_values[key])
    rejected, still = {}, True
    for rank, key in enumerate(order):
        still = still and p_values[key] <= alpha / (len(order) - rank)
        rejected[key] = still
    return rejected
