"""Cultural evolution in the Donor game (Liu 2025, Figs. 1 and 3; after Vallinder and Hughes 2024).

Four agents, four rounds a game, two games a generation (the second with the roles reversed),
twelve generations; the top half survives. The four conditions run side by side with the same
seeds: strategies only, strategies and norms, norms seeded toward cooperation (Pos) and toward
exploitation (Neg).

    python -m agentsim scenarios/donor_game.py --runs 3 --out results/donor
    python -m agentsim scenarios/donor_game.py --set agents=8 --set rounds=8     # Fig. 1b
    python -m agentsim report results/donor                                      # Figs. 1 and 3
    python -m agentsim lineage results/donor --run 2                             # who inherited what
"""

from agentsim.games.evolution import DonorGame, conditions

RUNS = 3

scenario = DonorGame(agents=4, rounds=4, generations=12)

VARIANTS = conditions("strategies", "norms", "norms_pos", "norms_neg")
