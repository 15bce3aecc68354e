"""GovSim's pasture scenario ("sheep" in GovSim's code): the fishing dynamics with shepherds,
flocks of sheep and hectares of grass, in GovSim's own pasture prompts."""

from agentsim.games.commons import CommonsGame

scenario = CommonsGame(resource="pasture")
RUNS = 5
