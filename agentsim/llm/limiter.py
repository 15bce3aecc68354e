"""The limiter: a wrapper that keeps one backend within its limits, shared by every agent and
run that uses the backend.

Three limits: calls in flight (a cap that adapts), requests per minute and tokens per minute.
Calls wait for a slot in FIFO order; a call holding a slot then waits for the rate limits
(aiolimiter's leaky buckets, `rate_limiter`), so what they pace is the moment a request is
sent. A hosted API counts `--rpm` over a sliding minute: the request bucket holds one request
and drains at what keeps any 60-second window at or under the limit (capacity + 60 s of
draining = the limit), so requests go evenly spaced, never a burst above a second's share.
The token bucket holds up to a quarter of the minute's tokens (a usual prompt in one go); a
request estimated above that takes it in several fills, so a tight `--tpm` still lets each
request through in turn, as early as the limit allows. The cap adapts (AIMD):

- each answered call raises it by `growth` (0.5), up to the configured cap: after a cut it
  is back within a few round trips;
- a 429 lowers it by one. Hosted APIs answer 429 to a random share of calls well below
  saturation, and halving on each (TCP-style) collapses the cap to a handful of calls under
  a steady 20% of 429s; by one, the cap holds while fewer than a third of calls are refused
  and falls quickly when more are;
- an overloaded answer (529, 503, TGI's overloaded 429) or a TGI queue time that keeps
  rising multiplies it by `cut` (0.75), at most once per round trip (calls started before
  the last cut carry no news about it);
- a Retry-After, or rate-limit headers saying nothing is left until a reset, stop every new
  call until then.

A server that queues instead of refusing (llama-server with K slots, vLLM) never answers
429: beyond K calls in flight only its latency grows, and the rules above would fill its queue
up to `--max-in-flight`. The latency rule (llm/queueing.py, `queueing_tolerance`; None or
`--no-latency-rule` switches it off) cuts the cap to K and a little more when latency shows
that queue, and holds it there. It reads the server's time, not the client's: an answer that
waited for agentsim's own busy event loop (CPU spent on the engine, the store, the SDK) looks
like queueing too, and cutting the cap for it would idle the server as soon as the client
catches up. So the limiter keeps `LoopLag`, how late the loop runs a timer, and takes a few
loop passes of that off each latency it compares with its floor.

`trajectory` keeps (time, cap) at each change, for the benchmark and the tests.
"""

from __future__ import annotations

import asyncio
import collections
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from aiolimiter import AsyncLimiter

from ..errors import BackendError, ParameterError
from .base import Completion, LanguageModel, Request, estimate_tokens
from .queueing import QueueingRule


class LoopLag:
    """How late the running event loop runs its callbacks, in seconds: a timer every
    `interval`, its lateness averaged over the last few. A saturated loop delays every step of
    a call (the send, the headers, the body) by about that much; an idle one, by nothing. It
    ticks only while `busy()` says calls are in flight, and follows the loop it is used on."""

    def __init__(self, busy: Callable[[], bool], *, interval: float = 0.01) -> None:
        self.busy, self.interval = busy, interval
        self.lag = 0.0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.handle: asyncio.TimerHandle | None = None
        self.due = 0.0

    def watch(self) -> None:
        """Make sure the timer runs on the current loop (called as a call is admitted)."""
        loop = asyncio.get_running_loop()
        if self.handle is not None and self.loop is loop:
            return
        if self.handle is not None:
            self.handle.cancel()
        self.loop, self.due = loop, loop.time() + self.interval
        self.handle = loop.call_at(self.due, self._tick)

    def _tick(self) -> None:
        loop = self.loop
        assert loop is not None
        now = loop.time()
        self.lag += 0.25 * (max(0.0, now - self.due) - self.lag)
        if self.busy():
            self.due = now + self.interval
            self.handle = loop.call_at(self.due, self._tick)
        else:
            self.handle = None
            self.lag = 0.0

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


