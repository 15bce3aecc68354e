"""The best-response naming game with a memory of length M, and its critical mass.

Centola, Becker, Brackbill, Baronchelli, "Experimental evidence for tipping points in social
convention", Science 360, 1116-1119 (2018): two agents meet and each names a name at once
(the LLM naming game's protocol); an agent remembers the names its last M partners used and
plays the one most of them used (the best response to that memory under the coordination
payoff), breaking ties at random. A committed minority always plays the alternative. From a
population in consensus, the alternative takes over only when the committed fraction passes a
critical mass that grows with M: about 25% at the paper's M = 12.

Three views of the same model:
- `BestResponseNamingGame`: rule agents in agentsim's scheduler and store (a NamingGame whose
  uncommitted agents use `best_response` instead of a language model);
- `flip_shares`: the same dynamics vectorised over runs with numpy, for sweeps;
- `mean_field_critical_mass`: the infinite-population fixed point, the published reference.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ...errors import ParameterError
from ...model import PopulationModel
from ...parts import StandInPart
from ...policies import Policy, RulePolicy
from ..naming.game import NamingGame, NamingSituation


def best_response(situation: NamingSituation, unit: float) -> str:
    """The name the most remembered partners played (ties: uniformly among the tied, in the
    pool's order); with an empty memory, a uniformly random option."""
    partners = Counter(partner for _, partner, _ in situation.memory if partner is not None)
    if not partners:
        return situation.options[int(unit * len(situation.options))]
    top = max(partners.values())
    tied = sorted(name for name, count in partners.items() if count == top)
    return tied[int(unit * len(tied))]


class BestResponseNamingGame(NamingGame):
    """The naming game with best-response rule agents of memory M = `memory_length`."""

    name = "best_response_naming_game"
    rule_agents = True

    def agent_policy(self, model: PopulationModel, index: int) -> Policy:
        return RulePolicy(f"rule:best-response-M{self.params.memory_length}", best_response)

    def standin_part(self) -> StandInPart:
        return StandInPart()  # rule agents ask no stand-in


def flip_shares(
    n_agents: int,
    committed: int,
    *,
    memory: int,
    population_rounds: int,
    runs: int,
    seed: int,
) -> np.ndarray:
    """The share of uncommitted agents whose memory favours the alternative after each
    population round (rows) in each run (columns), starting from consensus on the old name
    (every memory full of it) with `committed` agents always playing the alternative.

    Interactions are sequential random pairs, N/2 per population round, as in the scheduler
    with one encounter in flight."""
    if not 0 <= committed < n_agents or n_agents < 2 or memory < 1:
        raise ParameterError(f"need 2 <= agents, 0 <= committed < agents and memory >= 1 "
                             f"(got {n_agents}, {committed}, {memory})")
    rng = np.random.default_rng(seed)
    is_committed = np.zeros(n_agents, dtype=bool)
    is_committed[:committed] = True
    remembered = np.zeros((runs, n_agents, memory), dtype=bool)  # True: partner played the alternative
    alternative_count = np.zeros((runs, n_agents), dtype=np.int64)
    cursor = np.zeros((runs, n_agents), dtype=np.int64)  # ring-buffer position of the oldest entry
    all_runs = np.arange(runs)
    per_round = n_agents // 2 or 1
    shares = np.zeros((population_rounds, runs))
    for round_ in range(population_rounds):
        for _ in range(per_round):
            first = rng.integers(n_agents, size=runs)
            second = (first + rng.integers(1, n_agents, size=runs)) % n_agents
            ties = rng.random((2, runs)) < 0.5
            plays = []
            for agent, tie in zip((first, second), ties):
                count = alternative_count[all_runs, agent]
                plays.append(is_committed[agent] | (2 * count > memory) | ((2 * count == memory) & tie))
            for agent, heard in ((first, plays[1]), (second, plays[0])):
                slot = cursor[all_runs, agent]
                alternative_count[all_runs, agent] += heard.astype(np.int64) - remembered[all_runs, agent, slot]
                remembered[all_runs, agent, slot] = heard
                cursor[all_runs, agent] = (slot + 1) % memory
        favoured = 2 * alternative_count[:, ~is_committed] > memory
        shares[round_] = favoured.mean(axis=1)
    return shares


def mean_field_critical_mass(memory: int, *, tolerance: float = 1e-4) -> float:
    """The smallest committed fraction p for which the infinite population leaves consensus on
    the old name: the fixed point x = B(p + (1 - p) x) of the share x of uncommitted agents
    playing the alternative, where B(q) is the chance that a memory of M partners, each
    playing it with probability q, holds a majority for it (half of the ties), stops existing
    near x = 0. Found by bisection on p, iterating the map from x = 0."""
    if memory < 1:
        raise ParameterError(f"memory must be at least 1 (got {memory})")
    from scipy.stats import binom  # here: every command line start imports the families (agentsim.games.discover)

    counts = np.arange(memory + 1)
    weight = np.where(2 * counts > memory, 1.0, np.where(2 * counts == memory, 0.5, 0.0))

    def takes_over(p: float) -> bool:
        x = 0.0
        for _ in range(20_000):
            new = float(weight @ binom.pmf(counts, memory, p + (1 - p) * x))
            if abs(new - x) < 1e-12:
                break
            x = new
        return x > 0.5

    low, high = 0.0, 0.5
    while high - low > tolerance:
        middle = (low + high) / 2
        low, high = (low, middle) if takes_over(middle) else (middle, high)
    return (low + high) / 2
