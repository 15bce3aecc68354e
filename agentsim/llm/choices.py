"""The choice-distribution cache: a wrapper that remembers, for an exact prompt, the model's
distribution over the valid options at the answer position, and with `sample_locally`
answers the prompt again by drawing from that distribution with the call's own seed instead
of calling.

In an answer-first format (`{'value': NAME; ...}`) the decision is the one token at the answer
position; what follows it is never read. Drawing that token from its distribution (with the
temperature and top-k already applied, llm/logprobs.py) is the same random process as asking
the model again, so the dynamics are unchanged while a population that revisits the same
prompts (critical-mass runs with W=2, H=5 see a few thousand distinct prompts at most) stops
paying for them. The locally written reply is the text the model wrote before the answer
(stored with the distribution), then the drawn option: the game reads it like the model's.

With `sample_locally`, a reply the model gave with a distribution is replaced by the seeded
draw too (the model's own reply is kept in `raw`): whether a prompt was already known depends
on which of two identical prompts in flight finished first, and a run's outcome may depend on
its seed and the model's answers only, never on timing. That holds exactly where the model's
distribution for a prompt does not depend on the seed (the answer comes first, or the text
before it is fixed by a grammar).

What is not reproduced: a model's unusable replies. A prompt is only stored from a reply the
distribution was read from (an option was named at the answer position), and local draws
always name an option. The completion says `sampled_locally`, and the experiment's store
records it per call (`decisions.sampled_locally`).

The key is the response cache's (llm/cache.py) without the seed and the replicate index:
provider, endpoint, model, messages, sampling, options, grammar. The table lives in the response cache's
database, so a user's experiments share what they learnt.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from typing import Any

from .base import Completion, LanguageModel, Request
from .cache import ResponseStore, cache_key
from .logprobs import first_option


def distribution_key(provider: str, endpoint: str, model: str, request: Request) -> str:
    """The response cache's key of the same request with no seed and no replicate index: every
    call of every run with this prompt shares it."""
    unseeded = Request(messages=request.messages, sampling=request.sampling, seed=None, options=request.options,
                       replicate=0, grammar=request.grammar)
    return "choices:" + hashlib.sha256(cache_key(provider, endpoint, model, unseeded).encode()).hexdigest()


def draw(distribution: Mapping[str, float], seed: int | None) -> str:
    """An option drawn from `distribution` by inverse CDF over the options in sorted order,
    with one uniform from the seed: the same seed always draws the same option."""
    unit = random.Random(seed or 0).random()
    ordered = sorted(distribution)
    total = sum(distribution[option] for option in ordered)
    cumulative = 0.0
    for option in ordered:
        cumulative += distribution[option] / total
        if unit < cumulative:
            return option
    return next(option for option in reversed(ordered) if distribution[option] > 0)


class ChoiceDistributionModel:
    """A `LanguageModel` wrapper: store each exact prompt's option distribution; with
    `sample_locally`, answer a stored prompt by a seeded draw from it."""

    def __init__(self, inner: LanguageModel, store: ResponseStore, *, provider: str, endpoint: str, model: str,
                 sample_locally: bool = False) -> None:
        self.inner = inner
        self.name = inner.name
        self.immediate = inner.immediate
        self.store = store
        self.identity = (provider, endpoint, model)
        self.sample_locally = sample_locally
        self.sampled = 0  # answered by a local draw
        self.stored = 0  # distributions learnt from the model

    async def complete(self, request: Request) -> Completion:
        if not request.options:
            return await self.inner.complete(request)
        key = distribution_key(*self.identity, request)
        if self.sample_locally:
            known = self.store.get(key)
            if known is not None:
                self.sampled += 1
                return _drawn(known, request, sampled_locally=True)
        completion = await self.inner.complete(request)
        learnt = _learnt(completion)
        if learnt is None:
            return completion  # nothing to learn: an unusable reply, or no probabilities
        known = self.store.get(key)
        if known is None:
            self.stored += 1
            self.store.put(key, self.name, learnt)
            known = learnt
        if not self.sample_locally:
            return completion
        # The decision is the seeded draw even when the model was asked: whether a prompt was
        # already known depends on which identical prompt finished first, and the outcome may
        # not depend on timing. It depends on the seed and the model's distributions only.
        drawn = _drawn(known, request, sampled_locally=False)
        drawn.prompt_tokens, drawn.completion_tokens = completion.prompt_tokens, completion.completion_tokens
        drawn.cost_usd, drawn.cached = completion.cost_usd, completion.cached
        drawn.retries, drawn.errors, drawn.signals = completion.retries, completion.errors, completion.signals
        drawn.raw = {"drawn": True, "model_reply": completion.text}
        return drawn

    async def aclose(self) -> None:
        self.store.flush()
        await self.inner.aclose()


def _learnt(completion: Completion) -> dict[str, object] | None:
    """The distribution and the text before the answer, when the distribution was read at an
    option the reply names; None when there is nothing to learn from the reply."""
    probabilities = completion.option_probabilities
    if not probabilities or completion.sampled_locally:
        return None
    start = first_option(completion.text, tuple(probabilities))
    if start is None:
        return None
    return {"distribution": dict(probabilities), "prefix": completion.text[:start], "model": completion.model}


def _drawn(known: Mapping[str, Any], request: Request, *, sampled_locally: bool) -> Completion:
    distribution: dict[str, float] = known["distribution"]
    option = draw(distribution, request.seed)
    return Completion(text=f"{known['prefix']}{option}", model=str(known["model"]), option_probabilities=distribution,
                      raw={"sampled_locally": sampled_locally}, sampled_locally=sampled_locally)
