"""The committed-minority baselines reproduce their published tipping points: Xie et al.
(2011) p_c ≈ 0.0979 for the binary naming game, Centola et al. (2018) about 25% for best
response with memory M = 12; in the fast paths and in the scheduler."""

from __future__ import annotations

import numpy as np
from helpers import run_model

from agentsim.games.naming import NamingSituation
from agentsim.games.theory import (
    BestResponseNamingGame,
    MinimalNamingGame,
    best_response,
    consensus_times,
    flip_shares,
    mean_field_critical_fraction,
    mean_field_critical_mass,
)


def test_xie_rate_equations_give_the_published_critical_fraction() -> None:
    assert abs(mean_field_critical_fraction() - 0.0979) < 0.001


def test_xie_minority_below_the_tipping_point_fails_and_above_it_flips() -> None:
    """N = 150, within 60 time units (N interactions each): 6% never wins, 14% always does."""
    below = consensus_times(150, 0.06, max_time=60, runs=8, seed=1)
    above = consensus_times(150, 0.14, max_time=60, runs=8, seed=2)
    assert np.isnan(below).all()
    assert np.isfinite(above).all() and np.median(above) < 50


def test_xie_in_the_scheduler_flips_above_the_tipping_point_only() -> None:
    def final_alternative_share(fraction: float) -> float:
        game = MinimalNamingGame(agents=100, names=("A", "B"), majority_name="B", committed_name="A",
                                 committed_fraction=fraction, stop_at="consensus", max_rounds=200)
        model = run_model(game, seed=3)
        inventories = [tuple(agent.memory) for agent in model.population if not agent.committed]
        return sum(inventory == ("A",) for inventory in inventories) / len(inventories)

    assert final_alternative_share(0.06) < 0.5
    assert final_alternative_share(0.14) == 1.0


def test_centola_mean_field_critical_mass_is_a_quarter_at_memory_twelve() -> None:
    assert abs(mean_field_critical_mass(12) - 0.25) < 0.02
    assert mean_field_critical_mass(4) < mean_field_critical_mass(8) < mean_field_critical_mass(12)


def test_centola_minority_tips_the_population_between_fifteen_and_thirty_five_percent() -> None:
    """N = 20, M = 12, 60 population rounds: 3 committed (15%) never tip, 7 (35%) always do."""
    below = flip_shares(20, 3, memory=12, population_rounds=60, runs=100, seed=1)[-1]
    above = flip_shares(20, 7, memory=12, population_rounds=60, runs=100, seed=2)[-1]
    assert (below > 0.9).mean() < 0.05
    assert (above > 0.9).mean() > 0.95


def test_centola_in_the_scheduler_agrees_with_the_fast_path() -> None:
    def flips(committed: int, seed: int) -> bool:
        game = BestResponseNamingGame(agents=20, names=("Q", "M"), memory_length=12, majority_name="M",
                                      committed_name="Q", committed=committed, stop_at="none", max_rounds=60,
                                      max_in_flight=1)
        model = run_model(game, seed=seed)
        favoured = [best_response(NamingSituation(("M", "Q"), tuple(agent.memory)), 0.0)
                    for agent in model.population if not agent.committed]
        return favoured.count("Q") / len(favoured) > 0.9

    assert not any(flips(3, seed) for seed in range(10))
    assert all(flips(7, seed) for seed in range(10))


def test_best_response_plays_what_most_partners_played() -> None:
    memory = (("M", "Q", -50), ("Q", "Q", 100), ("M", "M", 100))
    assert best_response(NamingSituation(("M", "Q"), memory), 0.9) == "Q"
    tie = (("M", "Q", -50), ("Q", "M", -50))
    assert {best_response(NamingSituation(("M", "Q"), tie), unit) for unit in (0.1, 0.9)} == {"M", "Q"}
    assert best_response(NamingSituation(("M", "Q"), ()), 0.7) == "Q"
