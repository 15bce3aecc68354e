"""Collective bias with an initially unbiased random-string pool (Flint Ashery et al. 2025,
Fig. S11, S12, Table S6).

First find a pool of two six-character strings whose first choices are within a Jensen-Shannon
distance of 0.005 (base 2) of uniform:

    python -m agentsim unbiased-pool --samples 10000 --out results/pools

then run free runs on it (`--set names=A1b2C3,xY9z8W`) and report both directories. The pool
below is what `unbiased-pool` (seed 0, 2,000 samples per try) finds on the stand-in.
"""

from agentsim.games.naming import NamingGame

RUNS = 20

scenario = NamingGame(agents=24, names=("xz1QFK", "x2cXsa"), memory_length=5, max_rounds=50, stop_at="consensus")
