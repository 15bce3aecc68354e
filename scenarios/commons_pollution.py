"""GovSim's pollution scenario: the fishing dynamics with factory owners and a river's
capacity to absorb the pollution of the widgets they produce."""

from agentsim.games.commons import CommonsGame

scenario = CommonsGame(resource="pollution")
RUNS = 5
