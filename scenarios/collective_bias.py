"""Collective bias from unbiased individuals (Flint Ashery et al. 2025, Fig. 2B).

W = 2 names {Q, M}, N = 24, H = 5, many runs from empty memory: the distribution of the names
the population settles on, to set against each agent's choice with an empty memory.
On the stand-in, M wins ties in lose-shift but is not favoured a priori: individually unbiased,
collectively biased toward M, as the paper found of its LLMs.
"""

from agentsim.games.naming import NamingGame, NamingStandInSettings

RUNS = 20

scenario = NamingGame(agents=24, names=("Q", "M"), memory_length=5, max_rounds=50, stop_at="consensus",
                      standin=NamingStandInSettings(bias_name="M"))
