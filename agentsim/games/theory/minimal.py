"""The minimal naming game, vectorised over independent runs with numpy.

Baronchelli, Felici, Loreto, Caglioti, Steels, J. Stat. Mech. (2006) P06014: every agent keeps
an inventory of words, initially empty. At each interaction a random speaker utters a random
word of its inventory (inventing one when the inventory is empty) to a random hearer (a random
neighbour on a graph). If the hearer knows the word, both collapse their inventories to it
(success); otherwise the hearer adds it (failure).

This module is the fast path: the same dynamics as the rule policy that runs in agentsim's
scheduler (`agentsim.games.theory`), written so that thousands of runs, or populations of
thousands of agents, take seconds. Inventories are a boolean array runs × agents × words;
one interaction is a handful of array operations over all runs at once.

It also runs the binary naming game with a committed minority (Xie et al., PRE 84, 011130,
2011): start every agent with a given inventory and freeze the committed ones, who keep
uttering their word and never change.

Time is counted in interactions; a population round is N/2 interactions (every agent takes
part once on average), the unit of the LLM naming game's figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from ...errors import ParameterError


@dataclass(frozen=True, kw_only=True)
class Neighbourhoods:
    """A graph in compressed sparse row form, for drawing a random neighbour of many speakers
    at once: the neighbours of node i are `targets[starts[i]:starts[i] + degrees[i]]`."""

    starts: np.ndarray
    degrees: np.ndarray
    targets: np.ndarray

    @classmethod
    def of(cls, graph: nx.Graph) -> Neighbourhoods:
        size = graph.number_of_nodes()
        if sorted(graph.nodes) != list(range(size)):
            raise ParameterError("the graph's nodes must be 0..N-1")
        lists = [sorted(graph.neighbors(node)) for node in range(size)]
        degrees = np.array([len(neighbours) for neighbours in lists], dtype=np.int64)
        if (degrees == 0).any():
            raise ParameterError("every agent needs a neighbour: the graph has isolated nodes")
        starts = np.concatenate([[0], np.cumsum(degrees)[:-1]]).astype(np.int64)
        targets = np.array([n for neighbours in lists for n in neighbours], dtype=np.int64)
        return cls(starts=starts, degrees=degrees, targets=targets)

    def draw(self, speakers: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        offsets = np.floor(rng.random(speakers.shape) * self.degrees[speakers]).astype(np.int64)
        return self.targets[self.starts[speakers] + offsets]


@dataclass(frozen=True, kw_only=True)
class Trajectory:
    """What a batch of runs did, per interaction t (rows) and run (columns) where 2-D.

    `success[t, r]`: the interaction succeeded. `total_words[t, r]`: words in all inventories
    after it (N_w in Baronchelli 2006). `distinct_words[t, r]`: different words in the
    population after it (N_d). `convergence[r]`: the number of interactions until every agent
    held the same single word (-1 if that did not happen within the budget).
    `final_inventories[r, i, w]`: whether agent i knows word w at the end. `uttered[t, r]`:
    the word spoken."""

    success: np.ndarray
    total_words: np.ndarray
    distinct_words: np.ndarray
    convergence: np.ndarray
    final_inventories: np.ndarray
    uttered: np.ndarray


def simulate(
    n_agents: int,
    interactions: int,
    *,
    runs: int,
    seed: int,
    pool_size: int | None = None,
    graph: nx.Graph | None = None,
    initial: np.ndarray | None = None,
    committed: np.ndarray | None = None,
    stop_at_consensus: bool = False,
    weights: np.ndarray | None = None,
) -> Trajectory:
    """Run `runs` independent minimal naming games of `n_agents` for `interactions` steps.

    `pool_size` W: an agent with an empty inventory invents a word drawn uniformly from a pool
    of W words (the constraint of Flint Ashery et al. 2025's theory line); None: every
    invention is a brand-new word (the canonical model). `graph`: hearers are random
    neighbours of the speaker (speaker drawn first, uniformly); None: the complete graph.
    `initial[i, w]`: agent i starts knowing word w (words 0..W-1, shared by all runs).
    `committed[i]`: agent i never changes its inventory. `stop_at_consensus`: end early once
    every run has converged; the arrays then hold only the interactions simulated.
    `weights` (one per pool word): an individual bias, as in Flint Ashery et al.'s Fig. S3: a
    speaker picks among the words it knows, and invents, with probability proportional to
    them (uniform when None).
    """
    _check(n_agents, interactions, runs, pool_size, initial, committed)
    rng = np.random.default_rng(seed)
    known_at_start = initial.shape[1] if initial is not None else 0
    # Each agent invents at most once (an inventory, once non-empty, never empties), so N
    # fresh words beyond the initial ones always suffice.
    words = pool_size if pool_size is not None else n_agents + known_at_start
    inventories = np.zeros((runs, n_agents, words), dtype=bool)
    fresh = np.zeros(runs, dtype=np.int64)
    if initial is not None:
        inventories[:, :, : initial.shape[1]] = initial
        fresh[:] = initial.shape[1]
    frozen = np.zeros(n_agents, dtype=bool) if committed is None else np.asarray(committed, dtype=bool)
    neighbourhoods = Neighbourhoods.of(graph) if graph is not None else None

    success = np.zeros((interactions, runs), dtype=bool)
    uttered_words = np.zeros((interactions, runs), dtype=np.int32)
    bias = _bias(weights, pool_size)
    total_words = np.zeros((interactions, runs), dtype=np.int64)
    distinct_words = np.zeros((interactions, runs), dtype=np.int64)
    convergence = np.full(runs, -1, dtype=np.int64)
    word_counts = inventories.sum(axis=1)  # runs × words: how many agents know each word
    total = word_counts.sum(axis=1)
    all_runs = np.arange(runs)
    done = interactions
    for t in range(interactions):
        speakers = rng.integers(n_agents, size=runs)
        if neighbourhoods is None:
            hearers = (speakers + rng.integers(1, n_agents, size=runs)) % n_agents
        else:
            hearers = neighbourhoods.draw(speakers, rng)
        spoken = inventories[all_runs, speakers]
        empty = ~spoken.any(axis=1)
        if empty.any():
            inventors = all_runs[empty]
            if pool_size is None:
                invented = fresh[empty]
                fresh[empty] += 1
            else:
                invented = (rng.integers(pool_size, size=inventors.size) if bias is None
                            else rng.choice(pool_size, size=inventors.size, p=bias / bias.sum()))
            inventories[inventors, speakers[empty], invented] = True
            spoken[empty, invented] = True
            word_counts[inventors, invented] += 1
            total[empty] += 1
        draws = rng.random(spoken.shape)
        if bias is not None:  # the largest u^(1/w) is a draw proportional to w
            draws = draws ** (1.0 / bias)
        keys = np.where(spoken, draws, -1.0)
        uttered = keys.argmax(axis=1)
        hit = inventories[all_runs, hearers, uttered]
        success[t] = hit
        uttered_words[t] = uttered

        adding = all_runs[~hit & ~frozen[hearers]]
        if adding.size:
            inventories[adding, hearers[adding], uttered[adding]] = True
            word_counts[adding, uttered[adding]] += 1
            total[adding] += 1
        for role in (speakers, hearers):
            collapsing = all_runs[hit & ~frozen[role]]
            if collapsing.size:
                agents = role[collapsing]
                known = inventories[collapsing, agents]
                word_counts[collapsing] -= known
                total[collapsing] -= known.sum(axis=1)
                inventories[collapsing, agents] = False
                inventories[collapsing, agents, uttered[collapsing]] = True
                word_counts[collapsing, uttered[collapsing]] += 1
                total[collapsing] += 1
        total_words[t] = total
        distinct = (word_counts > 0).sum(axis=1)
        distinct_words[t] = distinct
        agreed = (total == n_agents) & (distinct == 1) & (convergence < 0)
        convergence[agreed] = t + 1
        if stop_at_consensus and (convergence >= 0).all():
            done = t + 1
            break
    return Trajectory(
        success=success[:done],
        total_words=total_words[:done],
        distinct_words=distinct_words[:done],
        convergence=convergence,
        final_inventories=inventories,
        uttered=uttered_words[:done],
    )


def success_curve(
    n_agents: int,
    population_rounds: int,
    *,
    runs: int,
    seed: int,
    pool_size: int | None = None,
    graph: nx.Graph | None = None,
) -> np.ndarray:
    """The mean success rate in each population round (N/2 interactions) over `runs` runs:
    the theory line of the naming-game paper's Fig. 1A (there with N=24, W=10: pass
    `pool_size=10`; the default is the canonical model, where inventions are always new)."""
    interactions = round_boundaries(n_agents, population_rounds)[-1]
    trajectory = simulate(n_agents, int(interactions), runs=runs, seed=seed, pool_size=pool_size, graph=graph)
    return per_round(trajectory.success.mean(axis=1), n_agents, population_rounds)


def production_shares(
    n_agents: int,
    population_rounds: int,
    *,
    runs: int,
    seed: int,
    weights: np.ndarray,
) -> np.ndarray:
    """Each pool word's share of the utterances in each population round (rows), over `runs`
    runs, for a pool of len(weights) words chosen with those weights: Flint Ashery et al.
    2025's Fig. S3 (W = 2, N = 24, weights (1 - bias, bias))."""
    weights = np.asarray(weights, dtype=float)
    interactions = int(round_boundaries(n_agents, population_rounds)[-1])
    trajectory = simulate(n_agents, interactions, runs=runs, seed=seed, pool_size=weights.size, weights=weights)
    spoken = trajectory.uttered[:, :, None] == np.arange(weights.size)
    return per_round(spoken.mean(axis=1), n_agents, population_rounds)


