"""Measurements on the stand-in recover what its documented rule implies."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest
from helpers import run_experiment

from agentsim.analysis.recorded import find_experiments
from agentsim.analysis.stats import js_distance_from_uniform, proportion_interval
from agentsim.games.naming import FirstChoiceProbe, NamingGame, NamingSituation, NamingStandInSettings, StrategyProbe
from agentsim.games.naming.bias import PoolSearch, find_unbiased_pool, individual_bias, sample_first_choices
from agentsim.games.naming.critical_mass import CriticalMassSearch, search_both
from agentsim.games.naming.strategies import strategy_table
from agentsim.llm.base import Completion, Request
from agentsim.llm.standin import StandInModel
from agentsim.store import Store


def test_the_standins_exact_probabilities_by_hand() -> None:
    rule = NamingGame(names=("Q", "M"), standin=NamingStandInSettings(bias_name="M", bias=0.3, noise=0.2)).standin_part().rules[0]
    assert rule.probabilities(NamingSituation(("Q", "M"), ())) == pytest.approx({"M": 0.65, "Q": 0.35})
    # failed with partner Q: lose-shift to Q, except a noise draw from the prior
    failed = NamingSituation(("M", "Q"), (("M", "Q", -50),))
    assert rule.probabilities(failed) == pytest.approx({"M": 0.2 * 0.65, "Q": 0.8 + 0.2 * 0.35})
    # a tie between Q and M among partners goes to the favoured name
    tied = NamingSituation(("Q", "M"), (("Q", "M", -50), ("M", "Q", -50)))
    assert rule.probabilities(tied)["M"] == pytest.approx(0.8 + 0.2 * 0.65)


def test_first_choices_sampled_concurrently_match_the_prior() -> None:
    scenario = NamingGame(names=("Q", "M"), standin=NamingStandInSettings(bias_name="M", bias=0.3))
    counts = sample_first_choices(scenario, samples=2000, seed=3, concurrency=32)
    total = sum(counts.values())
    assert total >= 2000
    low, high = proportion_interval(counts["M"], total, confidence=0.999)
    assert low <= 0.65 <= high


def test_unbiased_pool_search_keeps_a_pool_within_the_threshold() -> None:
    result = find_unbiased_pool(PoolSearch(samples=2000, threshold=0.005, max_tries=10, seed=0))
    assert result.pool is not None
    kept = result.tries[-1]
    assert kept["kept"] and kept["js_distance"] < 0.005
    assert js_distance_from_uniform(kept["counts"]) == pytest.approx(kept["js_distance"])
    assert all(entry["js_distance"] >= 0.005 for entry in result.tries[:-1])
    allowed = set(string.ascii_letters + string.digits)
    assert all(len(name) == 6 and set(name) <= allowed for name in result.pool)


def test_an_unbiased_pool_is_never_kept_from_fallbacks() -> None:
    """A model whose every reply is unreadable gives random fallbacks, uniform by
    construction: they are not choices, so no pool is kept on them. (A token budget that
    holds the whole reply: cut short, "Q or M" would read as Q.)"""
    scenario = NamingGame(max_tokens=40, standin=NamingStandInSettings(invalid_rate=1.0))
    result = find_unbiased_pool(PoolSearch(samples=200, threshold=0.005, max_tries=2, seed=0), scenario)
    assert result.pool is None
    for entry in result.tries:
        assert sum(entry["counts"]) == 0 and entry["fallbacks"] >= 200 and entry["js_distance"] is None


def test_individual_bias_is_read_back_from_a_recorded_probe(tmp_path: Path) -> None:
    probe = FirstChoiceProbe(agents=20, names=("Q", "M"), max_rounds=50, stop_at="none",
                             standin=NamingStandInSettings(bias_name="M", bias=0.2))
    run_experiment(probe, tmp_path / "probe", seed=2)
    ((key, test),) = individual_bias(find_experiments(tmp_path)).items()
    assert key[1] == ("M", "Q") and test.samples == 20 * 50
    assert test.biased and test.p_value < 1e-4  # 600 of 1000 gives p about 1e-10; 1e-4 leaves room for a seed's luck
    low, high = proportion_interval(dict(zip(test.names, test.counts))["M"], test.samples, confidence=0.999)
    assert low <= 0.6 <= high


def test_a_strategy_table_from_the_standin_recovers_its_probabilities(tmp_path: Path) -> None:
    probe = StrategyProbe(agents=24, names=("Q", "M"), probe_lengths=(0, 1, 2), max_rounds=175, stop_at="none",
                          standin=NamingStandInSettings(bias_name="M", bias=0.3, noise=0.25))
    run_experiment(probe, tmp_path / "strategies", seed=5)
    table = strategy_table(find_experiments(tmp_path))
    assert table is not None and len(table.states) == 21
    rule = probe.for_experiment(5).standin_part().rules[0]
    confidence = 1 - 0.01 / len(table.states)  # Bonferroni over the 21 configurations
    for state, strategy in table.states.items():
        memory = tuple((own, partner, 100 if own == partner else -50) for own, partner in state)
        exact = rule.probabilities(NamingSituation(("Q", "M"), memory))["M"]
        assert strategy.samples == 200
        low, high = proportion_interval(strategy.counts["M"], strategy.samples, confidence=confidence)
        assert low <= exact <= high, (state, strategy.counts, exact)
        assert strategy.probability("M") == pytest.approx(exact)  # the stand-in's exact rule is used


def test_critical_mass_is_larger_for_the_convention_the_standin_favours(tmp_path: Path) -> None:
    scenario = NamingGame(agents=12, names=("Q", "M"), memory_length=5,
                          standin=NamingStandInSettings(bias_name="M", bias=0.5, noise=0.1))
    spec = CriticalMassSearch(scenario=scenario, majority="M", alternative="Q", runs=3, max_rounds=30, seed=0)
    against_strong, against_weak = search_both(spec, tmp_path)
    print(f"critical mass against M: {against_strong.critical_mass}/12, against Q: {against_weak.critical_mass}/12")
    assert against_strong.critical_mass is not None and against_weak.critical_mass is not None
    assert against_strong.critical_mass > against_weak.critical_mass
    assert against_strong.fraction == against_strong.critical_mass / 12
    # the smallest: one fewer does not flip every run
    below = against_strong.tried[against_strong.critical_mass - 1]
    assert below["flips"] < below["runs"]
    # a second search reuses every finished run and finds the same
    again_strong, again_weak = search_both(spec, tmp_path)
    assert (again_strong.critical_mass, again_weak.critical_mass) == (against_strong.critical_mass, against_weak.critical_mass)
    for size in against_strong.tried:
        store = Store(spec.directory(tmp_path, size))
        assert len(store.runs()) == 3
        store.close()


class ReportingStandIn(StandInModel):
    """The stand-in, reporting its rule's option probabilities as a backend with logprobs does."""

    def __init__(self, scenario: NamingGame) -> None:
        super().__init__(scenario.standin_part().rules)
        self.rule = scenario.standin_part().rules[0]

    def answer(self, request: Request) -> Completion:
        completion = super().answer(request)
        assert isinstance(request.situation, NamingSituation)
        completion.option_probabilities = self.rule.probabilities(request.situation)
        return completion


