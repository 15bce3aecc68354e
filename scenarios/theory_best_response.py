"""Theory baseline: best response with a memory of M = 12 partners (Centola et al., Science
360, 1116, 2018), whose critical mass is about 25%. N = 20 in consensus on M, 6 agents (30%)
committed to Q, one encounter at a time; stops when Q holds 95% of the other agents' plays over
the last 3N interactions, or after 60 population rounds. Vary with `--set committed=4`.
See docs/theory-baselines.md.
"""

from agentsim.games.theory import BestResponseNamingGame

RUNS = 20

scenario = BestResponseNamingGame(agents=20, names=("Q", "M"), memory_length=12, majority_name="M",
                                  committed_name="Q", committed=6, stop_at="flip", max_rounds=60, max_in_flight=1)