def round_boundaries(n_agents: int, population_rounds: int) -> np.ndarray:
    """Interaction index at which each population round starts, plus the end of the last:
    round k covers interactions floor(k N / 2) .. floor((k + 1) N / 2) - 1."""
    return (np.arange(population_rounds + 1) * n_agents) // 2


def per_round(series: np.ndarray, n_agents: int, population_rounds: int) -> np.ndarray:
    """The mean of a per-interaction series over each population round."""
    bounds = round_boundaries(n_agents, population_rounds)
    sums = np.add.reduceat(series[: bounds[-1]], bounds[:-1], axis=0)
    return sums / np.diff(bounds).reshape((-1,) + (1,) * (series.ndim - 1))


def _bias(weights: np.ndarray | None, pool_size: int | None) -> np.ndarray | None:
    if weights is None:
        return None
    bias = np.asarray(weights, dtype=float)
    if pool_size is None or bias.shape != (pool_size,) or (bias <= 0).any():
        raise ParameterError("weights need a pool_size and one positive weight per pool word")
    return bias


def _check(
    n_agents: int,
    interactions: int,
    runs: int,
    pool_size: int | None,
    initial: np.ndarray | None,
    committed: np.ndarray | None,
) -> None:
    if n_agents < 2:
        raise ParameterError(f"the naming game needs at least 2 agents (got {n_agents})")
    if interactions < 1 or runs < 1:
        raise ParameterError(f"interactions and runs must be at least 1 (got {interactions}, {runs})")
    if pool_size is not None and pool_size < 1:
        raise ParameterError(f"pool_size must be at least 1 or None (got {pool_size})")
    if initial is not None:
        if initial.ndim != 2 or initial.shape[0] != n_agents:
            raise ParameterError("initial inventories must be an agents × words boolean array")
        if pool_size is not None and initial.shape[1] > pool_size:
            raise ParameterError("initial inventories use more words than pool_size")
    if committed is not None and len(committed) != n_agents:
        raise ParameterError("committed must flag each agent")


