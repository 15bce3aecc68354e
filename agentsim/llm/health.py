"""Run health: a backend that cannot serve the run stops it, loudly, instead of turning every
decision into a recorded fallback.

Each check ends the experiment with `BackendFailedError` (status `failed`, one line naming the
backend and the fix, exit code 3; open encounters are kept, so `--resume` continues once the
server is fixed):

- **a start-up probe** (`StartupProbe`, outside the limiter, so it keeps --rpm): the first
  request a backend would send (the first cache miss) is preceded by one tiny request
  (`max_tokens` 1) with a short deadline. Nothing listening, a server that answers every
  request with 5xx or never answers: the run stops within the probe's deadline instead of
  retrying for minutes. A 429 or an overloaded answer proves the server is there. A rerun
  answered from the cache sends nothing, probe included.
- **a call that fails for good** (`call_failed`): its retries or its deadline spent, the
  backend has failed for longer than retries cover. Its decision is not taken (the policy
  raises), so its encounter is not recorded and a resume asks it again.
- **a circuit breaker** on requests (attempts, retries included): `max_consecutive_failures`
  failed in a row, whatever their kind, or more than `max_failure_share` of the last `window`.
- **a fallback breaker** on decisions: more than `max_fallback_share` of the last `window`
  decisions falling back (a server that answers, but with replies the game cannot read: a
  wrong chat template, an echo, a base model). The runs it stops commit nothing more (the
  encounters that tripped it are asked again by `--resume`), and the recent unreadable replies
  are taken out of the response cache, so the resumed run asks the fixed server, not the cache.

Shares are judged before their window fills when the evidence is overwhelming (`Shares.over`),
and the runner judges each run's fallback share at its end (`fallback_line`), so a short run
fails as surely as a long one.

A request the server will never accept (HTTP 4xx other than 408 and 429) stops the run at once
(faults.error_for_status). Warnings (the first error of each kind, a rising fallback share,
token counts the server does not report) go to `on_warning`: the runner sends them to the log
and the live view.

`BackendGuard` is the layer of the stack that sees every request just before it is sent: it
checks the breaker and reserves the request in the budget (accounting.Budget).
"""

from __future__ import annotations

import asyncio
import collections
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import BackendError, BackendFailedError, ParameterError
from ..secrets import redact
from .accounting import UNBILLED_KINDS, Budget, answer_cost, count_tokens, reservation
from .base import Completion, LanguageModel, Message, Request, Sampling
from .prices import FREE, price_for

# What to do about each kind of failure, for the one line the user reads.
FIXES = {
    "connection": "nothing answers there: start the server, or fix the URL (--base-url or the backend spec)",
    "timeout": "no answer within --timeout: the server is stuck or overloaded; check it, or raise --timeout "
               "or lower --max-in-flight",
    "server": "the server answers with errors (HTTP 5xx): look at its log",
    "overloaded": "the server keeps answering that it is overloaded: lower --max-in-flight or --rpm",
    "rate_limited": "the API keeps refusing with HTTP 429: lower --rpm / --max-in-flight, or check the account's quota",
    "malformed": "the answers are not the provider's API: check that the URL serves it",
    "bad_request": "the server refuses the request itself: check the model name and the sampling parameters",
    "error": "check the server and its log",
}
# Failures that say the server is there and busy: never a failed probe.
_ALIVE = frozenset({"rate_limited", "overloaded"})
_PROBE = Request(messages=(Message("user", "Reply with the word OK."),), sampling=Sampling(temperature=0.0, max_tokens=1),
                 seed=0)


@dataclass(frozen=True, kw_only=True)
class HealthPolicy:
    probe: bool = True
    probe_deadline_s: float = 45.0
    max_consecutive_failures: int = 20
    window: int = 100
    max_failure_share: float = 0.5
    max_fallback_share: float = 0.5

    def __post_init__(self) -> None:
        if not math.isfinite(self.probe_deadline_s) or self.probe_deadline_s <= 0:
            raise ParameterError(f"the probe deadline must be a finite number of seconds > 0 (got {self.probe_deadline_s})")
        if self.max_consecutive_failures < 1:
            raise ParameterError(f"--max-consecutive-failures must be at least 1 (got {self.max_consecutive_failures})")
        if not 1 <= self.window <= 1_000_000:
            raise ParameterError(f"--health-window must be between 1 and 1000000 (got {self.window})")
        for flag, value in (("--max-failure-share", self.max_failure_share),
                            ("--max-fallback-share", self.max_fallback_share)):
            if not (math.isfinite(value) and 0 < value <= 1):
                raise ParameterError(f"{flag} must be a share in (0, 1] (got {value}); 1 turns the check off")


