"""Accounting at the outside of every backend's stack: each answer's cost, and the
experiment's budget.

`AccountedModel` prices each answer that reached the backend (a cache hit costs nothing) and
charges it to the shared `Budget`. When `--max-calls` or `--max-cost` is reached the budget
tells every run (through the callbacks the runner registers) to stop opening encounters;
encounters already in flight finish and are recorded, so the overshoot is bounded by the
calls in flight. Per-run, per-backend counts (calls, tokens, cost, cache hits, retries,
errors, latency) are kept by the policy in `agentsim.usage`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import ParameterError
from .base import Completion, LanguageModel, Request
from .prices import cost_usd


@dataclass(kw_only=True)
class Budget:
    max_calls: int | None = None
    max_cost_usd: float | None = None
    calls: int = 0
    cost_usd: float = 0.0
    reason: str | None = None
    listeners: list[Callable[[str], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.max_calls is not None and self.max_calls < 1:
            raise ParameterError(f"--max-calls must be at least 1 (got {self.max_calls})")
        if self.max_cost_usd is not None and self.max_cost_usd <= 0:
            raise ParameterError(f"--max-cost must be > 0 dollars (got {self.max_cost_usd})")

    def charge(self, cost: float) -> None:
        self.calls += 1
        self.cost_usd += cost
        if self.reason is None:
            if self.max_calls is not None and self.calls >= self.max_calls:
                self._exhausted("max_calls")
            elif self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
                self._exhausted("max_cost")

    def _exhausted(self, reason: str) -> None:
        self.reason = reason
        for listener in self.listeners:
            listener(reason)

    def on_exhausted(self, listener: Callable[[str], None]) -> None:
        self.listeners.append(listener)
        if self.reason is not None:
            listener(self.reason)


class AccountedModel:
    def __init__(self, inner: LanguageModel, budget: Budget, *, model: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.immediate = inner.immediate
        self.budget = budget
        self.model = model

    async def complete(self, request: Request) -> Completion:
        completion = await self.inner.complete(request)
        if not completion.cached:
            completion.cost_usd = cost_usd(completion.model or self.model, completion.prompt_tokens,
                                           completion.completion_tokens)
            self.budget.charge(completion.cost_usd)
        return completion

    async def aclose(self) -> None:
        await self.inner.aclose()
