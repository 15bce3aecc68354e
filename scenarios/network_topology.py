"""The naming game on six interaction networks at equal N (issue 5).

N = 24 agents, W = 10 letters, memory H = 5, +100 / -50, meeting along the edges of a complete
graph, a ring, a periodic 2-D lattice (4 × 6), a small world (rewiring 0.1), a Barabási-Albert
scale-free graph and an Erdős-Rényi random graph (redrawn until connected), all of mean degree
4 except the complete graph. Replicate k runs on the k-th topology (cycling), so the default
30 runs are five of each. A run stops once every agent's latest name is the same, or after
300 population rounds. To run some families only: `--set topologies=ring` (or
`topologies=ring,lattice`); the naming game's own `topology` setting is not read here, and
`--set topology=ring` is refused, naming `topologies`. Then:

    python -m agentsim report OUT          # or, from Python:
    from agentsim.games.naming.network_report import network_section; network_section(OUT)
"""

from agentsim.games.naming import NetworkNamingGame

RUNS = 30

scenario = NetworkNamingGame(agents=24, pool_size=10, memory_length=5, mean_degree=4, max_rounds=300)
