"""SIGN: schema-induced naming (Zhang and Woisetschläger 2026), the three conditions side by side.

The paper's settings: a lexicon of M = 12 names C1..C12, N in {12, 24}, memory K in {5, 10}
(NL keeps none), lose-shift alpha in {0.5, 0.75, 0.99}, 300 rounds, three seeds per cell
(the same seeds in every cell), Phi-3-Mini's sampling (temperature 0.7, top-p 0.9, repetition
penalty 1.1, 32 new tokens). 30 cells x 3 seeds = 90 runs in one output directory; each run's
summary says its condition, N, K and alpha, its agreement per round, the rounds and tokens it
took to reach 50/60/70/90% agreement, and its compliance and retry rates.

    python -m agentsim scenarios/sign_schema.py --out results/sign
    python -m agentsim scenarios/sign_schema.py --set agents=12 --set alpha=0.75   # pin part of the grid
    python -m agentsim.games.sign.report results/sign                                 # Fig. 1, Table 1, Fig. 2 and 5
"""

from agentsim.games.sign import SignGame, sign_grid

RUNS = 3  # seeds per cell

scenario = SignGame(agents=12, lexicon_size=12, memory_length=5, alpha=0.75, max_rounds=300)

VARIANTS = sign_grid(agents=(12, 24), memories=(5, 10), alphas=(0.5, 0.75, 0.99))
