"""The minimal naming game reproduces Baronchelli et al. (2006) at sizes that run in seconds,
and its scheduler path (rule agents) agrees with its numpy fast path."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_model

from agentsim.errors import ParameterError
from agentsim.games.naming import NamingSituation
from agentsim.games.theory import MinimalNamingGame, per_round, production_shares, run_to_consensus, simulate, speak, success_curve


def fitted_exponent(sizes: list[int], values: list[float]) -> float:
    return float(np.polyfit(np.log(sizes), np.log(values), 1)[0])


def test_success_curve_rises_from_rare_success_to_agreement() -> None:
    curve = success_curve(24, 40, runs=400, seed=3, pool_size=10)
    assert curve.shape == (40,)
    assert curve[0] < 0.15  # first meetings rarely share a word
    assert curve[-1] > 0.95  # the population has agreed
    assert np.all(np.diff(curve) > -0.03)  # rises, up to noise


def test_a_small_pool_converges_faster_than_new_words() -> None:
    pooled = success_curve(24, 20, runs=300, seed=1, pool_size=2)
    canonical = success_curve(24, 20, runs=300, seed=1)
    assert pooled[:10].mean() > canonical[:10].mean() + 0.1


def test_success_curve_is_a_function_of_its_seed() -> None:
    assert np.array_equal(success_curve(10, 5, runs=20, seed=9), success_curve(10, 5, runs=20, seed=9))
    assert not np.array_equal(success_curve(10, 5, runs=20, seed=9), success_curve(10, 5, runs=20, seed=8))


def test_mean_field_scaling_exponents_are_one_and_a_half() -> None:
    """Baronchelli et al. 2006: t_conv, the peak number of words and its time all grow like
    N^1.5. At N = 64..512 the peak and its time are already on the law (±0.12); t_conv
    approaches it from below (local exponent ≈ 1.3 here, 1.48 at N = 3000-10000)."""
    sizes = [64, 128, 256, 512]
    runs = [[run_to_consensus(size, seed=1000 * size + r, max_interactions=10**7) for r in range(40)] for size in sizes]
    t_conv = [np.mean([run.t_conv for run in group]) for group in runs]
    peak = [np.mean([run.peak_words for run in group]) for group in runs]
    t_peak = [np.mean([run.t_peak for run in group]) for group in runs]
    assert all(run.t_conv > 0 for group in runs for run in group)
    assert abs(fitted_exponent(sizes, peak) - 1.5) < 0.12
    assert abs(fitted_exponent(sizes, t_peak) - 1.5) < 0.12
    assert 1.15 < fitted_exponent(sizes, t_conv) < 1.6


def test_the_scheduler_path_agrees_with_the_fast_path() -> None:
    """Rule agents in the scheduler and the numpy arrays: same dynamics, so the same mean
    success per population round, convergence time and peak inventory, within noise."""
    size, rounds = 20, 60
    models = [run_model(MinimalNamingGame(agents=size, pool_size=10, stop_at="none", max_rounds=rounds), seed=seed)
              for seed in range(40)]
    scheduled_curve = np.mean([[model.metrics.rounds[r].successes / model.metrics.rounds[r].interactions
                                for r in range(rounds)] for model in models], axis=0)
    fast = simulate(size, rounds * size // 2, runs=2000, seed=5, pool_size=10)
    fast_curve = per_round(fast.success.mean(axis=1), size, rounds)
    assert np.abs(scheduled_curve - fast_curve).max() < 0.1
    converged = [model.metrics.converged_t for model in models if model.metrics.converged_t is not None]
    fast_converged = fast.convergence[fast.convergence > 0]
    assert abs(len(converged) / len(models) - fast_converged.size / fast.convergence.size) < 0.1
    scheduled_t_conv, fast_t_conv = np.mean(converged), fast_converged.mean()
    assert abs(scheduled_t_conv / fast_t_conv - 1) < 0.2
    scheduled_peak = np.mean([model.metrics.peak_words for model in models])
    assert abs(scheduled_peak / fast.total_words.max(axis=0).mean() - 1) < 0.1


def test_the_sequential_kernel_agrees_with_the_array_path() -> None:
    """The two fast paths (a loop for one large run, arrays for many small ones) have the
    same mean convergence time and peak inventory at N = 20."""
    sequential = [run_to_consensus(20, seed=seed, max_interactions=20_000) for seed in range(400)]
    arrays = simulate(20, 3000, runs=400, seed=11, stop_at_consensus=True)
    assert (arrays.convergence > 0).all() and all(run.t_conv > 0 for run in sequential)
    assert abs(np.mean([run.t_conv for run in sequential]) / arrays.convergence.mean() - 1) < 0.1
    assert abs(np.mean([run.peak_words for run in sequential]) / arrays.total_words.max(axis=0).mean() - 1) < 0.05


def test_the_scheduler_run_stops_at_global_consensus_and_records_rule_agents(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from helpers import run_experiment

    from agentsim.store import Store

    (summary,) = run_experiment(MinimalNamingGame(agents=12, invention="new"), tmp_path / "out", seed=2)
    assert summary["stop_reason"] == "consensus"
    assert summary["final_total_words"] == 12 and summary["final_distinct_words"] == 1
    store = Store(tmp_path / "out")
    kinds = set(store.rows("SELECT DISTINCT kind, model FROM agents"))
    assert kinds == {("rule", "rule:minimal-naming")}
    (count,) = next(iter(store.rows("SELECT COUNT(*) FROM encounters")))
    assert count == summary["converged_t"] == summary["interactions"]
    store.close()


def test_a_run_that_stops_at_consensus_reports_it_with_full_agreement(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Agreement is read off the inventories: the theory's convergence (every inventory the
    same single word) is the consensus the summary reports, on that word, with agreement 1.
    Counted by latest names, hearers that had collapsed without speaking since made it 0.92
    and the summary said `consensus: false` beside `stop_reason: consensus`."""
    from helpers import run_experiment

    for seed in range(4):
        (summary,) = run_experiment(MinimalNamingGame(agents=24, pool_size=10), tmp_path / f"out{seed}", seed=seed)
        assert summary["stop_reason"] == "consensus"
        assert summary["consensus"] is True and summary["final_agreement"] == 1.0
        assert summary["consensus_name"] == summary["leading_name"]
        assert summary["consensus_round"] <= summary["rounds"]