@dataclass(frozen=True, kw_only=True)
class Convergence:
    """One run's scaling observables (Baronchelli et al. 2006): interactions to global
    consensus (`t_conv`, -1 if not reached), the peak total number of words and when."""

    t_conv: int
    peak_words: int
    t_peak: int


def run_to_consensus(
    n_agents: int,
    *,
    seed: int,
    max_interactions: int,
    graph: nx.Graph | None = None,
    initial: np.ndarray | None = None,
    committed: np.ndarray | None = None,
    block: int = 65_536,
) -> Convergence:
    """One minimal naming game (new words on invention) until global consensus.

    A single large population gains nothing from array operations (each interaction touches
    two agents), so this is a plain loop over per-agent word lists, fed by random numbers
    drawn from numpy in blocks: under two microseconds per interaction, which makes the
    published sizes (N in the thousands, N^1.5 interactions; rings with N^3) reachable.
    `initial` and `committed` as in `simulate` (Xie et al.'s committed minority).
    """
    _check(n_agents, max_interactions, 1, None, initial, committed)
    rng = np.random.default_rng(seed)
    if initial is None:
        inventories: list[list[int]] = [[] for _ in range(n_agents)]
        fresh = 0
    else:
        inventories = [np.flatnonzero(row).tolist() for row in initial]
        fresh = initial.shape[1]
    frozen = [False] * n_agents if committed is None else [bool(flag) for flag in committed]
    if graph is not None:
        hoods = Neighbourhoods.of(graph)
        starts, degrees, targets = hoods.starts.tolist(), hoods.degrees.tolist(), hoods.targets.tolist()
    known = [0] * (n_agents + fresh + 1)  # agents knowing each word
    for inventory in inventories:
        for word in inventory:
            known[word] += 1
    total = sum(known)
    distinct = sum(count > 0 for count in known)
    peak, t_peak = total, 0
    if total == n_agents and distinct == 1:
        return Convergence(t_conv=0, peak_words=peak, t_peak=0)
    t = 0
    while t < max_interactions:
        count = min(block, max_interactions - t)
        speakers = rng.integers(n_agents, size=count).tolist()
        partners = rng.random(count).tolist()
        picks = rng.random(count).tolist()
        for speaker, partner, pick in zip(speakers, partners, picks):
            t += 1
            if graph is None:
                hearer = int(partner * (n_agents - 1))
                hearer += hearer >= speaker
            else:
                hearer = targets[starts[speaker] + int(partner * degrees[speaker])]
            words = inventories[speaker]
            if not words:
                words.append(fresh)
                known[fresh] = 1
                fresh += 1
                total += 1
                distinct += 1
            word = words[int(pick * len(words))]
            heard = inventories[hearer]
            if word in heard:
                for inventory, agent in ((words, speaker), (heard, hearer)):
                    if frozen[agent]:
                        continue
                    for other in inventory:
                        known[other] -= 1
                        distinct -= known[other] == 0
                    total -= len(inventory) - 1
                    inventory[:] = [word]
                    known[word] += 1
                    distinct += known[word] == 1
                if total == n_agents and distinct == 1:
                    return Convergence(t_conv=t, peak_words=peak, t_peak=t_peak)
            elif not frozen[hearer]:
                heard.append(word)
                known[word] += 1
                total += 1
                if total > peak:
                    peak, t_peak = total, t
    return Convergence(t_conv=-1, peak_words=peak, t_peak=t_peak)
