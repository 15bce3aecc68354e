"""Strategy tables (Flint Ashery et al. 2025, Table 1, Table S5).

Every memory configuration of the first three interactions with W = 2 names {Q, M} (1 + 4 + 16
= 21 configurations) is asked equally often: 24 agents x 175 population rounds = 4,200
decisions, 200 per configuration. With `--set probe_lengths=5` it asks all 1,024 states of
H = 5 (Fig. S8; raise max_rounds for as many samples each). `python -m agentsim strategies DIR`
prints the table; `report DIR` draws the heatmaps, and weights them by state frequency
(Fig. S9, S10) when DIR also holds ordinary runs with the same names.
"""

from agentsim.games.naming import NamingStandInSettings, StrategyProbe

RUNS = 1

scenario = StrategyProbe(agents=24, names=("Q", "M"), memory_length=5, probe_lengths=(0, 1, 2), max_rounds=175,
                         stop_at="none", max_in_flight=12, standin=NamingStandInSettings(bias_name="M", noise=0.1))
