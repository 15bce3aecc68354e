"""GovSim on the real model that ships with agentsim: SmolLM2-135M-Instruct in process
(llama.cpp, `local:smollm2`) with `constrained_decoding`. Every harvest, utterance decision and
rating of a month is readable, and the exact distributions stored for the constrained harvest
match what the model answers over many seeds (the naming game's calibration test:
tests/test_smollm2.py)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from scipy import stats
from test_smollm2 import one_thread, smollm2  # noqa: F401 (fixtures: one thread, the model loaded once)

from agentsim.games.commons import CommonsGame
from agentsim.games.commons.grammars import answer_options
from agentsim.games.commons.situations import CommonsSituation
from agentsim.llm.base import Completion, Request
from agentsim.llm.llamacpp import LlamaCppModel

pytestmark = pytest.mark.slow

ALPHA = 0.01  # a calibrated backend fails the test with probability at most 1%
SEEDS = 60


def _harvest(stock: int) -> CommonsSituation:
    situation = CommonsSituation(kind="harvest", month=1, agent=0, name="John", others=("Kate", "Jack"),
                                 date="2024-01-01", stock=stock,
                                 memories=(("2024-01-01", f"Before everyone fishes, there are {stock} tons of fish in the lake."),))
    return dataclasses.replace(situation, options=answer_options(situation))


@pytest.mark.timeout(2400)  # minutes on two free cores; a shared, loaded host can take several times that
def test_stored_harvest_distributions_match_the_answers_over_60_seeds(smollm2: LlamaCppModel) -> None:
    """At two stocks, the answered count of the most likely amount over 60 seeds against its
    stored probability, by an exact binomial test at level 1%/2 per state. The seeds are fixed,
    so the outcome is too. Sampled at temperature 0.7 (GovSim decodes greedily, where every
    distribution is a single amount and there is nothing to calibrate)."""
    game = CommonsGame(agents=3, constrained_decoding=True, temperature=0.7)
    sampling = game.params.sampling()
    spread = []
    for stock in (100, 60):
        situation = _harvest(stock)
        grammar = game.codec.grammar(situation)
        requests = [Request(messages=game.codec.messages(situation), sampling=sampling, seed=seed,
                            options=situation.options, grammar=grammar) for seed in range(SEEDS)]

        async def ask(batch: list[Request] = requests) -> list[Completion]:
            return [await smollm2.complete(request) for request in batch]

        replies = asyncio.run(ask())
        distribution = replies[0].option_probabilities
        assert distribution is not None and set(distribution) == set(situation.options)
        assert all(reply.option_probabilities == distribution for reply in replies), "a function of the prompt"
        focus = max(distribution, key=lambda amount: distribution[amount])
        answered = [game.codec.parse(reply.text, situation).action for reply in replies]
        assert all(amount in situation.options for amount in answered), "every constrained harvest is readable"
        hits = sum(amount == focus for amount in answered)
        test = stats.binomtest(hits, SEEDS, min(max(distribution[focus], 0.0), 1.0))
        print(f"stock {stock}: P({focus} tons) stored {distribution[focus]:.3f}, answered {hits}/{SEEDS}, "
              f"exact binomial p = {test.pvalue:.3f}, unscored {replies[0].unscored:.1e}")
        assert test.pvalue >= ALPHA / 2, (stock, focus, distribution[focus], hits)
        spread.append(distribution[focus])
    assert any(share < 0.95 for share in spread), "a state where more than one amount occurs"
