"""How an agent decides: by asking a language model, by commitment, or by a rule.

One protocol: `decide(agent, situation) -> Decision`. The LLM policy owns the invalid-reply
policy of the paper's setting: re-ask up to `max_reasks` times with a reminder, then a recorded
fallback; nothing is dropped silently and every attempt is a CallRecord.
"""

from __future__ import annotations

from time import perf_counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from .errors import BackendError
from .llm.base import LanguageModel, Message, Request, Sampling
from .records import CallRecord, Decision
from .seeding import unit_uniforms

if TYPE_CHECKING:
    from .agents import PopulationAgent


class Policy(Protocol):
    kind: str  # "llm", "committed" or "rule"
    label: str  # what the store records as the agent's model
    immediate: bool  # decides without suspending (no I/O), so encounters need no concurrency

    async def decide(self, agent: PopulationAgent, situation: Any) -> Decision: ...


@dataclass(frozen=True, kw_only=True)
class InvalidReplyPolicy:
    max_reasks: int = 2
    fallback: str = "random"  # what the game's fallback hook implements: random, previous or none


class LLMPolicy:
    """Ask a backend; parse with the game; re-ask with a reminder; fall back, recorded."""

    kind = "llm"

    def __init__(self, backend: LanguageModel, sampling: Sampling, *, max_reasks: int) -> None:
        self.backend = backend
        self.sampling = sampling
        self.max_reasks = max_reasks
        self.label = backend.name
        self.immediate = backend.immediate

    async def decide(self, agent: PopulationAgent, situation: Any) -> Decision:
        model = agent.model
        game = model.scenario
        usage = model.usage.by_backend.get(self.label) or model.usage.backend(self.label)
        request = Request(messages=game.messages(situation), sampling=self.sampling, seed=agent.next_call_seed(),
                          options=situation.options, replicate=model.replicate)
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
                for kind in getattr(error, "failed_attempts", ()):  # retried before giving up
                    usage.errors[kind] = usage.errors.get(kind, 0) + 1
                    usage.retries += 1
                calls.append(CallRecord(agent.index, attempt, context if attempt == 0 else "", "", None,
                                        latency_us=int((perf_counter() - started) * 1e6), error=error.kind))
                break
            latency_us = int((perf_counter() - started) * 1e6)
            usage.in_flight -= 1
            parsed = game.parse(completion.text, situation)
            usage.count(completion.prompt_tokens, completion.completion_tokens, latency_us)
            if completion.cost_usd or completion.cached or completion.retries:
                usage.answered(completion)
            calls.append(CallRecord(agent.index, attempt, context if attempt == 0 else "", completion.text,
                                    parsed.action, completion.prompt_tokens, completion.completion_tokens,
                                    latency_us, parsed.problem, completion.option_probabilities))
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
        unit = unit_uniforms(agent.next_call_seed(), 1)[0]
        return Decision(game.fallback(situation, unit), calls, fallback=True)


class CommittedPolicy:
    """Always plays the same action, whatever happened: the committed minority."""

    kind = "committed"
    immediate = True

    def __init__(self, action: str) -> None:
        self.action = action
        self.label = f"committed:{action}"

    async def decide(self, agent: PopulationAgent, situation: Any) -> Decision:
        return Decision(self.action)


class RulePolicy:
    """A rule of theory (best response, a minimal naming game rule): a function of the
    situation and a uniform draw derived from the run's seed."""

    kind = "rule"
    immediate = True

    def __init__(self, label: str, rule: Callable[[Any, float], str | None]) -> None:
        self.label = label
        self.rule = rule

    async def decide(self, agent: PopulationAgent, situation: Any) -> Decision:
        unit = unit_uniforms(agent.next_call_seed(), 1)[0]
        return Decision(self.rule(situation, unit))
