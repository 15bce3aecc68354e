"""The spontaneous emergence of a convention (Flint Ashery et al. 2025, Fig. 1).

N = 24 agents, a pool of W = 10 letters, memory H = 5, +100 / -50. Runs until the population
reaches consensus (95% success over the last 3N interactions) or 50 population rounds.
"""

from agentsim.games.naming import NamingGame

RUNS = 1

scenario = NamingGame(agents=24, pool_size=10, memory_length=5, max_rounds=50, stop_at="consensus")
