"""Accounting: each answer's cost, and the experiment's budget.

`--max-calls` and `--max-cost` are hard limits on what is sent. The budget is checked where a
request leaves for the server (health.BackendGuard, inside the limiter and the retries, so
every attempt counts and a cache hit costs nothing): a request that would pass the budget is
not sent, and `BudgetExhausted` stops every run, keeping its open encounters so that `--resume`
with a higher budget continues exactly. Before a request is sent its cost is reserved at the
most it can cost (the prompt's estimated tokens and the whole `max_tokens` at the model's
price); once answered, the reservation is replaced by what it cost. The budget counts the
whole experiment: a resumed one starts from what was spent before (`spent`). A process killed
with -9 cannot say what it spent, so the budget writes ahead (`journal`): before the requests
of the next 1% of the budget leave, it records them as spent; a resume after kill -9 starts
from that mark, which may count up to 1% more than was sent but never less.

Token counts a server leaves out or reports below zero are counted from the request's and
the reply's text instead (`count_tokens`, four characters a token), and a model the price
table does not know is refused at start-up under `--max-cost` (llm/prices.py): the budget
never takes anything for free that it cannot check.

`AccountedModel` puts each answer's cost on the completion for the per-run usage counts
(`agentsim.usage`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import BudgetExhausted, ParameterError
from .base import Completion, LanguageModel, Request, estimate_tokens
from .prices import FREE, cost_usd, price_for, priced

if TYPE_CHECKING:
    from .health import BackendHealth


def estimate_cost(model: str, request: Request) -> float:
    """What `request` can cost at most: the prompt's estimated tokens at the dearest way the
    model's input is billed (a prompt-cache write costs more than plain input) and the whole
    `max_tokens` at its output price."""
    price = price_for(model) or FREE
    if price.free:
        return 0.0
    prompt_tokens = sum(estimate_tokens(message.content) for message in request.messages)
    return (price.most_per_input_token() * prompt_tokens + price.output_usd_per_mtok * request.sampling.max_tokens) / 1e6


def answer_cost(model: str, completion: Completion) -> float:
    """What an answer cost as billed: its tokens (cached and cache-writing input at their own
    prices) at the price of the model that answered, or of `model` (the spec's) when the
    server names one that has no price."""
    return cost_usd(completion.model if completion.model and priced(completion.model) else model,
                    completion.prompt_tokens, completion.completion_tokens,
                    cached_tokens=completion.cached_prompt_tokens, cache_write_tokens=completion.cache_write_tokens)


def count_tokens(request: Request, completion: Completion) -> bool:
    """Replace token counts a server left out or reported below zero by the count of the
    request's and the reply's text (four characters a token); returns whether it estimated.
    A budget trusts no count it cannot check: negative usage would buy requests for free."""
    estimated = False
    if not isinstance(completion.prompt_tokens, int) or completion.prompt_tokens <= 0:
        completion.prompt_tokens = sum(estimate_tokens(message.content) for message in request.messages)
        estimated = True
    if not isinstance(completion.completion_tokens, int) or completion.completion_tokens < 0 or (
            completion.completion_tokens == 0 and completion.text):
        completion.completion_tokens = estimate_tokens(completion.text)
        estimated = True
    return estimated


@dataclass(kw_only=True)
class Budget:
    max_calls: int | None = None
    max_cost_usd: float | None = None
    calls: int = 0  # requests sent (reserved), retries included
    cost_usd: float = 0.0  # spent, plus what requests in flight may still cost
    reason: str | None = None
    # Writes `spent()`-shaped marks where a kill -9 cannot lose them (the experiment's store).
    journal: Callable[[dict[str, float]], None] | None = None
    journalled: dict[str, float] = field(default_factory=lambda: {"calls": 0, "cost_usd": 0.0})

    def __post_init__(self) -> None:
        if self.max_calls is not None and not 1 <= self.max_calls <= 10**12:
            raise ParameterError(f"--max-calls must be between 1 and 10^12 (got {self.max_calls})")
        if self.max_cost_usd is not None and not (math.isfinite(self.max_cost_usd) and self.max_cost_usd > 0):
            raise ParameterError(f"--max-cost must be a finite number of dollars > 0 (got {self.max_cost_usd})")

    @property
    def limited(self) -> bool:
        return self.max_calls is not None or self.max_cost_usd is not None

    def reserve(self, cost: float) -> None:
        """Count a request about to be sent, or refuse it if it would pass the budget."""
        if self.max_calls is not None and self.calls + 1 > self.max_calls:
            self._refuse("max_calls", f"--max-calls {self.max_calls} reached ({self.calls} requests sent)")
        if self.max_cost_usd is not None and self.cost_usd + cost > self.max_cost_usd:
            self._refuse("max_cost", f"--max-cost {self.max_cost_usd:g} reached (${self.cost_usd:.4f} spent or "
                                     f"reserved, the next request may cost ${cost:.4f})")
        self.calls += 1
        self.cost_usd += cost
        if self.journal is not None and self._past_the_journal():
            self.journalled = {
                "calls": min(self.max_calls, self.calls + math.ceil(self.max_calls / 100)) if self.max_calls else self.calls,
                "cost_usd": round(self.cost_usd + (self.max_cost_usd / 100 if self.max_cost_usd else 0.0), 6),
            }
            self.journal(self.journalled)

    async def admit(self, cost: float) -> None:
        """`reserve`, awaitable: a Ray sweep's workers ask the cluster's one budget
        (agentsim/distributed/limits.py), which answers over the network."""
        self.reserve(cost)

    def _past_the_journal(self) -> bool:
        if self.max_calls is not None and self.calls > self.journalled["calls"]:
            return True
        return self.max_cost_usd is not None and self.cost_usd > self.journalled["cost_usd"]

    def release(self, cost: float) -> None:
        """A reserved request failed before the server did any work worth billing."""
        self.cost_usd -= cost

    def settle(self, reserved: float, actual: float) -> None:
        self.cost_usd += actual - reserved

    def _refuse(self, reason: str, message: str) -> None:
        self.reason = self.reason or reason
        raise BudgetExhausted(message, reason=reason)

    def spent(self) -> dict[str, float]:
        return {"calls": self.calls, "cost_usd": round(self.cost_usd, 6)}

    def restore(self, spent: dict[str, float]) -> None:
        """Start from what an earlier session of the same experiment spent."""
        self.calls = int(spent.get("calls", 0))
        self.cost_usd = float(spent.get("cost_usd", 0.0))
        self.journalled = self.spent()


class AccountedModel:
    def __init__(self, inner: LanguageModel, budget: Budget, *, model: str, health: BackendHealth | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.immediate = inner.immediate
        self.budget = budget
        self.model = model
        self.health = health  # the backend's BackendHealth: the policy reports its decisions to it

    async def complete(self, request: Request) -> Completion:
        completion = await self.inner.complete(request)
        if not completion.cached and not completion.batched:  # a batch's answer was priced when it came back
            completion.cost_usd = answer_cost(self.model, completion)
        return completion

    async def aclose(self) -> None:
        await self.inner.aclose()
