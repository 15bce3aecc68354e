"""The theory baselines at published sizes, against their published results.

1. Minimal naming game, mean field (Baronchelli et al., J. Stat. Mech. 2006, P06014):
   convergence time, peak number of words and time of the peak all ∝ N^1.5. Fits the
   exponents over N = 1000, 3000, 10000 (fast sequential kernel).
2. Binary naming game with committed minority (Xie et al., PRE 84, 011130, 2011): the
   rate equations' critical fraction (published 0.0979) and the stochastic tipping point at
   N = 2000: the p at which half the runs reach consensus on A within 100 time units
   (interpolated).
3. Best-response naming game with memory M (Centola et al., Science 360, 1116, 2018): the
   mean-field critical mass for M = 4..20 (published ≈ 0.25 at M = 12) and the tipping point of
   a population of N = 20 with M = 12 within 60 population rounds.
4. The same dynamics through agentsim's scheduler (rule agents) and through the numpy fast
   path: interactions per second of each, at N = 24.

    python benchmarks/theory.py [--quick]

Prints figures; asserts nothing. `--quick` uses smaller sizes (a minute on one core).
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from agentsim import event_loop
from agentsim.games.theory import (
    MinimalNamingGame,
    consensus_times,
    flip_shares,
    mean_field_critical_fraction,
    mean_field_critical_mass,
    run_to_consensus,
    simulate,
)
from agentsim.llm.standin import StandInModel
from agentsim.model import BackendShare, PopulationModel


def fitted_exponent(sizes: list[int], values: list[float]) -> float:
    return float(np.polyfit(np.log(sizes), np.log(values), 1)[0])


def half_crossing(points: list[tuple[float, float]]) -> float | None:
    """Where the share of runs that flipped crosses one half, interpolated linearly between
    the sizes on either side of it."""
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if y0 < 0.5 <= y1:
            return x0 + (0.5 - y0) * (x1 - x0) / (y1 - y0)
    return None


def minimal_scaling(sizes: list[int], runs: int) -> None:
    print(f"1. minimal naming game, mean field, {runs} runs per N (Baronchelli et al. 2006: all exponents 1.5)")
    print(f"   {'N':>6} {'t_conv/N^1.5':>13} {'N_w^max/N^1.5':>14} {'t_max/N^1.5':>12} {'seconds':>8}")
    t_conv, peak, t_peak = [], [], []
    for size in sizes:
        started = time.perf_counter()
        results = [run_to_consensus(size, seed=7919 * size + r, max_interactions=50 * int(size**1.5)) for r in range(runs)]
        t_conv.append(np.mean([r.t_conv for r in results if r.t_conv > 0]))
        peak.append(np.mean([r.peak_words for r in results]))
        t_peak.append(np.mean([r.t_peak for r in results]))
        scale = size**1.5
        print(f"   {size:>6} {t_conv[-1] / scale:>13.3f} {peak[-1] / scale:>14.3f} {t_peak[-1] / scale:>12.3f}"
              f" {time.perf_counter() - started:>8.1f}")
    print(f"   fitted exponents: t_conv {fitted_exponent(sizes, t_conv):.3f}, N_w^max {fitted_exponent(sizes, peak):.3f},"
          f" t_max {fitted_exponent(sizes, t_peak):.3f} (published 1.5, 1.5, 1.5)")


def xie_tipping(size: int, fractions: list[float], runs: int, horizon: float) -> None:
    print("2. binary naming game with committed minority (Xie et al. 2011: p_c = 0.0979)")
    print(f"   rate equations: p_c = {mean_field_critical_fraction():.4f}")
    points = []
    for fraction in fractions:
        times = consensus_times(size, fraction, max_time=horizon, runs=runs, seed=int(fraction * 1e4))
        reached = float(np.isfinite(times).mean())
        median = f"{np.nanmedian(times):6.1f}" if reached else "     -"
        print(f"   N={size} p={fraction:.3f}: consensus on A within {horizon:g} in {reached:4.0%} of runs, median time {median}")
        points.append((fraction, reached))
    tipping = half_crossing(points)
    shown = "not bracketed" if tipping is None else f"{tipping:.4f}"
    print(f"   stochastic tipping point (half the runs flip, interpolated) at N={size}: {shown} (published mean field 0.0979)")


def centola_tipping(size: int, memory: int, rounds: int, runs: int) -> None:
    print("3. best-response naming game with memory M (Centola et al. 2018: ≈ 0.25 at M = 12)")
    critical = {m: mean_field_critical_mass(m) for m in (4, 8, 12, 16, 20)}
    print("   mean field: " + ", ".join(f"M={m}: {value:.3f}" for m, value in critical.items()))
    points = []
    for committed in range(size // 2):
        shares = flip_shares(size, committed, memory=memory, population_rounds=rounds, runs=runs, seed=committed)[-1]
        flipped = float((shares > 0.9).mean())
        if 0 < flipped < 1 or committed / size in (0.2, 0.25, 0.3):
            print(f"   N={size} M={memory} committed {committed} ({committed / size:.0%}): flipped in {flipped:4.0%} of runs")
        points.append((committed / size, flipped))
    tipping = half_crossing(points)
    shown = "not bracketed" if tipping is None else f"{tipping:.3f}"
    print(f"   tipping point (half the runs flip within {rounds} rounds, interpolated) at N={size}, M={memory}: {shown}"
          " (published ≈ 0.25)")


def scheduler_speed(size: int, rounds: int, runs: int) -> None:
    print(f"4. speed, N={size}, {rounds} population rounds")
    started = time.perf_counter()
    interactions = 0
    for seed in range(runs):
        game = MinimalNamingGame(agents=size, pool_size=10, stop_at="none", max_rounds=rounds).for_experiment(seed)
        model = PopulationModel(game, seed=seed, backends=[BackendShare(StandInModel([]))])
        event_loop.run(model.arun())
        interactions += model.completed
    elapsed = time.perf_counter() - started
    print(f"   scheduler (rule agents): {interactions / elapsed:12,.0f} interactions/s")
    started = time.perf_counter()
    many = 10_000
    simulate(size, rounds * size // 2, runs=many, seed=1, pool_size=10)
    print(f"   numpy fast path, {many} runs at once: {many * rounds * size // 2 / (time.perf_counter() - started):12,.0f} interactions/s")
    started = time.perf_counter()
    done = sum(max(run_to_consensus(1000, seed=s, max_interactions=10**7).t_conv, 0) for s in range(5))
    print(f"   sequential kernel, N=1000: {done / (time.perf_counter() - started):12,.0f} interactions/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, about a minute")
    quick = parser.parse_args().quick
    minimal_scaling([100, 300, 1000] if quick else [1000, 3000, 10000], runs=10 if quick else 16)
    xie_tipping(200 if quick else 2000, [0.08, 0.09, 0.10, 0.11, 0.12], runs=16 if quick else 32, horizon=100)
    centola_tipping(20, 12, 60, runs=100 if quick else 400)
    scheduler_speed(24, 40, runs=20)


if __name__ == "__main__":
    main()