def test_the_speaker_invents_only_when_its_inventory_is_empty() -> None:
    assert speak(NamingSituation(("A", "B", "C"), ()), 0.5) == "B"
    assert speak(NamingSituation(("A", "B", "C"), ("C", "A")), 0.0) == "C"
    assert speak(NamingSituation(("A", "B", "C"), ("C", "A")), 0.99) == "A"


def test_an_individual_bias_becomes_a_collective_one() -> None:
    """Flint Ashery et al. Fig. S3 (W = 2, N = 24): with no bias both names keep half the
    productions; with a 70% bias the favoured name starts at 70% and takes over."""
    fair = production_shares(24, 25, runs=1000, seed=2, weights=np.array([0.5, 0.5]))
    biased = production_shares(24, 25, runs=1000, seed=2, weights=np.array([0.3, 0.7]))
    assert np.abs(fair[:, 1] - 0.5).max() < 0.04
    assert abs(biased[0, 1] - 0.7) < 0.04 and biased[-1, 1] > 0.93
    assert np.allclose(biased.sum(axis=1), 1)


def test_the_fast_path_keeps_its_books() -> None:
    run = simulate(30, 3000, runs=5, seed=4)
    final = run.final_inventories
    assert np.array_equal(run.total_words[-1], final.sum(axis=(1, 2)))
    assert np.array_equal(run.distinct_words[-1], final.any(axis=1).sum(axis=1))


@pytest.mark.parametrize("arguments", [dict(n_agents=1, interactions=10), dict(n_agents=5, interactions=0)])
def test_impossible_sizes_are_refused(arguments: dict[str, int]) -> None:
    with pytest.raises(ParameterError):
        simulate(runs=1, seed=0, **arguments)
