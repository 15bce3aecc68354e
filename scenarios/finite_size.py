"""The critical mass against the population's size: the smallest committed minority that flips
the convention of the binary naming game (Xie et al., PRE 84, 011130, 2011: everyone starts with
B only, a fraction p says A and never changes), on rule agents that play a million encounters in
a few seconds. A run flips when A is 95% of the other agents' productions over the last 3N
interactions (the naming game's flip, as for LLM populations) within 80 time units of N
interactions (160 population rounds: near the critical fraction the time to flip diverges, so
the horizon is part of what is measured); the grid of fractions is the experiment's VARIANTS.
One experiment per N, recording each run's summary only, and one report over them all
(docs/finite-size.md):

    for N in 100 1000 10000 100000; do
        python -m agentsim scenarios/finite_size.py --set agents=$N --runs R --record summary --out results/finite_size/N$N
    done
    python -m agentsim report results/finite_size

On a model, the same grid on the naming game's LLM agents: scenarios/finite_size_model.py.
"""

from agentsim.games.theory import MinimalNamingGame

FRACTIONS = (0.06, 0.08, 0.09, 0.10, 0.11, 0.12, 0.14)
VARIANTS = [{"committed_fraction": fraction} for fraction in FRACTIONS]
RUNS = 4

scenario = MinimalNamingGame(agents=1000, names=("A", "B"), majority_name="B", committed_name="A",
                             committed_fraction=0.10, stop_at="flip", max_rounds=160)
