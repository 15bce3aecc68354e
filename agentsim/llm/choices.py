"""The choice-distribution cache: a wrapper that remembers, for an exact prompt, the model's
distribution over the options, and with `sample_locally` answers the prompt again by drawing
from that distribution with the call's own seed instead of calling.

What it stores is only what a backend scored exactly: under a choice grammar (a finite set of
replies, one per option) the probability that the backend's own sampler writes each option's
reply (llm/scoring.py). Such a distribution is a function of the prompt alone, whichever reply
the model gave when it was computed, so drawing an option from it with the call's seed is the
same random process as asking the model again: the draws of different calls are independent
(each call has its own seed) and each follows the model's distribution. The locally written
reply is the option's reply under the grammar, the text the model writes for it. The scoring
leaves out at most `unscored` (stored beside, below 1e-4 in practice); a draw renormalises over
the options, so each option's chance is off by at most that.

With `sample_locally`, a reply the model gave is replaced by the seeded draw too (the model's
own reply is kept in `raw`): whether a prompt was already known depends on which of two
identical prompts in flight finished first, and a run's outcome may depend on its seed and the
model's answers only, never on timing.

A backend that cannot score (every HTTP backend, the stand-in: docs/backends.md)
reports no distribution, and `sample_locally` is refused when it is built (`require_scoring`),
as it is for a scenario without a choice grammar (agentsim/model_check.py).
The completion says `sampled_locally`, and the experiment's store records it per call
(`decisions.sampled_locally`).

The key is the response cache's (llm/cache.py) without the seed and the replicate index:
provider, endpoint, model, messages, sampling, options, grammar. The table lives in the
response cache's database, so a user's experiments share what they learnt.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Mapping
from typing import Any

from ..errors import BackendSpecError
from .base import Completion, LanguageModel, Request
from .cache import ResponseStore, cache_key

SCORING_BACKENDS = "local:smollm2, local:PATH.gguf (llama.cpp) or local:HF_ID_OR_PATH (transformers) in process"


def require_scoring(backend: LanguageModel, spec: str) -> None:
    """Refuse `--sample-locally` on a backend that reports no exact option distributions:
    nothing would be drawn, and a run would silently be the plain one."""
    if not getattr(backend, "scores_options", False):
        raise BackendSpecError(f"--sample-locally draws from exact option distributions, and backend '{spec}' cannot "
                               f"score them (docs/backends.md); use {SCORING_BACKENDS} with the answer grammar, "
                               f"or drop --sample-locally")


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
        # With `sample_locally`, the prompts being learnt now: an identical prompt asked while its
        # distribution is on its way waits for it instead of asking the model too (at the start
        # of a run in consensus, 64 encounters in flight ask one prompt). What it answers is the
        # seeded draw either way; only the calls are fewer.
        self.learning: dict[str, asyncio.Future[dict[str, Any] | None]] = {}

    async def complete(self, request: Request) -> Completion:
        if not request.options:
            return await self.inner.complete(request)
        key = distribution_key(*self.identity, request)
        if self.sample_locally:
            known = self.store.get(key)
            if known is None and key in self.learning:
                known = await asyncio.shield(self.learning[key])  # None: that call learnt nothing; ask here
            if known is not None:
                self.sampled += 1
                return _drawn(known, request, sampled_locally=True)
        learning = None
        if self.sample_locally and key not in self.learning:
            learning = self.learning[key] = asyncio.get_running_loop().create_future()
        try:
            completion = await self.inner.complete(request)
            known = self._learn(key, completion, request)
        finally:
            if learning is not None:  # the prompts that waited for this one: what it learnt, or None
                del self.learning[key]
                learning.set_result(self.store.get(key))
        if known is None or not self.sample_locally:
            return completion  # nothing learnt (no distribution scored), or the model's own reply kept
        # The decision is the seeded draw even when the model was asked: whether a prompt was
        # already known depends on which identical prompt finished first, and the outcome may
        # not depend on timing. It depends on the seed and the model's distributions only.
        drawn = _drawn(known, request, sampled_locally=False)
        drawn.prompt_tokens, drawn.completion_tokens = completion.prompt_tokens, completion.completion_tokens
        drawn.cost_usd, drawn.cached = completion.cost_usd, completion.cached
        drawn.retries, drawn.errors, drawn.signals = completion.retries, completion.errors, completion.signals
        drawn.probe = completion.probe  # (a start-up probe sent before it is recorded all the same)
        drawn.raw = {"drawn": True, "model_reply": completion.text}
        return drawn

    def _learn(self, key: str, completion: Completion, request: Request) -> dict[str, Any] | None:
        """The prompt's distribution, stored the first time a completion scores one; None when
        this one scored nothing."""
        learnt = _learnt(completion, request)
        if learnt is None:
            return None
        known = self.store.get(key)
        if known is None:
            self.stored += 1
            self.store.put(key, self.name, learnt)
            known = learnt
        return known

    async def aclose(self) -> None:
        self.store.flush()
        await self.inner.aclose()


def _learnt(completion: Completion, request: Request) -> dict[str, object] | None:
    """The scored distribution with each option's reply under the grammar; None when the
    backend scored nothing (or the reply came from a draw)."""
    probabilities = completion.option_probabilities
    grammar = request.grammar
    if not probabilities or completion.sampled_locally or grammar is None or not grammar.choices:
        return None
    replies = {option: reply for reply, option in grammar.choices}
    if set(probabilities) != set(replies):
        return None
    return {"distribution": dict(probabilities), "replies": replies, "unscored": completion.unscored,
            "model": completion.model}


def _drawn(known: Mapping[str, Any], request: Request, *, sampled_locally: bool) -> Completion:
    distribution: dict[str, float] = known["distribution"]
    option = draw(distribution, request.seed)
    return Completion(text=known["replies"][option], model=str(known["model"]), option_probabilities=distribution,
                      unscored=float(known.get("unscored", 0.0)), raw={"sampled_locally": sampled_locally},
                      sampled_locally=sampled_locally)
