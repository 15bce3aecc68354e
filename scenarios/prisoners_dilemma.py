"""The repeated Prisoner's Dilemma between LLM agents with public reputations (indirect
reciprocity; image scoring after Nowak and Sigmund 1998; prompts in the style of Fontana et al.
2024 and Akata et al. 2023), a game on the game layer (agentsim/games/dilemma/game.py).

Sixteen agents, twenty rounds; every round a fresh random matching, each player seeing its own
last three rounds and its partner's reputation (C in how many of its last five moves), then
answering C or D. Payoffs T=5, R=3, P=1, S=0.

    python -m agentsim scenarios/prisoners_dilemma.py --runs 3 --out results/dilemma
    python -m agentsim scenarios/prisoners_dilemma.py --set reputation_window=1      # reputation = last move
    python -m agentsim scenarios/prisoners_dilemma.py --population "openai:gpt-4o-mini=8,anthropic:claude-3-5-haiku-latest=8"
    python -m agentsim cooperation results/dilemma                                     # per round and per model
    python -m agentsim report results/dilemma
"""

from agentsim.games.dilemma import PrisonersDilemma

RUNS = 2

scenario = PrisonersDilemma(agents=16, max_rounds=20)
