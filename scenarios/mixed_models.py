"""A mixed-model population: the naming game (N 24, W 10, H 5) with two model families, half
the agents each. Every agent's model is recorded (the `agents` table), and the
`decisions_by_model` view splits the interactions by model.

With no backend named it runs on two stand-in labels, so it works anywhere; name real models
on the command line, e.g.

    python -m agentsim scenarios/mixed_models.py \
        --population "openai:gpt-4o-mini=12,anthropic:claude-3-5-haiku-latest=12"
    python -m agentsim scenarios/mixed_models.py \
        --population "tgi:http://gpu-box:8080=12,openai:meta-llama/Llama-3.1-8B-Instruct@http://gpu-box:8000/v1=12"
"""

from agentsim.games.naming import NamingGame

RUNS = 1

POPULATION = "stand-in:family-a=12,stand-in:family-b=12"

scenario = NamingGame(agents=24, pool_size=10, memory_length=5, max_rounds=50, stop_at="consensus")
