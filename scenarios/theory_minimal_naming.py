"""Theory baseline: the minimal naming game (Baronchelli et al. 2006) with rule agents, under
the constraint of Flint Ashery et al. 2025's theory line (Fig. 1A's dashed line): N = 24,
inventions drawn from a pool of W = 10 names. Runs until every inventory is the same single
name. Recorded like an LLM run, so `report` draws it with the same code; for 10,000 runs use
`agentsim.games.theory.minimal.success_curve(24, rounds, runs=10_000, seed=0, pool_size=10)`.
See docs/theory-baselines.md.
"""

from agentsim.games.theory import MinimalNamingGame

RUNS = 40

scenario = MinimalNamingGame(agents=24, pool_size=10, max_rounds=100)
