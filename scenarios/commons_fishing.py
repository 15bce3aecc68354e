"""GovSim's fishing scenario (Piatti et al. 2024, the default setting of Table 2 / Fig. 3):
five fishermen, a lake of 100 tons that doubles each month, 12 months, a discussion each
month. `--set universalization=true`, `--set newcomer=true`, `--set communication=false`
give the paper's other conditions; scenarios/commons_conditions.py runs them side by side."""

from agentsim.games.commons import CommonsGame

scenario = CommonsGame(resource="fishing")
RUNS = 5  # the paper's five seeds
