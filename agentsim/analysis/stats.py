"""The statistics the paper's measurements rest on, each a thin, tested wrapper over scipy.

- `bias_test(counts)`: is a first choice biased? The exact two-sided binomial test against
  1/2 for two names (the paper's test for W = 2), Pearson's chi-square against the uniform
  distribution for more (its test for W = 10), with the p-value and the Jensen-Shannon
  distance of the observed distribution from uniform.
- `js_distance_from_uniform(counts, base=2)`: the square root of the Jensen-Shannon
  divergence, in bits by default (base 2 bounds it by 1). The paper keeps random-string pools
  whose distance is below 0.005 without saying which base; we use base 2 and record it.
- `proportion_interval(k, n, method=...)`: Wilson (default: good coverage at any n) or
  Clopper-Pearson ("exact", conservative) confidence intervals for a proportion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats
from scipy.spatial import distance

JS_BASE = 2  # the log base of every Jensen-Shannon distance we report

IntervalMethod = Literal["wilson", "exact"]


def js_distance_from_uniform(counts: Sequence[float] | np.ndarray, *, base: float = JS_BASE) -> float:
    """Jensen-Shannon distance between the normalised `counts` and the uniform distribution
    over the same support (every name offered, including those never chosen)."""
    observed = np.asarray(counts, dtype=float)
    if observed.ndim != 1 or observed.size < 2 or observed.sum() <= 0 or (observed < 0).any():
        raise ValueError("counts must be at least two non-negative numbers with a positive sum")
    uniform = np.full(observed.size, 1.0 / observed.size)
    return float(distance.jensenshannon(observed / observed.sum(), uniform, base=base))


def proportion_interval(successes: int, trials: int, *, confidence: float = 0.95,
                        method: IntervalMethod = "wilson") -> tuple[float, float]:
    """Confidence interval for a binomial proportion; (0, 1) when there are no trials."""
    if trials <= 0:
        return (0.0, 1.0)
    interval = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence_level=confidence, method=method)
    return (float(interval.low), float(interval.high))


@dataclass(frozen=True, kw_only=True)
class BiasTest:
    """The outcome of testing one set of first choices for bias."""

    names: tuple[str, ...]
    counts: tuple[int, ...]
    test: str  # "binomial" (W = 2) or "chi-square" (W > 2)
    statistic: float  # the first name's share (binomial) or chi-square statistic
    p_value: float
    js_distance: float
    js_base: float = JS_BASE
    alpha: float = 0.05

    @property
    def samples(self) -> int:
        return sum(self.counts)

    @property
    def shares(self) -> dict[str, float]:
        total = self.samples
        return {name: count / total if total else 0.0 for name, count in zip(self.names, self.counts)}

    @property
    def biased(self) -> bool:
        """Whether the null hypothesis of no bias is rejected at `alpha`."""
        return self.p_value < self.alpha

    def as_dict(self) -> dict[str, object]:
        return {"names": list(self.names), "counts": list(self.counts), "samples": self.samples, "test": self.test,
                "statistic": self.statistic, "p_value": self.p_value, "js_distance": self.js_distance,
                "js_base": self.js_base, "alpha": self.alpha, "biased": self.biased, "shares": self.shares}


def bias_test(counts: Mapping[str, int], *, alpha: float = 0.05) -> BiasTest:
    """Test first choices for bias as the paper does: exact binomial (two-sided, p = 1/2) for
    two names, chi-square against uniform for more. `counts` must list every name offered,
    with 0 for names never chosen."""
    names = tuple(sorted(counts))
    values = tuple(int(counts[name]) for name in names)
    if len(names) < 2:
        raise ValueError("a bias test needs at least two names")
    total = sum(values)
    if total <= 0:
        raise ValueError("a bias test needs at least one choice")
    if len(names) == 2:
        result = stats.binomtest(values[0], total, 0.5, alternative="two-sided")
        test, statistic, p_value = "binomial", values[0] / total, float(result.pvalue)
    else:
        chi = stats.chisquare(values)
        test, statistic, p_value = "chi-square", float(chi.statistic), float(chi.pvalue)
    return BiasTest(names=names, counts=values, test=test, statistic=float(statistic), p_value=p_value,
                    js_distance=js_distance_from_uniform(values), alpha=alpha)


def mean_and_sem(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column of runs x rounds (NaN: no value): the mean, its standard error and the count
    of values, as `np.nanmean` and `np.nanstd(ddof=1) / sqrt(count)` give them, without their
    RuntimeWarnings: a column with no value has a NaN mean, one with a single value a NaN
    standard error (undefined, not 0); a matrix of one run has no error band (0)."""
    present = ~np.isnan(matrix)
    counts = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(present, matrix, 0.0).sum(axis=0) / counts
        squares = (np.where(present, matrix - mean, 0.0) ** 2).sum(axis=0)
        sem = np.sqrt(squares / (counts - 1)) / np.sqrt(counts)
    if matrix.shape[0] <= 1:
        return mean, np.zeros_like(mean), counts
    return mean, np.where(counts > 1, sem, np.nan), counts