def test_option_probabilities_a_backend_reports_are_stored_and_used(tmp_path: Path) -> None:
    probe = StrategyProbe(agents=12, names=("Q", "M"), probe_lengths=(0, 1), max_rounds=2, stop_at="none",
                          standin=NamingStandInSettings(bias_name="M", bias=0.4, noise=0.3))
    run_experiment(probe, tmp_path / "out", seed=1, backend=ReportingStandIn)
    store = Store(tmp_path / "out")
    stored = [json.loads(text) for (text,) in store.rows("SELECT probabilities FROM decisions WHERE reply IS NOT NULL")]
    store.close()
    assert stored and all(set(entry) == {"Q", "M"} and sum(entry.values()) == pytest.approx(1) for entry in stored)
    table = strategy_table(find_experiments(tmp_path))
    assert table is not None and len(table.states) == 5
    for state, strategy in table.states.items():
        assert strategy.source == "exact (backend probabilities)"
        memory = tuple((own, partner, 0) for own, partner in state)
        assert strategy.probability("M") == pytest.approx(
            probe.for_experiment(1).standin_part().rules[0].probabilities(NamingSituation(("Q", "M"), memory))["M"])


def _committed_search(**changes: Any) -> CriticalMassSearch:
    scenario = NamingGame(agents=12, names=("Q", "M"), memory_length=5,
                          standin=NamingStandInSettings(bias_name="M", bias=0.5, noise=0.1))
    return CriticalMassSearch(scenario=scenario, majority="M", alternative="Q", runs=2, max_rounds=30, seed=0, **changes)


def test_the_critical_mass_search_tries_sizes_at_once_and_finds_what_the_bisection_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentsim.games.naming import critical_mass

    bisection = critical_mass.search(_committed_search(), tmp_path / "bisection")
    at_once, most = 0, 0
    flips_at = critical_mass._flips_at

    async def counted(*arguments: Any) -> dict[str, Any]:
        nonlocal at_once, most
        at_once += 1
        most = max(most, at_once)
        try:
            return await flips_at(*arguments)
        finally:
            at_once -= 1

    monkeypatch.setattr(critical_mass, "_flips_at", counted)
    parallel = critical_mass.search(_committed_search(parallel=3), tmp_path / "parallel")
    assert most == 3  # three sizes' experiments ran at once
    assert parallel.critical_mass == bisection.critical_mass is not None
    for size in set(parallel.tried) & set(bisection.tried):
        assert parallel.tried[size]["flips"] == bisection.tried[size]["flips"]