# Loop passes a call waits through when the loop is saturated (the send, the response's headers
# and body reaching the task): LoopLag.lag times this is the client's share of its latency.
LOOP_PASSES = 3


@dataclass(frozen=True, kw_only=True)
class Limits:
    max_in_flight: int = 128
    min_in_flight: int = 1
    rpm: float | None = None
    tpm: float | None = None
    adaptive: bool = True
    growth: float = 0.5
    cut: float = 0.75
    queueing_tolerance: float | None = 1.5  # None: no latency rule (429s and overload only)
    latency_window: int = 40  # round trips the unqueued latency is remembered; a probe every half

    def __post_init__(self) -> None:
        if not 1 <= self.max_in_flight <= 100_000:
            raise ParameterError(f"--max-in-flight must be between 1 and 100000 (got {self.max_in_flight})")
        if not 1 <= self.min_in_flight <= self.max_in_flight:
            raise ParameterError("the limiter's minimum in flight must be between 1 and --max-in-flight")
        for name, value in (("--rpm", self.rpm), ("--tpm", self.tpm)):
            if value is not None and not (math.isfinite(value) and 0 < value <= 1e12):
                raise ParameterError(f"{name} must be a finite number > 0 (got {value})")
        if not 0 < self.cut < 1 or self.growth <= 0:
            raise ParameterError("the limiter needs 0 < cut < 1 and growth > 0")
        if self.queueing_tolerance is not None and not 1 < self.queueing_tolerance <= 100:
            raise ParameterError(f"the limiter's queueing tolerance must be > 1 and <= 100 (got {self.queueing_tolerance})")
        if not 4 <= self.latency_window <= 100_000:
            raise ParameterError(f"the limiter's latency window must be 4 to 100000 round trips (got {self.latency_window})")


def rate_limiter(per_minute: float, *, burst: float = 1.0) -> AsyncLimiter:
    """A leaky bucket that lets at most `per_minute` through in any 60-second window: it holds
    `burst` and drains at (per_minute - burst) / 60 a second. A burst of one (requests) spaces
    them evenly, so no second sees more than its share either."""
    drain = max(per_minute - burst, per_minute / 2) / 60
    return AsyncLimiter(burst, burst / drain)


