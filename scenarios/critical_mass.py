"""A committed minority against an established convention (Flint Ashery et al. 2025, Fig. 3).

W = 2 names {Q, M}, N = 24, H = 5. Every agent starts in consensus on M (each memory holds five
successful plays of M); a committed minority that always says Q replaces some of them. The run
stops when the convention flips (Q at least 95% of the other agents' productions over the last
3N interactions) or after 30 population rounds, the paper's window. Vary the minority with
`--set committed=N` or `--set committed_fraction=F`.
"""

from agentsim.games.naming import NamingGame

RUNS = 1

scenario = NamingGame(
    agents=24,
    names=("Q", "M"),
    memory_length=5,
    majority_name="M",
    committed_name="Q",
    committed=6,
    committed_mode="replace",
    stop_at="flip",
    max_rounds=30,
)
