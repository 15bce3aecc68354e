"""Theory baseline: the binary naming game with a committed minority (Xie et al., PRE 84,
011130, 2011). N = 200, everyone starts knowing only B, 12% committed to A (above the mean-field
critical fraction 0.0979, so the population converts). Vary the minority with
`--set committed_fraction=0.06` (below: it does not). See docs/theory-baselines.md.
"""

from agentsim.games.theory import MinimalNamingGame

RUNS = 8

scenario = MinimalNamingGame(agents=200, names=("A", "B"), majority_name="B", committed_name="A",
                             committed_fraction=0.12, stop_at="consensus", max_rounds=300)
