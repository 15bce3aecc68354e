"""GovSim's pollution scenario: the fishing dynamics with factory owners producing pallets of
widgets on a river measured in % unpolluted water, in GovSim's own pollution prompts."""

from agentsim.games.commons import CommonsGame

scenario = CommonsGame(resource="pollution")
RUNS = 5
