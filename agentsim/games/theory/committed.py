"""The binary naming game with a committed minority, and its critical fraction.

Xie, Sreenivasan, Korniss, Zhang, Lim, Szymanski, "Social consensus through the influence of
committed minorities", PRE 84, 011130 (2011). Two words, A and B. Everyone starts with B
only; a fraction p of agents is committed to A: they utter only A and never change. The rest
play the minimal naming game. In the mean field, for p below p_c ≈ 0.0979 the population
stays in a mixed state dominated by B for a time growing exponentially with N; above p_c it
reaches consensus on A in a time growing like ln N.

- `mean_field_critical_fraction`: p_c from Xie et al.'s rate equations (scipy);
- `consensus_times`: stochastic runs of the fast path (`minimal_naming.run_to_consensus`);
- the scheduler path is `MinimalNamingGame(names=("A", "B"), majority_name="B",
  committed_name="A", committed_fraction=p)`.

Time is counted as Xie et al. count it: one unit is N interactions (two population rounds).
"""

from __future__ import annotations

import numpy as np

from ...errors import ParameterError
from .minimal import run_to_consensus


def rate_equations(p: float):
    """d(n_A, n_B)/dt for the uncommitted densities (n_AB = 1 - p - n_A - n_B), Xie et al.
    2011 eq. (1): n_A' = -n_A n_B + n_AB^2 + n_AB n_A + 3/2 p n_AB, and symmetrically for B
    with the committed agents only ever uttering A."""

    def derivative(_: float, state: np.ndarray) -> list[float]:
        a, b = state
        mixed = 1.0 - p - a - b
        return [-a * b + mixed**2 + mixed * a + 1.5 * p * mixed,
                -a * b + mixed**2 + mixed * b - p * b]

    return derivative


def reaches_consensus(p: float, *, horizon: float = 2_000.0) -> bool:
    """Whether the mean-field population that starts all-B ends with (almost) every
    uncommitted agent holding only A."""
    from scipy.integrate import solve_ivp  # here: every command line start imports the families

    solution = solve_ivp(rate_equations(p), (0.0, horizon), [0.0, 1.0 - p], rtol=1e-8, atol=1e-10)
    return bool(solution.y[0, -1] > 0.5 * (1.0 - p))


def mean_field_critical_fraction(*, tolerance: float = 1e-4) -> float:
    """p_c, by bisection on whether the rate equations leave the B-dominated state."""
    low, high = 0.0, 0.5
    while high - low > tolerance:
        middle = (low + high) / 2
        low, high = (low, middle) if reaches_consensus(middle) else (middle, high)
    return (low + high) / 2


def consensus_times(
    n_agents: int,
    committed_fraction: float,
    *,
    max_time: float,
    runs: int,
    seed: int,
) -> np.ndarray:
    """Each run's time to consensus on A (in units of N interactions), NaN where it did not
    happen within `max_time`. round(p N) agents are committed."""
    committed = round(committed_fraction * n_agents)
    if not 0 < committed < n_agents:
        raise ParameterError(f"committed_fraction {committed_fraction} gives {committed} of {n_agents} committed; "
                             f"need at least one committed and one uncommitted agent")
    initial = np.zeros((n_agents, 2), dtype=bool)  # word 0 is A, word 1 is B
    initial[:committed, 0] = True
    initial[committed:, 1] = True
    flags = np.arange(n_agents) < committed
    seeds = np.random.SeedSequence(seed).generate_state(runs)
    limit = int(max_time * n_agents)
    times = np.array([run_to_consensus(n_agents, seed=int(run_seed), max_interactions=limit, initial=initial,
                                       committed=flags).t_conv for run_seed in seeds], dtype=float)
    times[times < 0] = np.nan
    return times / n_agents
