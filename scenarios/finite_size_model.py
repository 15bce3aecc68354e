"""The critical mass against the population's size on a language model: scenarios/finite_size.py's
grid of committed fractions on the naming game's LLM agents (the paper's prompt, two names A
and B, memory H 5), everyone starting in consensus on B, a fraction p committed to A. A run
flips when A is 95% of the other agents' productions over the last 3N interactions, within 80
time units of N interactions (160 population rounds). The answer grammar is on, so that a model
in process can score its options and `--sample-locally` asks it once per distinct prompt
(docs/finite-size.md):

    for N in 100 1000 10000; do
        python -m agentsim scenarios/finite_size_model.py --set agents=$N --runs R --record summary \\
            --backend local:smollm2 --sample-locally --out results/finite_size_model/N$N
    done
    python -m agentsim report results/finite_size_model
"""

from agentsim.games.naming import NamingGame

FRACTIONS = (0.06, 0.08, 0.09, 0.10, 0.11, 0.12, 0.14)
VARIANTS = [{"committed_fraction": fraction} for fraction in FRACTIONS]
RUNS = 4

scenario = NamingGame(agents=1000, names=("A", "B"), memory_length=5, majority_name="B", committed_name="A",
                      committed_fraction=0.10, constrained_decoding=True, stop_at="flip", max_rounds=160)
