"""The critical-mass search (Flint Ashery et al. 2025, Fig. 3, Table S3).

Run it with the `critical-mass` command, not as a single run:

    python -m agentsim critical-mass scenarios/critical_mass_search.py --out results/cm --runs 10

For each convention of the pair {Q, M}, the population (N = 24, H = 5) starts in consensus on it
and committed agents always say the other; the search bisects for the smallest minority that
flips the convention within 30 population rounds in every run, reusing finished runs.

On the stand-in, M is the favoured ("strong") name: its agents explore 10% of the time and
their exploration picks M three times in four (`standin.bias=0.5`), and ties go to M. Agents
holding Q therefore stray more than agents holding M, the paper's account of relative strength.
Note that this exploration also caps the share Q can reach among the others at about 92.5%,
below the 95% flip threshold, so against M a flip needs the fluctuations of a large minority:
the stand-in's critical mass against M is set by that cap as much as by the dynamics.
"""

from agentsim.games.naming import NamingGame, NamingStandInSettings

RUNS = 10

scenario = NamingGame(agents=24, names=("Q", "M"), memory_length=5, majority_name="M", committed_name="Q", committed=6,
                      stop_at="flip", max_rounds=30, standin=NamingStandInSettings(bias_name="M", bias=0.5, noise=0.1))
