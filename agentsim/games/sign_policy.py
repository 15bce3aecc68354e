"""SIGN's decision ladder as an LLM policy.

`LLMPolicy` re-asks and then falls back with a rule that never sees the replies; SIGN's
Algorithm 1 instead decodes the free text of the non-compliant replies before giving up:

1. ask; the game's parser (strict schema, or the free-text decoder) accepts the reply: done;
2. non-compliant: ask again with the reminder, up to `max_reasks` times (Schema: once);
3. still non-compliant: decode the free text, the latest reply first; the call that gave the
   name keeps its `error` and carries the decoded name as its parsed action;
4. undecodable: the game's fallback (SIGN: no name), recorded as a fallback.

Every attempt is a CallRecord with its own tokens, and the run's accounting counts every
attempt, so tokens-to-threshold include discarded first attempts. The request carries the
game's grammar when constrained decoding is asked for. This mirrors `LLMPolicy.decide` (keep
the two in step).
"""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any

from ..errors import BackendError
from ..llm.base import Grammar, LanguageModel, Message, Request, Sampling
from ..policies import LLMPolicy
from ..records import CallRecord, Decision
from ..seeding import unit_uniforms

if TYPE_CHECKING:
    from ..agents import PopulationAgent


class SignPolicy(LLMPolicy):
    def __init__(self, backend: LanguageModel, sampling: Sampling, *, max_reasks: int,
                 grammar: Grammar | None = None) -> None:
        super().__init__(backend, sampling, max_reasks=max_reasks)
        self.grammar = grammar

    async def decide(self, agent: PopulationAgent, situation: Any) -> Decision:
        model = agent.model
        game = model.scenario
        usage = model.usage.by_backend.get(self.label) or model.usage.backend(self.label)
        request = Request(messages=game.messages(situation), sampling=self.sampling, seed=agent.next_call_seed(),
                          options=situation.options, replicate=model.replicate, grammar=self.grammar)
        context = game.encode(situation)
        calls: list[CallRecord] = []
        for attempt in range(self.max_reasks + 1):
            usage.in_flight += 1
            started = perf_counter()
            try:
                completion = await self.backend.complete(request)
            except BackendError as error:
                usage.in_flight -= 1
                usage.errors[error.kind] = usage.errors.get(error.kind, 0) + 1
                calls.append(CallRecord(agent.index, attempt, context if attempt == 0 else "", "", None,
                                        latency_us=int((perf_counter() - started) * 1e6), error=error.kind))
                break
            latency_us = int((perf_counter() - started) * 1e6)
            usage.in_flight -= 1
            parsed = game.parse(completion.text, situation)
            usage.count(completion.prompt_tokens, completion.completion_tokens, latency_us)
            calls.append(CallRecord(agent.index, attempt, context if attempt == 0 else "", completion.text,
                                    parsed.action, completion.prompt_tokens, completion.completion_tokens,
                                    latency_us, parsed.problem))
            if parsed.problem is None:
                return Decision(parsed.action, calls)
            usage.invalid_replies += 1
            if attempt < self.max_reasks:
                usage.reasks += 1
                request = request.with_turns(
                    Message("assistant", completion.text),
                    Message("user", game.reminder(situation, parsed)),
                    seed=agent.next_call_seed(),
                )
        usage.fallbacks += 1
        for call in reversed(calls):
            name = game.salvage(call.reply) if call.reply else None
            if name is not None:
                call.action = name
                return Decision(name, calls, fallback=True)
        unit = unit_uniforms(agent.next_call_seed(), 1)[0]
        return Decision(game.fallback(situation, unit), calls, fallback=True)
