"""Accounting: each answer's cost, and the experiment's budget.

`--max-calls` and `--max-cost` are hard limits on what is sent. The budget is checked where a
request leaves for the server (health.BackendGuard, inside the limiter and the retries, so
every attempt counts and a cache hit costs nothing): a request that would pass the budget is
not sent, and `BudgetExhausted` stops every run, keeping its open encounters so that `--resume`
with a higher budget continues exactly. Before a request is sent its cost is reserved at the
most it can cost (`reservation`): its prompt counted so that no tokenizer counts more (a
token is at least one byte of text, plus the chat format's tokens around each message;
four characters a token undercounts OpenAI's o200k by a tenth), every input token at the
dearest way input is billed, and the whole `max_tokens`, at the rates of the tier that many
input tokens fall in. Once answered, the reservation is replaced by what it cost. A request
that leaves no answer saying it was not billed (cancelled in flight when the budget or an
interrupt stops the runs, a timeout, a dropped connection, an answer that cannot be read)
keeps its reservation as spent: the provider may have billed it, and the budget holds at the
provider. An error answer (429, 5xx, 4xx) releases it. A request that does not fit beside the
reservations of the requests in flight waits for them to settle (each is reserved at the
most it may cost, most cost less) and is refused only if it does not fit once they have: the
runs stop when what is left of the budget is less than one request's reservation. The budget counts the whole
experiment: a resumed one starts from what was spent before (`spent`). A process killed with
-9 cannot say what it spent, so the budget writes ahead (`journal`): before the requests of
the next 1% of the budget leave, it records them as spent; a resume after kill -9 starts
from that mark, which may count up to 1% more than was sent but never less.

Token counts a server leaves out or reports below zero are counted from the request's and
the reply's text instead (`count_tokens`, as the reservation counts them), and a model the
price table does not know is refused at start-up under `--max-cost` (llm/prices.py): the
budget never takes anything for free that it cannot check.

`AccountedModel` puts each answer's cost on the completion for the per-run usage counts
(`agentsim.usage`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import BudgetExhausted, ParameterError
from .base import Completion, LanguageModel, Request, prompt_tokens_at_most, tokens_at_most
from .prices import FREE, Price, price_for, priced

if TYPE_CHECKING:
    from .health import BackendHealth

# Error kinds that are the provider's answer that it did not do the work (a status it sent);
# any other failure leaves the request possibly billed, and its reservation is kept as spent.
UNBILLED_KINDS = frozenset({"rate_limited", "overloaded", "server", "bad_request", "auth", "config"})


def reservation(price: Price, request: Request) -> float:
    """The most `request` can be billed: its prompt counted so that no tokenizer counts more,
    every input token at the dearest way input is billed (a prompt-cache write costs more than
    plain input) and the whole `max_tokens` at the output price, at the tier of that many
    input tokens."""
    if price.free:
        return 0.0
    return price.most(prompt_tokens_at_most(request.messages), request.sampling.max_tokens)


def estimate_cost(model: str, request: Request, providers: tuple[str, ...] | None = None) -> float:
    """`reservation` at `model`'s price (0 for a model with none)."""
    return reservation(price_for(model, providers) or FREE, request)


def answer_cost(model: str, completion: Completion, providers: tuple[str, ...] | None = None) -> float:
    """What an answer cost as billed: its tokens (cached and cache-writing input at their own
    prices) at the rates of the tier its input falls in, at the price of the model that
    answered, or of `model` (the spec's) when the server names one that has no price."""
    answered = completion.model if completion.model and priced(completion.model, providers) else model
    return (price_for(answered, providers) or FREE).cost(
        completion.prompt_tokens, completion.completion_tokens, cached_tokens=completion.cached_prompt_tokens,
        cache_write_tokens=completion.cache_write_tokens)


