"""How an agent decides: by asking a language model, by commitment, or by a rule.

One protocol: `decide(agent, situation) -> Decision`. The LLM policy, given the game's
prompt codec (agentsim/codec.py), owns the invalid-reply
policy of the paper's setting: re-ask up to `max_reasks` times with a reminder, then a recorded
fallback; nothing is dropped silently and every attempt is a CallRecord. A fallback stands for
a model that answered badly; a backend that failed (a call that spent its retries or its
deadline) is no answer at all: the decision is not taken and the run stops
(`BackendFailedError`) before its encounter is recorded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from time import perf_counter
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from .codec import PromptCodec, Situation
from .errors import BackendError, BackendFailedError
from .llm.base import Grammar, LanguageModel, Request, Sampling
from .llm.cache import CachedModel
from .records import CallRecord, Decision
from .secrets import redact
from .seeding import unit_uniforms
from .usage import PROBE

if TYPE_CHECKING:
    from .agents import PopulationAgent
    from .llm.health import BackendHealth


S = TypeVar("S", bound=Situation)
S_contra = TypeVar("S_contra", bound=Situation, contravariant=True)


class Policy(Protocol[S_contra]):
    kind: str  # "llm", "committed" or "rule"
    label: str  # what the store records as the agent's model
    immediate: bool  # decides without suspending (no I/O), so encounters need no concurrency

    async def decide(self, agent: PopulationAgent, situation: S_contra) -> Decision: ...


class LLMPolicy(Generic[S]):
    """Ask a backend; parse with the game's codec; re-ask with its reminder; salvage what the
    codec can read from the unusable replies; else its fallback. Every attempt is recorded.
    The codec is the game's (`Scenario.codec`), handed over when the population is built."""

    kind = "llm"

    def __init__(self, backend: LanguageModel, sampling: Sampling, codec: PromptCodec[S], *, max_reasks: int,
                 grammar: Grammar | Callable[[S], Grammar | None] | None = None) -> None:
        self.codec = codec
        self.backend = backend
        self.sampling = sampling
        self.max_reasks = max_reasks
        # Server-side constrained decoding, where the backend offers it: one grammar, or one per
        # situation where a game asks for different things (agentsim.gamekit: a number, then a vote).
        self.grammar = grammar
        # (bound once: one grammar for every call, or the function that gives each situation's)
        self._grammar_of = grammar if callable(grammar) else None
        self._fixed_grammar = None if callable(grammar) else grammar
        self.label = backend.name
        self.immediate = backend.immediate
        # The backend's health (llm/health.py), told of every decision: fallbacks trip its breaker.
        self.health: BackendHealth | None = getattr(backend, "health", None)
        # The response cache's `forget` (llm/cache.py), where the stack has one: the health
        # takes unreadable replies out of it when fallbacks stop the run.
        self.forget = _cache_forget(backend)

    async def decide(self, agent: PopulationAgent, situation: S) -> Decision:
        model, game, grammar_of = agent.model, self.codec, self._grammar_of
        usage = model.usage.by_backend.get(self.label) or model.usage.backend(self.label)
        request = Request(messages=game.messages(situation), sampling=self.sampling, seed=agent.next_call_seed(),
                          options=situation.options, replicate=model.replicate,
                          grammar=self._fixed_grammar if grammar_of is None else grammar_of(situation),
                          situation=situation)
        context = game.encode(situation)
        calls: list[CallRecord] = []
        for attempt in range(self.max_reasks + 1):
            usage.in_flight += 1
            started = perf_counter()
            try:
                completion = await self.backend.complete(request)
            except BackendError as error:
                # The backend failed, not the model: no decision is taken, so the encounter is
                # not recorded; the run stops before it and --resume asks it again.
                usage.in_flight -= 1
                usage.errors[error.kind] = usage.errors.get(error.kind, 0) + 1
                for kind in error.failed_attempts:  # retried before giving up
                    usage.errors[kind] = usage.errors.get(kind, 0) + 1
                    usage.retries += 1
                raise self._failed(error) from None
            except BaseException:  # the run stops (budget, breaker, interrupt): nothing is in flight
                usage.in_flight -= 1
                raise
            latency_us = int((perf_counter() - started) * 1e6)
            usage.in_flight -= 1
            parsed = game.parse(completion.text, situation)
            usage.count(completion.prompt_tokens, completion.completion_tokens, latency_us)
            if completion.cost_usd or completion.cached or completion.retries or completion.sampled_locally:
                usage.answered(completion)
            if completion.probe is not None:  # the start-up probe sent before this call: billed, so recorded
                probe = model.usage.backend(self.label + PROBE)
                probe.count(completion.probe.prompt_tokens, completion.probe.completion_tokens, 0)
                probe.answered(completion.probe)
            calls.append(CallRecord(agent.index, attempt, context if attempt == 0 else "", completion.text,
                                    parsed.action, completion.prompt_tokens, completion.completion_tokens,
                                    latency_us, parsed.problem, completion.option_probabilities,
                                    sampled_locally=completion.sampled_locally))
            if parsed.problem is None:
                usage.decisions += 1
                if self.health is not None:
                    self.health.decided(False)
                return Decision(parsed.action, calls)
            usage.invalid_replies += 1
            if self.health is not None and self.forget is not None:
                self.health.unreadable_reply(partial(self.forget, request))
            if attempt < self.max_reasks:
                usage.reasks += 1
                request = dataclasses.replace(request, messages=game.reask(situation, request.messages, completion.text, parsed),
                                              seed=agent.next_call_seed())
        usage.decisions += 1
        usage.fallbacks += 1
        calls[-1].fallback = True  # the row that carries the move says it is a fallback
        if self.health is not None:
            self.health.decided(True)
        for call in reversed(calls):
            # The game may still read an action from an unusable reply (SIGN decodes free
            # text); the call that gave it keeps its error and carries the action.
            salvaged = game.salvage(call.reply, situation) if call.reply else None
            if salvaged is not None:
                call.action = salvaged
                return Decision(salvaged, calls, fallback=True)
        unit = unit_uniforms(agent.next_call_seed(), 1)[0]
        return Decision(game.fallback(situation, unit), calls, fallback=True)

    def _failed(self, error: BackendError) -> BackendFailedError:
        if self.health is not None:
            return self.health.call_failed(error)
        return BackendFailedError(f"backend '{redact(self.label)}' failed: {redact(str(error))}")


def _cache_forget(backend: LanguageModel) -> Callable[[Request], None] | None:
    """The `forget` of the response cache in `backend`'s stack (llm/stack.py), or None."""
    layer: object | None = backend
    while layer is not None:
        if isinstance(layer, CachedModel):
            return layer.forget
        layer = getattr(layer, "inner", None)
    return None


class CommittedPolicy:
    """Always plays the same action, whatever happened: the committed minority."""

    kind = "committed"
    immediate = True

    def __init__(self, action: str) -> None:
        self.action = action
        self.label = f"committed:{action}"

    async def decide(self, agent: PopulationAgent, situation: object) -> Decision:
        return Decision(self.action)


class RulePolicy(Generic[S]):
    """A rule of theory (best response, a minimal naming game rule): a function of the
    situation and a uniform draw derived from the run's seed."""

    kind = "rule"
    immediate = True

    def __init__(self, label: str, rule: Callable[[S, float], str | None]) -> None:
        self.label = label
        self.rule = rule

    async def decide(self, agent: PopulationAgent, situation: S) -> Decision:
        unit = unit_uniforms(agent.next_call_seed(), 1)[0]
        return Decision(self.rule(situation, unit))
