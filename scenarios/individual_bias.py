"""Individual bias: first choices from an empty memory (Flint Ashery et al. 2025, Fig. 2B left,
Fig. S4, S5, Table S1).

Agents meet as in a run but never remember, so every decision is a first choice, asked through
the normal backend path. N = 24 agents x 210 population rounds = 5,040 samples per run (the
paper used 5,000-15,000). Names {Q, M}; use `--set names=` for another pool, or
`--set pool_size=10 --set names=` for W = 10. The stand-in settings match
scenarios/collective_bias.py (M wins ties, no prior bias), so both compare in one report.
Then `python -m agentsim bias DIR` or `report DIR`.
"""

from agentsim.games.naming import FirstChoiceProbe, NamingStandInSettings

RUNS = 1

scenario = FirstChoiceProbe(agents=24, names=("Q", "M"), memory_length=5, max_rounds=210, stop_at="none",
                            max_in_flight=12, standin=NamingStandInSettings(bias_name="M"))