class LimitedModel:
    def __init__(self, inner: LanguageModel, limits: Limits, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.clock = clock  # the tests run it on an event loop's virtual clock
        self.name = inner.name
        self.immediate = inner.immediate
        self.limits = limits
        self.limit = float(limits.max_in_flight)
        self.in_flight = 0
        self.max_seen = 0
        self.gate_until = 0.0
        self.last_cut = 0.0
        self.round_trip = 1.0  # seconds; an average of answered calls' latency
        self.queue_times: collections.deque[float] = collections.deque(maxlen=32)
        self.requests = rate_limiter(limits.rpm) if limits.rpm else None
        # A token bucket of one second's share would split most prompts into many fills: it
        # holds a quarter of the minute's tokens, at most 4096 (a usual prompt in one go).
        self.tokens = rate_limiter(limits.tpm, burst=max(1.0, min(limits.tpm / 4, max(4096.0, limits.tpm / 60)))) \
            if limits.tpm else None
        self.waiting: collections.deque[tuple[asyncio.Future[None], int]] = collections.deque()
        self._timer: asyncio.TimerHandle | None = None
        self.trajectory: list[tuple[float, float]] = [(clock(), self.limit)]
        self.cuts = 0
        self.queueing = QueueingRule(tolerance=limits.queueing_tolerance, window=limits.latency_window,
                                     now=self.trajectory[0][0]) if limits.queueing_tolerance else None
        self.loop_lag = LoopLag(lambda: self.in_flight > 0) if self.queueing is not None and limits.adaptive else None
        # the time-weighted mean in flight, for the benchmark
        self.in_flight_area = 0.0
        self.in_flight_since = self.trajectory[0][0]

    # --- admission ----------------------------------------------------------------------
    async def complete(self, request: Request) -> Completion:
        tokens = self._estimate(request)
        sent_with = await self.admit(tokens)
        started = self.clock()
        try:
            completion = await self.inner.complete(request)
        except BackendError as error:
            self.finish(started, tokens, error)
            raise
        except BaseException:
            self.finish(started, tokens, None)
            raise
        self.finish(started, tokens, completion, sent_with=sent_with)
        return completion

    async def admit(self, tokens: int) -> int:
        """Wait for a slot, then for the rate limits, holding the slot: the request is sent
        right after, and `finish` gives the slot back. (The cluster-wide limiter of a Ray
        sweep, agentsim/distributed, admits its workers' calls through these two.) Returns the
        calls in flight, this one included: the latency rule's load."""
        await self._acquire(tokens)
        if self.loop_lag is not None:
            self.loop_lag.watch()
        try:
            if self.requests is not None or self.tokens is not None:
                await self._pace(tokens)
        except BaseException:
            self._count(-1)
            self._dispatch()
            raise
        return self.in_flight

    def finish(self, started: float, tokens: int, outcome: Completion | BackendError | None, *,
               sent_with: int | None = None) -> None:
        """A call admitted at `started` (on `clock`) ended: answered, failed, or (None) abandoned.
        `sent_with`: what `admit` returned (the calls in flight now, if not given)."""
        if isinstance(outcome, BackendError):
            self._failed(outcome, started)
        in_flight = self.in_flight
        self._count(-1)
        self._dispatch()
        if isinstance(outcome, Completion):
            self._answered(outcome, started, in_flight if sent_with is None else sent_with)

    def _estimate(self, request: Request) -> int:
        if self.tokens is None:
            return 0
        return sum(estimate_tokens(message.content) for message in request.messages) + request.sampling.max_tokens

    async def _acquire(self, tokens: int) -> None:
        if not self.waiting and self._can_start(tokens, self.clock()) == 0.0:
            self._start(tokens)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append((future, tokens))
        self._dispatch()
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._count(-1)  # granted, then cancelled before use: give the slot back
                self._dispatch()
            else:
                try:
                    self.waiting.remove((future, tokens))
                except ValueError:
                    pass
            raise

    async def _pace(self, tokens: int) -> None:
        """Wait for the rate limits, holding the slot: the request is sent right after."""
        if self.requests is not None:
            await self.requests.acquire(1)
        remaining = float(tokens) if self.tokens is not None else 0.0
        while self.tokens is not None and remaining > 0:
            fill = min(remaining, self.tokens.max_rate)
            await self.tokens.acquire(fill)
            remaining -= fill

    def _can_start(self, tokens: int, now: float) -> float:
        """0 if a call may start now, else seconds until the gate (a Retry-After) opens, or inf
        while the in-flight cap is full (a finishing call wakes the queue)."""
        probe = self.queueing.probe_cap if self.queueing is not None else None
        cap = int(self.limit) if probe is None else min(int(self.limit), probe)
        if self.in_flight >= max(cap, self.limits.min_in_flight):
            return float("inf")
        return max(0.0, self.gate_until - now)

    def _start(self, tokens: int) -> None:
        self._count(+1)
        self.max_seen = max(self.max_seen, self.in_flight)

    def _count(self, change: int) -> None:
        now = self.clock()
        self.in_flight_area += self.in_flight * (now - self.in_flight_since)
        self.in_flight_since = now
        self.in_flight += change

    def mean_in_flight(self) -> float:
        """Calls in flight on average since the limiter was made (time-weighted)."""
        now = self.clock()
        elapsed = now - self.trajectory[0][0]
        area = self.in_flight_area + self.in_flight * (now - self.in_flight_since)
        return area / elapsed if elapsed > 0 else float(self.in_flight)

    def cap_spans(self, share: float = 0.5) -> list[tuple[int, float]]:
        """(cap, seconds it held) over the last `share` of the limiter's life: where it settled,
        for the llama benchmark and the tests."""
        start, end = self.trajectory[0][0], self.clock()
        since = end - share * (end - start)
        spans: list[tuple[int, float]] = []
        held, cap = since, self.trajectory[0][1]
        for t, limit in self.trajectory:
            if t > since:
                spans.append((int(cap), t - held))
                held = t
            cap = limit
        spans.append((int(cap), end - held))
        return spans

    def _dispatch(self) -> None:
        while self.waiting:
            future, tokens = self.waiting[0]
            if future.done():  # cancelled while waiting
                self.waiting.popleft()
                continue
            wait = self._can_start(tokens, self.clock())
            if wait == float("inf"):
                return
            if wait > 0:
                if self._timer is None:
                    self._timer = asyncio.get_running_loop().call_later(wait, self._tick)
                return
            self.waiting.popleft()
            self._start(tokens)
            future.set_result(None)

    def _tick(self) -> None:
        self._timer = None
        self._dispatch()

    # --- adapting -----------------------------------------------------------------------
    def _answered(self, completion: Completion, started: float, sent_with: int) -> None:
        now = self.clock()
        self.round_trip = 0.9 * self.round_trip + 0.1 * (now - started)
        if self.limits.adaptive and self.queueing is not None:
            probing = self.queueing.probe_cap
            # the server's time is the latency less what our own loop kept the call waiting
            client = LOOP_PASSES * self.loop_lag.lag if self.loop_lag is not None else 0.0
            cut = self.queueing.answered(now - started, sent_with, started, now, self.limit, client)
            if cut is not None:
                self._set(max(float(self.limits.min_in_flight), cut), now)
            elif probing != self.queueing.probe_cap:
                self._dispatch()
        signals = completion.signals or {}
        if signals.get("remaining_requests") == 0 and signals.get("reset_requests_s"):
            self.gate_until = max(self.gate_until, now + signals["reset_requests_s"])
        queue = signals.get("queue_time_s")
        if queue is not None and self._queue_rising(queue):
            self._cut(started, now)
            return
        if self.limits.adaptive and self.limit < self.limits.max_in_flight:
            growth = self.limits.growth if self.queueing is None else self.queueing.growth(self.limit, self.limits.growth)
            if growth > 0:
                self._set(min(float(self.limits.max_in_flight), self.limit + growth), now)

    def _queue_rising(self, queue: float) -> bool:
        """TGI's queue time above both a quarter second and twice its recent minimum: requests
        wait for a batch slot, so more in flight only lengthens the queue."""
        self.queue_times.append(queue)
        return len(self.queue_times) >= 8 and queue > 0.25 and queue > 2 * min(self.queue_times)

    def _failed(self, error: BackendError, started: float) -> None:
        now = self.clock()
        if error.retry_after is not None:
            self.gate_until = max(self.gate_until, now + error.retry_after)
        if not self.limits.adaptive:
            return
        if error.kind == "rate_limited":
            if self.queueing is not None:
                self.queueing.refused()
            self._set(max(float(self.limits.min_in_flight), self.limit - 1), now)
        elif error.kind == "overloaded":
            self._cut(started, now)

    def _cut(self, started: float, now: float) -> None:
        if not self.limits.adaptive or started < self.last_cut:
            return
        self.last_cut = now
        self.cuts += 1
        self._set(max(float(self.limits.min_in_flight), self.limit * self.limits.cut), now)

    def _set(self, limit: float, now: float) -> None:
        if int(limit) != int(self.limit):
            self.trajectory.append((now, limit))
            if len(self.trajectory) > 10_000:
                del self.trajectory[1:5_001]
        self.limit = limit
        self._dispatch()

    async def aclose(self) -> None:
        if self.loop_lag is not None:
            self.loop_lag.stop()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        await self.inner.aclose()
