"""Cultural evolution in the iterated Stag Hunt (Liu 2025, Fig. 2: Llama-3.1-3B).

Four agents in random pairs, eight rounds a game, twelve generations; the top half survives.
The maximum payoff is 80 (two stags every round). Conditions: strategies only, strategies and
norms (and the Pos/Neg seeds, which the paper ran for the Donor game).

    python -m agentsim scenarios/stag_hunt.py --runs 3 --out results/stag
    python -m agentsim scenarios/stag_hunt.py --set agents=8                     # Fig. 2b
    python -m agentsim report results/stag
"""

from agentsim.games.evolution import StagHunt, conditions

RUNS = 3

scenario = StagHunt(agents=4, rounds=8, generations=12)

VARIANTS = conditions("strategies", "norms")