class Shares:
    """The share of `True` among the last `size` observations, and whether it is over a limit.

    Over means: the whole window is over it, or, before the window fills, the evidence is
    already overwhelming: at least `MIN_EVIDENCE` observations whose share's lower confidence
    bound (Wilson, z = 3: about one chance in 700 of a share at the limit looking like this)
    is above it. A short run whose every decision fell back fails after ten, and a long one
    does not wait for a hundred, while a share below the limit almost never trips early."""

    MIN_EVIDENCE = 10
    Z = 3.0

    def __init__(self, size: int) -> None:
        self.size = size
        self.values: collections.deque[bool] = collections.deque(maxlen=size)
        self.count = 0

    def add(self, value: bool) -> float:
        if len(self.values) == self.size:
            self.count -= self.values[0]
        self.values.append(value)
        self.count += value
        return self.count / len(self.values)

    @property
    def full(self) -> bool:
        return len(self.values) == self.size

    def over(self, limit: float) -> bool:
        seen = len(self.values)
        if limit >= 1 or not seen:
            return False
        if self.full:
            return self.count / seen > limit
        return seen >= self.MIN_EVIDENCE and wilson_lower(self.count, seen, self.Z) > limit


def wilson_lower(successes: int, trials: int, z: float) -> float:
    """The lower bound of the Wilson score interval of a binomial share."""
    share = successes / trials
    denominator = 1 + z * z / trials
    centre = share + z * z / (2 * trials)
    margin = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials))
    return (centre - margin) / denominator


class BackendHealth:
    """One backend's health, shared by every run of the experiment."""

    def __init__(self, name: str, policy: HealthPolicy, on_warning: Callable[[str], None] | None = None) -> None:
        self.name = redact(name)
        self.policy = policy
        self.on_warning = on_warning
        self.tripped: str | None = None
        self.consecutive = 0
        self.kinds: collections.Counter[str] = collections.Counter()  # failed attempts by kind
        self.requests = Shares(policy.window)
        self.decisions = Shares(policy.window)
        self.warned_fallbacks = False
        self.warned_usage = False
        self.by_fallbacks = False  # the breaker that tripped was the fallback breaker
        # How to forget each recent unreadable reply in the response cache: when fallbacks stop
        # the run, a resume must ask those calls again, not be served the same replies.
        self.unreadable: collections.deque[Callable[[], None]] = collections.deque(maxlen=policy.window * 8)

    def check(self) -> None:
        if self.tripped is not None:
            raise BackendFailedError(self.tripped, fallbacks=self.by_fallbacks)

    def trip(self, message: str, *, fallbacks: bool = False) -> BackendFailedError:
        if self.tripped is None:
            self.tripped = message
            self.by_fallbacks = fallbacks
        return BackendFailedError(self.tripped, fallbacks=self.by_fallbacks)

    def unreadable_reply(self, forget: Callable[[], None]) -> None:
        """A reply the game could not read; `forget` takes it out of the response cache."""
        self.unreadable.append(forget)

    def forget_unreadable(self) -> None:
        """Take the recent unreadable replies out of the response cache (the run stops for
        its fallbacks: a resumed run asks those calls again)."""
        while self.unreadable:
            self.unreadable.popleft()()

    # --- observations ------------------------------------------------------------------
    def attempt_succeeded(self) -> None:
        self.consecutive = 0
        self.requests.add(False)

    def attempt_failed(self, error: BackendError) -> None:
        self.consecutive += 1
        self.kinds[error.kind] += 1
        self.requests.add(True)
        if self.kinds[error.kind] == 1:
            self.warn(f"backend '{self.name}': {redact(str(error))}; retrying")
        if self.consecutive >= self.policy.max_consecutive_failures:
            raise self.trip(self._line(f"{self.consecutive} requests in a row failed", error.kind))
        if self.requests.over(self.policy.max_failure_share):
            raise self.trip(self._line(f"{self.requests.count} of the last {len(self.requests.values)} requests failed "
                                       f"(over --max-failure-share {self.policy.max_failure_share:g})", error.kind))

    def call_failed(self, error: BackendError) -> BackendFailedError:
        """A call failed for good (its retries spent, or its --deadline passed): the backend
        cannot serve the run now. The decision is not taken and its encounter not recorded,
        so the run stops before it and `--resume` asks it again once the server is fixed."""
        return self.trip(f"backend '{self.name}' failed: {redact(str(error))}; "
                         f"{FIXES.get(error.kind, FIXES['error'])}")

    def decided(self, fallback: bool) -> None:
        """A language-model decision is taken; `fallback` when no reply gave it."""
        share = self.decisions.add(fallback)
        if not fallback:
            return
        limit = self.policy.max_fallback_share
        if not self.warned_fallbacks and len(self.decisions.values) >= 10 and share > limit / 2:
            self.warned_fallbacks = True
            self.warn(f"backend '{self.name}': {share:.0%} of recent decisions fell back "
                      f"(the run stops above {limit:.0%})")
        if self.decisions.over(limit):
            error = self.trip(fallback_line(self.name, self.decisions.count, len(self.decisions.values), limit,
                                            recent=True), fallbacks=True)
            self.forget_unreadable()
            raise error

    def warn(self, message: str) -> None:
        if self.on_warning is not None:
            self.on_warning(message)

    def _line(self, what: str, kind: str) -> str:
        return f"backend '{self.name}' failed: {what}, mostly {kind}; {FIXES.get(kind, FIXES['error'])}"


