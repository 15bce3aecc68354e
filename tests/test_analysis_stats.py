"""Each statistic against scipy or values computed by hand, and the paper's own p-values."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from agentsim.analysis.stats import bias_test, js_distance_from_uniform, proportion_interval


@pytest.mark.parametrize(("strong", "weak", "paper_p"), [(2435, 2565, 0.068), (5079, 4921, 0.116), (5016, 4984, 0.757)])
def test_binomial_test_reproduces_the_papers_p_values(strong: int, weak: int, paper_p: float) -> None:
    """Table S1's counts give Fig. 2B's p-values (exact two-sided binomial test against 1/2)."""
    test = bias_test({"M": strong, "Q": weak})
    assert test.test == "binomial"
    assert test.p_value == pytest.approx(stats.binomtest(strong, strong + weak, 0.5).pvalue)
    assert round(test.p_value, 3) == paper_p
    assert not test.biased


def test_binomial_test_by_hand_on_a_small_sample() -> None:
    # 9 of 10: P(X >= 9) + P(X <= 1) = 2 * (10 + 1) / 1024
    test = bias_test({"A": 9, "B": 1})
    assert test.p_value == pytest.approx(22 / 1024)
    assert test.biased
    assert test.shares == {"A": 0.9, "B": 0.1}


def test_chi_square_against_uniform_by_hand() -> None:
    # expected 20 each: (100 + 0 + 100) / 20 = 10; with 2 degrees of freedom p = exp(-10 / 2)
    test = bias_test({"A": 10, "B": 20, "C": 30})
    assert test.test == "chi-square"
    assert test.statistic == pytest.approx(10.0)
    assert test.p_value == pytest.approx(math.exp(-5))
    assert test.p_value == pytest.approx(stats.chisquare([10, 20, 30]).pvalue)


def test_names_never_chosen_count_in_the_test() -> None:
    with_zero = bias_test({"A": 10, "B": 10, "C": 0})
    assert with_zero.test == "chi-square" and with_zero.biased


def test_jensen_shannon_distance_by_hand_in_bits() -> None:
    # p = (1, 0) against (1/2, 1/2): mixture (3/4, 1/4)
    kl_p = math.log2(1 / 0.75)
    kl_q = 0.5 * math.log2(0.5 / 0.75) + 0.5 * math.log2(0.5 / 0.25)
    assert js_distance_from_uniform([7, 0]) == pytest.approx(math.sqrt((kl_p + kl_q) / 2))
    assert js_distance_from_uniform([5, 5, 5]) == pytest.approx(0.0, abs=1e-9)
    assert js_distance_from_uniform([1, 0], base=math.e) == pytest.approx(math.sqrt((kl_p + kl_q) / 2 * math.log(2)))


def test_the_papers_threshold_needs_a_near_even_split() -> None:
    assert js_distance_from_uniform([1000, 1000]) < 0.005
    assert js_distance_from_uniform([1030, 970]) > 0.005  # 51.5% is already too far


def test_wilson_interval_by_hand() -> None:
    k, n, z = 8, 10, stats.norm.ppf(0.975)
    centre = (k + z * z / 2) / (n + z * z)
    half = z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    low, high = proportion_interval(k, n)
    assert (low, high) == (pytest.approx(centre - half), pytest.approx(centre + half))


def test_clopper_pearson_interval_by_hand() -> None:
    low, high = proportion_interval(0, 10, method="exact")
    assert low == 0.0
    assert high == pytest.approx(1 - 0.025 ** (1 / 10))
    low, high = proportion_interval(3, 10, method="exact")
    assert low == pytest.approx(stats.beta.ppf(0.025, 3, 8))
    assert high == pytest.approx(stats.beta.ppf(0.975, 4, 7))


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError):
        bias_test({"A": 3})
    with pytest.raises(ValueError):
        bias_test({"A": 0, "B": 0})
    with pytest.raises(ValueError):
        js_distance_from_uniform([0, 0])
    assert proportion_interval(0, 0) == (0.0, 1.0)


def test_table_s5_configuration_tests() -> None:
    import numpy as np

    from agentsim.games.naming.strategies import configuration_tests

    rng = np.random.default_rng(0)
    extreme = configuration_tests(200, 200, rng)
    assert extreme["p_unbiased"] == pytest.approx(stats.binomtest(200, 200).pvalue)
    assert extreme["p_more_extreme"] == 0.0  # nothing is more biased than all of one name
    # A resample of 70% is, by symmetry, more extreme than the observed share about half the time.
    assert 0.4 < configuration_tests(848, 1000, rng)["p_more_extreme"] < 0.6
    even = configuration_tests(100, 200, rng)
    assert even["p_unbiased"] == pytest.approx(1.0) and even["p_more_extreme"] > 0.8
