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
SEEDS = 20


def _harvest(stock: int) -> CommonsSituation:
    situation = CommonsSituation(kind="harvest", month=1, agent=0, name="John", others=("Kate", "Jack"),
                                 date="2024-01-01", stock=stock,
                                 memories=(("2024-01-01", f"Before everyone fishes, there are {stock} tons of fish in the lake."),))
    return dataclasses.replace(situation, options=answer_options(situation))


@pytest.mark.timeout(2400)  # minutes on two free cores; a shared, loaded host can take several times that
def test_stored_harvest_distributions_match_the_answers_over_20_seeds(smollm2: LlamaCppModel) -> None:
    """At two stocks, the answered count of the most likely amount over 20 seeds against its
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


def test_the_scoring_reads_the_logits_the_sampler_draws_from(smollm2: LlamaCppModel,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampler evaluates a reply one token at a time, and llama.cpp's CPU kernels give a
    batch of several tokens other logits (SmolLM2's Q4_1 weights: by up to 0.8, shown here), so
    the scoring must walk the tree of replies one token at a time too (its depth-first order
    does: each node is a child of one already evaluated), or the stored distribution would not
    be the sampler's."""
    game = CommonsGame(agents=3, constrained_decoding=True, temperature=0.7)
    situation = _harvest(80)
    request = Request(messages=game.codec.messages(situation), sampling=game.params.sampling(), seed=0,
                      options=situation.options, grammar=game.codec.grammar(situation))
    smollm2.distributions.clear()
    completion = asyncio.run(smollm2.complete(request))
    llama = smollm2.llama
    prompt = [int(token) for token in llama.input_ids[:completion.prompt_tokens]]
    reply = [int(token) for token in llama.tokenize(completion.text.encode(), add_bos=False, special=False)]
    assert len(reply) >= 3

    def last_logits() -> list[float]:
        return list(llama.scores[llama.n_tokens - 1]) if llama._logits_all else \
            [float(value) for value in smollm2.numpy.ctypeslib.as_array(
                smollm2.bindings.llama_get_logits_ith(llama.ctx, -1), shape=(llama.n_vocab(),))]

    llama.n_tokens = len(prompt) - 1
    llama.eval(prompt[-1:] + reply)
    together = last_logits()
    llama.n_tokens = len(prompt) - 1
    for token in prompt[-1:] + reply:
        llama.eval([token])
    apart = last_logits()
    assert max(abs(a - b) for a, b in zip(together, apart)) > 1e-3, "a batch's logits are not the sampler's"

    evaluated: list[int] = []
    evaluate = llama.eval
    monkeypatch.setattr(llama, "eval", lambda tokens: (evaluated.append(len(tokens)), evaluate(tokens))[1])
    smollm2.distributions.clear()
    scored = smollm2._distribution(request, completion.prompt_tokens)
    assert len(evaluated) > 20 and set(evaluated) == {1}, "one token at a time"
    assert scored.probabilities == completion.option_probabilities, "the same logits as when it was first scored"