def fallback_line(name: str, fallbacks: int, decisions: int, limit: float, *, recent: bool) -> str:
    """The one line of a backend whose decisions are mostly fallbacks."""
    which = "of the last" if recent else "of the run's"
    return (f"backend '{name}' failed: {fallbacks} {which} {decisions} decisions fell back (replies the game cannot "
            f"read, over --max-fallback-share {limit:g}); check the model and its chat template, or raise "
            f"--max-fallback-share")


class BackendGuard:
    """The last layer before the provider: every request (every attempt) passes the breaker
    and the budget, and its outcome feeds the breaker. A request reserved in the budget that
    leaves no answer saying it was not billed (cancelled in flight, a timeout, a dropped
    connection, an unreadable answer) stays counted as spent (llm/accounting.py)."""

    def __init__(self, inner: LanguageModel, health: BackendHealth, budget: Budget, *, model: str,
                 prices: tuple[str, ...] | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.immediate = inner.immediate
        self.health = health
        self.budget = budget
        self.model = model
        self.prices = prices  # the genai-prices providers that price the model (llm/providers.py)

    async def complete(self, request: Request) -> Completion:
        self.health.check()
        estimate = reservation(price_for(self.model, self.prices) or FREE, request) if self.budget.limited else 0.0
        await self.budget.admit(estimate)
        try:
            try:
                completion = await self.inner.complete(request)
            except BackendError as error:
                if error.kind in UNBILLED_KINDS:  # the provider's answer says it did no billed work
                    self.budget.release(estimate)
                if error.kind == "bad_request":
                    raise self.health.trip(f"backend '{self.health.name}' refused a request: {redact(str(error))}; "
                                           f"{FIXES['bad_request']}") from None
                self.health.attempt_failed(error)
                raise
            except Exception:
                self.budget.release(estimate)  # a failure on this side, before any request left (no answer to bill)
                raise
            # (cancelled in flight: the reservation stays spent, the provider may bill the request)
            if count_tokens(request, completion) and not self.health.warned_usage:
                self.health.warned_usage = True
                self.health.warn(f"backend '{self.health.name}' reports no usable token counts (absent or negative); "
                                 f"agentsim counts them from the text as a bound (a byte a token)")
            self.budget.settle(estimate, answer_cost(self.model, completion, self.prices))
        finally:
            self.budget.finished()
        self.health.attempt_succeeded()
        return completion

    async def aclose(self) -> None:
        await self.inner.aclose()


class StartupProbe:
    """A backend's first request is preceded by one tiny request, a few attempts within the
    probe's deadline. It sits outside the limiter, so the probe is admitted like any request
    (a slot, its turn under --rpm and --tpm) and the requests waiting for it are admitted
    only once it has answered."""

    def __init__(self, inner: LanguageModel, health: BackendHealth, *, deadline_s: float) -> None:
        self.inner = inner
        self.name = inner.name
        self.immediate = inner.immediate
        self.health = health
        self.deadline_s = deadline_s
        self._probed = False
        self._lock = asyncio.Lock()
        self._unreported: Completion | None = None  # the probe's answer, until an answer carries it

    async def complete(self, request: Request) -> Completion:
        if not self._probed:
            await self._probe()
        completion = await self.inner.complete(request)
        if self._unreported is not None:  # the probe rides on the first answer after it, to be recorded
            completion.probe, self._unreported = self._unreported, None
        return completion

    async def _probe(self) -> None:
        async with self._lock:
            if self._probed:
                return
            self.health.check()
            deadline = time.monotonic() + self.deadline_s
            attempt, last = 0, None
            while attempt < 4 and (remaining := deadline - time.monotonic()) > 0:
                attempt += 1
                try:
                    async with asyncio.timeout(remaining):
                        self._unreported = await self.inner.complete(_PROBE)
                    last = None
                    break
                except TimeoutError:
                    last = BackendError("no answer within the probe's deadline", kind="timeout")
                    break
                except BackendError as error:
                    last = error
                    if error.kind in _ALIVE:
                        break
                    await asyncio.sleep(min(0.25 * 2 ** (attempt - 1), max(0.0, deadline - time.monotonic())))
            if last is not None and last.kind not in _ALIVE:
                raise self.health.trip(
                    f"backend '{self.health.name}' failed its start-up probe ({redact(str(last))}, {attempt} attempts "
                    f"within {self.deadline_s:g} s); {FIXES.get(last.kind, FIXES['error'])}")
            self._probed = True

    async def aclose(self) -> None:
        await self.inner.aclose()
