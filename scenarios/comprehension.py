"""The run the comprehension checks question (Flint Ashery et al. 2025, Fig. S1, Table S7).

An ordinary run (N = 24, W = 10, H = 5); afterwards ask Table S7's questions of 8 of its agents
at every decision they took, on the same backend:

    python -m agentsim scenarios/comprehension.py --out results/comp
    python -m agentsim comprehension results/comp --agents 8
    python -m agentsim report results/comp
"""

from agentsim.games.naming import NamingGame

RUNS = 1

scenario = NamingGame(agents=24, pool_size=10, memory_length=5, max_rounds=20, stop_at="consensus")
