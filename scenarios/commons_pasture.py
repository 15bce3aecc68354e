"""GovSim's pasture scenario: the fishing dynamics with shepherds and hectares of grass."""

from agentsim.games.commons import CommonsGame

scenario = CommonsGame(resource="pasture")
RUNS = 5
