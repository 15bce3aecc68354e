"""How the minimal naming game's convergence time grows with N on each interaction network.

The theory baseline (canonical minimal naming game, speaker drawn uniformly, hearer a random
neighbour) on the graph families of scenarios/network_topology.py, mean degree 4 (the ring
also with degree 2, the 1-D lattice of the literature). Fits t_conv ∝ N^a per family and
prints a against what is known:

    complete graph          1.5   Baronchelli et al., J. Stat. Mech. (2006) P06014
    ring (1-D lattice)      3     Baronchelli, Dall'Asta, Barrat, Loreto, PRE 73, 015102 (2006)
    2-D lattice             2     same paper: t_conv ∝ N^(1 + 2/d)
    small world             ≈1.4  Dall'Asta, Baronchelli, Barrat, Loreto, EPL 73, 969 (2006)
    random / scale-free     ≈1.4-1.5  Dall'Asta et al., PRE 74, 036105 (2006)

    python benchmarks/networks.py [--quick] [--runs 10]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import time

import networkx as nx
import numpy as np

from agentsim.games.naming import connected_graph, family_topology
from agentsim.games.theory import run_to_consensus

KNOWN = {"complete": "1.5", "ring-2": "3", "ring": "3", "lattice": "2", "small-world": "~1.4",
         "scale-free": "~1.4-1.5", "erdos-renyi": "~1.4-1.5"}


def graph_for(family: str, size: int, seed: int) -> nx.Graph:
    if family == "ring-2":
        return nx.cycle_graph(size)
    return connected_graph(family_topology(family, size, mean_degree=4), size, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (under a minute)")
    parser.add_argument("--runs", type=int, default=10)
    options = parser.parse_args()
    sizes = [16, 32, 64] if options.quick else [25, 50, 100, 200]
    families = ["complete", "ring-2", "ring", "lattice", "small-world", "scale-free", "erdos-renyi"]
    print(f"minimal naming game, t_conv in interactions, mean of {options.runs} runs (each on a fresh graph)")
    print(f"{'family':>12} " + " ".join(f"{'N=' + str(size):>11}" for size in sizes) + f" {'exponent':>9} {'known':>9} {'s':>6}")
    exponents = {}
    for family in families:
        started = time.perf_counter()
        means = []
        for size in sizes:
            times = []
            for run in range(options.runs):
                graph = None if family == "complete" else graph_for(family, size, 1000 * size + run)
                result = run_to_consensus(size, seed=7 * size + run, max_interactions=100 * size**3, graph=graph)
                times.append(result.t_conv)
            means.append(float(np.mean(times)))
        exponents[family] = float(np.polyfit(np.log(sizes), np.log(means), 1)[0])
        print(f"{family:>12} " + " ".join(f"{value:>11.0f}" for value in means)
              + f" {exponents[family]:>9.2f} {KNOWN[family]:>9} {time.perf_counter() - started:>6.1f}")
    print(f"ring exponent minus complete-graph exponent: {exponents['ring'] - exponents['complete']:.2f} "
          f"(degree 2: {exponents['ring-2'] - exponents['complete']:.2f}; known 3 - 1.5 = 1.5)")


if __name__ == "__main__":
    main()
