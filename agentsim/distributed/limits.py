"""The backends' limits and the budget, held once for a whole Ray cluster.

`ClusterLimiter` is a Ray actor holding one `LimitedModel` per backend: a worker's call
asks it for a slot (and the rate limits) before the request leaves, and tells it how the
call ended, so the in-flight cap, `--rpm` and `--tpm` hold across every worker, and the cap
adapts to 429s and overload as it does in one process. Each grant is a ticket held by its
run's attempt (`owner`): when a worker dies, the driver `forget`s its tickets, so a dead
worker's slots come back. `ClusterBudget` is a Ray actor holding the experiment's `Budget`;
it writes the budget's journal (what kill -9 cannot lose) into the store's file itself.

A worker's side: `ClusterLimitedModel`, in the stack where `LimitedModel` is in process
(llm/stack.py), and `ClusterBudgetClient`, the `Budget` that BackendGuard reserves in.
Each call costs two small actor calls (a grant awaited, an end not awaited): about a
millisecond on one machine, a network round trip on a cluster.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BackendError, BudgetExhausted
from ..llm.accounting import Budget
from ..llm.base import Completion, LanguageModel, Request, estimate_tokens
from ..llm.limiter import LimitedModel, Limits

# How a call ended, as the worker reports it to the limiter.
ANSWERED, FAILED, ABANDONED = "answered", "failed", "abandoned"


class _Nowhere:
    """The limiter actor's `LimitedModel`s admit calls and never send one."""

    immediate = False

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, request: Request) -> Completion:  # pragma: no cover (never called)
        raise AssertionError("the cluster limiter admits calls; workers send them")

    async def aclose(self) -> None:
        return None


@dataclass
class _Ticket:
    label: str
    owner: str
    started: float
    tokens: int


class ClusterLimiter:
    """A Ray actor (made with `ray.remote(ClusterLimiter)`): every backend's limiter."""

    def __init__(self, limits: dict[str, Limits]) -> None:
        self.limiters = {label: LimitedModel(_Nowhere(label), each) for label, each in limits.items()}
        self.held: dict[str, _Ticket] = {}
        self.abandoned: set[str] = set()
        self.forgotten: set[str] = set()  # owners whose worker died: what they still wait for is never sent

    async def acquire(self, label: str, ticket: str, owner: str, tokens: int) -> bool:
        """Wait until a call of `label` may be sent; False when it was abandoned meanwhile, or
        its worker died (was forgotten)."""
        limiter = self.limiters[label]
        await limiter.admit(tokens)
        if ticket in self.abandoned or owner in self.forgotten:
            self.abandoned.discard(ticket)
            limiter.finish(time.monotonic(), tokens, None)
            return False
        self.held[ticket] = _Ticket(label, owner, time.monotonic(), tokens)
        return True

    def release(self, ticket: str, outcome: tuple[Any, ...]) -> None:
        held = self.held.pop(ticket, None)
        if held is None:
            return
        limiter = self.limiters[held.label]
        if outcome[0] == ANSWERED:
            limiter.finish(held.started, held.tokens, Completion(text="", signals=outcome[1] or None))
        elif outcome[0] == FAILED:
            limiter.finish(held.started, held.tokens, BackendError("", kind=outcome[1], retry_after=outcome[2]))
        else:
            limiter.finish(held.started, held.tokens, None)

    def abandon(self, ticket: str) -> None:
        """The caller stopped waiting (cancelled): give the slot back, now or once granted."""
        if ticket in self.held:
            self.release(ticket, (ABANDONED,))
        else:
            self.abandoned.add(ticket)

    def forget(self, owner: str) -> int:
        """Give back every slot `owner` (a run's attempt on a worker that died) held, and each
        slot its calls still waiting are granted later (Ray does not cancel them)."""
        self.forgotten.add(owner)
        tickets = [ticket for ticket, held in self.held.items() if held.owner == owner]
        for ticket in tickets:
            self.release(ticket, (ABANDONED,))
        return len(tickets)

    def stats(self) -> dict[str, dict[str, Any]]:
        return {label: {"max_in_flight_seen": limiter.max_seen, "cap": limiter.limits.max_in_flight,
                        "final_limit": round(limiter.limit, 2), "cuts": limiter.cuts}
                for label, limiter in self.limiters.items()}