def count_tokens(request: Request, completion: Completion) -> bool:
    """Replace token counts a server left out or reported below zero by a count of the
    request's and the reply's text that no tokenizer exceeds; returns whether it counted.
    A budget trusts no count it cannot check: negative usage would buy requests for free."""
    estimated = False
    if not isinstance(completion.prompt_tokens, int) or completion.prompt_tokens <= 0:
        completion.prompt_tokens = prompt_tokens_at_most(request.messages)
        estimated = True
    if not isinstance(completion.completion_tokens, int) or completion.completion_tokens < 0 or (
            completion.completion_tokens == 0 and completion.text):
        completion.completion_tokens = tokens_at_most(completion.text)
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
    in_flight: int = field(default=0, repr=False)  # requests `admit` let through, not settled yet
    _settled: asyncio.Event | None = field(default=None, repr=False)

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
        self.reserve_all((cost,))

    def reserve_all(self, costs: Sequence[float]) -> None:
        """Count requests about to be sent together (a batch), or refuse them all, reserving
        nothing, if together they would pass the budget."""
        refused = self._refusal(costs)
        if refused is not None:
            self._refuse(*refused)
        self.calls += len(costs)
        self.cost_usd += math.fsum(costs)
        if self.journal is not None and self._past_the_journal():
            self.journalled = {
                "calls": min(self.max_calls, self.calls + math.ceil(self.max_calls / 100)) if self.max_calls else self.calls,
                "cost_usd": round(self.cost_usd + (self.max_cost_usd / 100 if self.max_cost_usd else 0.0), 6),
            }
            self.journal(self.journalled)

    def _refusal(self, costs: Sequence[float]) -> tuple[str, str] | None:
        """Why `costs` would pass the budget (reason, message), or None if they fit."""
        total, many = math.fsum(costs), len(costs) > 1
        if self.max_calls is not None and self.calls + len(costs) > self.max_calls:
            return "max_calls", (f"--max-calls {self.max_calls} cannot hold a batch of {len(costs)} requests "
                                 f"({self.calls} sent before)" if many else
                                 f"--max-calls {self.max_calls} reached ({self.calls} requests sent)")
        if self.max_cost_usd is not None and self.cost_usd + total > self.max_cost_usd:
            return "max_cost", (f"--max-cost {self.max_cost_usd:g} cannot hold a batch of {len(costs)} requests that "
                                f"may cost ${total:.4f} (${self.cost_usd:.4f} spent or reserved before)" if many else
                                f"--max-cost {self.max_cost_usd:g} reached (${self.cost_usd:.4f} spent or reserved, "
                                f"the next request may cost ${total:.4f})")
        return None

    async def admit(self, cost: float) -> None:
        """`reserve` a request about to be sent, awaiting the requests in flight first if what
        they reserved (each at the most it may cost) is all that keeps this one out: refused
        only if it cannot fit once they are settled. `finished` says one is. (A Ray sweep's
        workers ask the cluster's one budget instead, agentsim/distributed/limits.py.)"""
        while self.in_flight and (refused := self._refusal((cost,))) is not None and refused[0] == "max_cost":
            if self._settled is None:
                self._settled = asyncio.Event()
            self._settled.clear()
            await self._settled.wait()
        self.reserve(cost)
        self.in_flight += 1

    def finished(self) -> None:
        """A request `admit` let through is settled, released or kept as spent."""
        self.in_flight = max(0, self.in_flight - 1)
        if self._settled is not None:
            self._settled.set()

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
    def __init__(self, inner: LanguageModel, budget: Budget, *, model: str, health: BackendHealth | None = None,
                 prices: tuple[str, ...] | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.immediate = inner.immediate
        self.budget = budget
        self.model = model
        self.prices = prices  # the genai-prices providers that price the model (llm/providers.py)
        self.health = health  # the backend's BackendHealth: the policy reports its decisions to it

    async def complete(self, request: Request) -> Completion:
        completion = await self.inner.complete(request)
        if not completion.cached and not completion.batched:  # a batch's answer was priced when it came back
            completion.cost_usd = answer_cost(self.model, completion, self.prices)
        if completion.probe is not None:  # the start-up probe sent before it, as billed
            completion.probe.cost_usd = answer_cost(self.model, completion.probe, self.prices)
        return completion

    async def aclose(self) -> None:
        await self.inner.aclose()
