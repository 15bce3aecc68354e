"""Naming-game prompts to check a model with, built exactly as the run's agents build theirs.

The start-up check (agentsim/model_fitness.py) and `python -m agentsim check-model`
(agentsim/analysis/model_check.py) ask a model these before trusting its answers: situations
with a fresh option order and memories of every length up to H, drawn from a seed, rendered
with the game's own prompt, sampling, grammar and options.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ...llm.base import Request
from ...seeding import derive_seed
from .situation import NamingSituation

if TYPE_CHECKING:
    from .game import NamingGame


def probe_situations(game: NamingGame, count: int, seed: int) -> list[NamingSituation]:
    """`count` situations: memory lengths 0, H, 1, H - 1, ... in turn (the first and the fullest
    memories first), each entry a random pair of names with its payoff, the options in a random
    order."""
    rng = random.Random(f"probes:{seed}")
    names, length = game.names, game.params.memory_length
    situations = []
    lengths = [size for pair in zip(range(length + 1), range(length, -1, -1)) for size in pair]
    for index in range(count):
        size = lengths[index % len(lengths)]
        memory = tuple((own, partner, game.payoff(own, partner))
                       for own, partner in ((rng.choice(names), rng.choice(names)) for _ in range(size)))
        situations.append(NamingSituation(tuple(rng.sample(names, len(names))), memory))
    return situations


def naming_request(game: NamingGame, situation: NamingSituation, seed: int) -> Request:
    """The request an LLM agent of `game` sends from `situation` (its first attempt)."""
    return Request(messages=game.codec.messages(situation), sampling=game.sampling(), seed=seed, options=situation.options,
                   grammar=game.grammar(), situation=situation)


def probe_requests(game: NamingGame, count: int, seed: int, *, situations: int = 2) -> list[tuple[Request, NamingSituation]]:
    """`count` requests, each with its own seed, over `situations` probe situations, each asked
    several times in a row: an in-process model then evaluates each prompt once (its KV cache
    keeps it) and the check stays short."""
    drawn = probe_situations(game, situations, seed)
    each = -(-count // situations)
    return [(naming_request(game, drawn[index // each], derive_seed(seed, index)), drawn[index // each])
            for index in range(count)]