class ClusterLimitedModel:
    """A worker's limiter layer: each attempt is admitted by the cluster's `ClusterLimiter`."""

    _tickets = itertools.count()

    def __init__(self, inner: LanguageModel, limits: Limits, *, limiter: Any, label: str, owner: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.immediate = inner.immediate
        self.limits = limits
        self.limiter = limiter
        self.label = label
        self.owner = owner

    async def complete(self, request: Request) -> Completion:
        tokens = (sum(estimate_tokens(message.content) for message in request.messages) + request.sampling.max_tokens
                  if self.limits.tpm else 0)
        ticket = f"{self.owner}/{next(self._tickets)}"
        try:
            granted = await self.limiter.acquire.remote(self.label, ticket, self.owner, tokens)
        except asyncio.CancelledError:
            self.limiter.abandon.remote(ticket)
            raise
        if not granted:  # pragma: no cover (only a ticket abandoned by its own caller)
            raise asyncio.CancelledError
        try:
            completion = await self.inner.complete(request)
        except BackendError as error:
            self.limiter.release.remote(ticket, (FAILED, error.kind, error.retry_after))
            raise
        except BaseException:
            self.limiter.release.remote(ticket, (ABANDONED,))
            raise
        self.limiter.release.remote(ticket, (ANSWERED, dict(completion.signals or {})))
        return completion

    async def aclose(self) -> None:
        await self.inner.aclose()


class ClusterBudget:
    """A Ray actor (made with `ray.remote(ClusterBudget)`): the experiment's one budget. It
    writes its journal into `database` (the driver's store file, on the driver's node)."""

    def __init__(self, *, max_calls: int | None, max_cost_usd: float | None, spent: dict[str, float],
                 database: str) -> None:
        self.budget = Budget(max_calls=max_calls, max_cost_usd=max_cost_usd)
        self.budget.restore(spent)
        self.database = Path(database)
        self.budget.journal = self._journal

    def _journal(self, spent: dict[str, float]) -> None:
        connection = sqlite3.connect(self.database, timeout=30, isolation_level=None)
        try:
            connection.execute("INSERT OR REPLACE INTO experiment VALUES ('budget_spent', ?)",
                               (json.dumps(spent, sort_keys=True),))
        finally:
            connection.close()

    def reserve(self, cost: float) -> tuple[str, str] | None:
        """None if the request may be sent (it is counted), else (reason, message)."""
        try:
            self.budget.reserve(cost)
        except BudgetExhausted as refused:
            return refused.reason, str(refused)
        return None

    def release(self, cost: float) -> None:
        self.budget.release(cost)

    def settle(self, reserved: float, actual: float) -> None:
        self.budget.settle(reserved, actual)

    def state(self) -> dict[str, Any]:
        return {**self.budget.spent(), "reason": self.budget.reason}


class ClusterBudgetClient(Budget):
    """A worker's view of the cluster's budget: reserving asks the `ClusterBudget` actor."""

    def __init__(self, actor: Any, *, max_calls: int | None, max_cost_usd: float | None) -> None:
        super().__init__(max_calls=max_calls, max_cost_usd=max_cost_usd)
        self.actor = actor

    async def admit(self, cost: float) -> None:
        refused = await self.actor.reserve.remote(cost)
        if refused is not None:
            self.reason = self.reason or refused[0]
            raise BudgetExhausted(refused[1], reason=refused[0])

    def reserve(self, cost: float) -> None:  # pragma: no cover (BackendGuard admits; nothing here reserves synchronously)
        raise AssertionError("a worker's budget is reserved with `await admit`")

    def release(self, cost: float) -> None:
        self.actor.release.remote(cost)

    def settle(self, reserved: float, actual: float) -> None:
        self.actor.settle.remote(reserved, actual)
