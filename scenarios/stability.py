"""Stability of an established convention (Flint Ashery et al. 2025, Fig. S7).

N = 24 agents, W = 2 names {Q, M}, H = 5; every memory starts with five successful plays of Q
and no committed agent: does the population stay on Q? Run it again with
`--set majority_name=M`; `report` draws the production probability of the initial convention.
On the stand-in (exploring 10% of the time, M winning ties) both conventions hold at about 95%,
as they did for three of the paper's four models (Q fell by itself for Llama-3.1-70B-Instruct).
"""

from agentsim.games.naming import NamingGame, NamingStandInSettings

RUNS = 5

scenario = NamingGame(agents=24, names=("Q", "M"), memory_length=5, majority_name="Q", stop_at="none", max_rounds=30,
                      standin=NamingStandInSettings(bias_name="M", noise=0.1))
