"""GovSim's conditions side by side on the fishing scenario: the default setting, the
universalization test (Table 2, right), the newcomer perturbation (Fig. 4: 15 months, the
outsider joining in month 4) and the no-communication ablation (Table 3), each with the same
seeds. Mixed-model groups:
`--population "SPEC=3,SPEC=2"`."""

from agentsim.games.commons import CommonsGame

scenario = CommonsGame(resource="fishing")
RUNS = 5
VARIANTS = [
    {},
    {"universalization": True},
    {"newcomer": True},
    {"communication": False},
]
