"""The limiter's latency rule against simulated servers on a virtual clock: a server with K
slots that queues what exceeds them (llama-server, vLLM) never answers 429, and the cap must
settle at its concurrency by latency alone; a server whose latency does not grow with calls
in flight (a hosted API) must keep the cap at --max-in-flight; and 429s still behave as
before. The clock is the event loop's, run forward by hand, so simulated minutes take none and
no figure depends on the host's load."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from helpers import run_on_virtual_clock

from agentsim.errors import BackendError, ParameterError
from agentsim.llm.base import Completion, Message, Request, Sampling
from agentsim.llm.limiter import LimitedModel, Limits

REQUEST = Request(messages=(Message("user", "hi"),), sampling=Sampling(), seed=1)


class QueueingServer:
    """K slots served first come first served, each call taking a service time drawn from a
    seeded generator (service x uniform(1 - jitter, 1 + jitter)): latency = queue + service."""

    name = "queueing"
    immediate = False

    def __init__(self, slots: int, *, service: float = 0.01, jitter: float = 0.0, seed: int = 0,
                 refuse: float = 0.0, cold: float = 0.0, slower_after: tuple[int, float] | None = None) -> None:
        self.slots = asyncio.Semaphore(slots)
        self.cold = cold  # the first call's service time, when longer (a server loading its model)
        self.slower_after = slower_after  # (answers, service time from then on)
        self.service, self.jitter = service, jitter
        self.random = random.Random(seed)
        self.refuse = refuse  # the share of calls answered 429 at once (a hosted API's background rate)
        self.active = self.most = self.answered = 0

    async def complete(self, request: Request) -> Completion:
        if self.refuse and self.random.random() < self.refuse:
            raise BackendError("rate limited", kind="rate_limited")
        async with self.slots:
            self.active += 1
            self.most = max(self.most, self.active)
            try:
                service = self.service * self.random.uniform(1 - self.jitter, 1 + self.jitter)
                await asyncio.sleep(max(service, self.cold if self.answered == 0 else 0.0))
            finally:
                self.active -= 1
        self.answered += 1
        if self.slower_after and self.answered == self.slower_after[0]:
            self.service = self.slower_after[1]
        return Completion(text="ok")

    async def aclose(self) -> None:
        return None


class UnlimitedServer(QueueingServer):
    """Every call served at once: latency is the service time alone, whatever is in flight."""

    def __init__(self, **options: Any) -> None:
        super().__init__(10**6, **options)


class BatchingServer:
    """A GPU inference server (TGI, vLLM): every waiting call joins the next batch, and a batch
    of n takes fixed + per_call x n, so latency grows with calls in flight while the calls
    served per second grow far more (Little's law: in flight / latency)."""

    name = "batching"
    immediate = False

    def __init__(self, *, fixed: float = 0.1, per_call: float = 0.001, max_batch: int = 512, jitter: float = 0.0,
                 cold: float = 0.0, seed: int = 0) -> None:
        self.fixed, self.per_call, self.max_batch = fixed, per_call, max_batch
        self.jitter, self.cold, self.random = jitter, cold, random.Random(seed)  # cold: the first batch's time
        self.waiting: list[asyncio.Future[None]] = []
        self.loop_task: asyncio.Task[None] | None = None
        self.answered = 0
        self.batches: list[int] = []

    async def _serve(self) -> None:
        while self.waiting:
            batch, self.waiting = self.waiting[: self.max_batch], self.waiting[self.max_batch:]
            self.batches.append(len(batch))
            took = (self.fixed + self.per_call * len(batch)) * self.random.uniform(1 - self.jitter, 1 + self.jitter)
            await asyncio.sleep(max(took, self.cold if len(self.batches) == 1 else 0.0))
            for future in batch:
                if not future.done():
                    future.set_result(None)
        self.loop_task = None

    async def complete(self, request: Request) -> Completion:
        future = asyncio.get_running_loop().create_future()
        self.waiting.append(future)
        if self.loop_task is None:
            self.loop_task = asyncio.create_task(self._serve())
        await future
        self.answered += 1
        return Completion(text="ok")

    async def aclose(self) -> None:
        return None


async def drive(limiter: LimitedModel, *, calls: int, callers: int) -> None:
    """`callers` agents, each sending its next call as soon as the last is answered, `calls` in all;
    a refused call is counted as sent (the retry layer is not under test here)."""
    left = calls

    async def caller() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            try:
                await limiter.complete(REQUEST)
            except BackendError:
                await asyncio.sleep(0.001)

    await asyncio.gather(*(caller() for _ in range(callers)))


def settle(server: QueueingServer, limits: Limits, *, calls: int, callers: int = 64) -> LimitedModel:
    async def run() -> LimitedModel:
        limiter = LimitedModel(server, limits, clock=asyncio.get_running_loop().time)
        await drive(limiter, calls=calls, callers=callers)
        return limiter

    limiter: LimitedModel = run_on_virtual_clock(run())
    return limiter


def latency_cuts(limiter: LimitedModel) -> int:
    return limiter.queueing.cuts if limiter.queueing is not None else 0


def settled(spans: list[tuple[int, float]], low: int, high: int) -> tuple[int, float]:
    """The time-weighted median cap, and the share of the time the cap was within [low, high]."""
    total, passed = sum(seconds for _, seconds in spans), 0.0
    median = spans[-1][0]
    for cap, seconds in sorted(spans):
        passed += seconds
        if passed >= total / 2:
            median = cap
            break
    return median, sum(seconds for cap, seconds in spans if low <= cap <= high) / total


@pytest.mark.parametrize("slots", [1, 2, 4, 8])
@pytest.mark.parametrize("jitter", [0.0, 0.3])
def test_the_cap_settles_at_the_servers_slots_by_latency_alone(slots: int, jitter: float) -> None:
    """64 callers against K slots that queue the rest: the cap starts at 64 and must come down to
    between K (every slot busy) and 2K (a short queue), and stay there."""
    server = QueueingServer(slots, service=0.01, jitter=jitter, seed=slots)
    limiter = settle(server, Limits(max_in_flight=64), calls=400 * slots)
    median, within = settled(limiter.cap_spans(), slots, 2 * slots)
    assert slots <= median <= 2 * slots and within >= 0.7, \
        f"{slots} slots: the cap's median {median}, within [K, 2K] {within:.0%} of the time"
    assert latency_cuts(limiter) >= 1 and limiter.in_flight == 0
    # Every slot kept busy: answered calls x service time against K x the run's time.
    busy = server.answered * 0.01 / (slots * limiter.clock())
    assert busy > 0.9, f"the server was busy {busy:.2f} of the time"
    assert limiter.mean_in_flight() < 64 / 2


def test_a_server_that_never_queues_keeps_the_cap_at_its_maximum() -> None:
    """A hosted API: latency varies (+-50%) but does not grow with calls in flight. Overload cuts
    the cap early; it must grow back to --max-in-flight and the latency rule must never cut."""
    server = UnlimitedServer(service=0.2, jitter=0.5, seed=3)

    async def run() -> LimitedModel:
        limiter = LimitedModel(server, Limits(max_in_flight=32), clock=asyncio.get_running_loop().time)
        for _ in range(4):
            limiter._failed(BackendError("overloaded", kind="overloaded"), limiter.clock())
            await asyncio.sleep(1)
        assert limiter.limit < 16
        await drive(limiter, calls=6000, callers=64)
        return limiter

    limiter: LimitedModel = run_on_virtual_clock(run())
    assert limiter.limit == 32 and latency_cuts(limiter) == 0
    assert limiter.mean_in_flight() > 28


def test_a_server_slowing_down_for_everyone_is_no_reason_to_send_fewer() -> None:
    """A hosted API whose latency quadruples halfway, whatever is in flight: the cap stays at its
    maximum (a probe at half of it may check, it does not cut)."""
    server = UnlimitedServer(service=0.05, jitter=0.2, seed=7)

    async def run() -> LimitedModel:
        limiter = LimitedModel(server, Limits(max_in_flight=16), clock=asyncio.get_running_loop().time)
        await drive(limiter, calls=2000, callers=32)
        server.service = 0.2
        await drive(limiter, calls=2000, callers=32)
        return limiter

    limiter: LimitedModel = run_on_virtual_clock(run())
    assert latency_cuts(limiter) == 0 and limiter.limit == 16
    assert limiter.mean_in_flight() > 14


def test_the_cap_finds_the_slots_when_the_first_answers_came_fast_at_full_load() -> None:
    """llama-server answers its first call slowly (cold), the next ones fast (the shared system
    prompt is cached) with every call already in flight, then slows as prompts grow: the floor
    was seen at the full cap, so only a probe with fewer calls in flight shows whether the later
    latency is a queue."""
    server = QueueingServer(2, service=0.002, jitter=0.2, seed=9, cold=0.2, slower_after=(200, 0.02))

    async def run() -> LimitedModel:
        limiter = LimitedModel(server, Limits(max_in_flight=8), clock=asyncio.get_running_loop().time)
        await drive(limiter, calls=2200, callers=8)
        return limiter

    limiter: LimitedModel = run_on_virtual_clock(run())
    median, within = settled(limiter.cap_spans(0.3), 2, 4)
    assert 2 <= median <= 4 and within >= 0.7, f"the cap's median {median}, within [2, 4] {within:.0%} of the time"
    assert latency_cuts(limiter) >= 1 and limiter.queueing is not None and limiter.queueing.probes >= 1


def test_a_steady_share_of_429s_does_not_collapse_the_cap_with_the_latency_rule_on() -> None:
    """A hosted API refusing 20% of calls at random, well below saturation: each 429 takes one off
    the cap and each answer adds half, so the cap holds near its maximum; its latency, flat,
    must not add cuts of its own."""
    server = UnlimitedServer(service=0.05, jitter=0.3, seed=5, refuse=0.2)
    limiter = settle(server, Limits(max_in_flight=16), calls=4000, callers=32)
    lowest = min(cap for cap, _ in limiter.cap_spans())
    assert limiter.limit >= 12 and lowest >= 8 and latency_cuts(limiter) == 0
    assert server.answered >= 3000


def test_429s_from_a_queueing_server_do_not_wear_the_cap_down() -> None:
    """A server with 16 slots that queues the rest and refuses 20% of calls at random: each 429
    takes one off the cap, so growth after a latency cut must keep the usual pace, or the cap
    sinks far below the slots."""
    server = QueueingServer(16, service=0.05, jitter=0.2, seed=11, refuse=0.2)
    limiter = settle(server, Limits(max_in_flight=64), calls=6000, callers=64)
    median, _ = settled(limiter.cap_spans(), 16, 64)
    assert median >= 16, f"the cap's median {median} with 16 slots"
    busy = server.answered * 0.05 / (16 * limiter.clock())
    assert busy > 0.85, f"the server was busy {busy:.2f} of the time"


async def drive_busy(limiter: LimitedModel, *, calls: int, callers: int, burn: float) -> None:
    """`drive`, but each answer costs the client `burn` seconds of CPU: the virtual clock moves
    on while the loop runs nothing else, as a busy Python process's does."""
    loop: Any = asyncio.get_running_loop()
    left = calls

    async def caller() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await limiter.complete(REQUEST)
            loop.now += burn

    await asyncio.gather(*(caller() for _ in range(callers)))


@pytest.mark.parametrize("slots", [10**6, 64])
def test_a_client_busy_with_its_own_cpu_is_not_a_queue(slots: int) -> None:
    """A server that never queues (or has more slots than the cap), and a client that spends 2 ms
    of CPU on each answer: 64 calls in flight then take far longer than one, because each answer
    waits for the client's loop, not the server. The latency rule must not cut the cap for it."""
    server = QueueingServer(slots, service=0.05, jitter=0.2, seed=13)

    async def run() -> LimitedModel:
        limiter = LimitedModel(server, Limits(max_in_flight=64), clock=asyncio.get_running_loop().time)
        await drive_busy(limiter, calls=6000, callers=64, burn=0.002)
        return limiter

    limiter: LimitedModel = run_on_virtual_clock(run())
    busy = 6000 * 0.002 / limiter.clock()
    assert busy > 0.9, f"the client's loop must have been the bottleneck to mean anything (busy {busy:.2f})"
    assert latency_cuts(limiter) == 0 and limiter.limit == 64
    assert min(cap for cap, _ in limiter.cap_spans()) >= 32


def test_a_queueing_server_is_cut_though_the_client_is_busy_too() -> None:
    """Four slots that queue the rest, and a client spending 0.5 ms per answer (a tenth of its
    time): the queue is the server's, and the cap comes down to its slots."""
    server = QueueingServer(4, service=0.01, jitter=0.2, seed=17)

    async def run() -> LimitedModel:
        limiter = LimitedModel(server, Limits(max_in_flight=64), clock=asyncio.get_running_loop().time)
        await drive_busy(limiter, calls=2000, callers=64, burn=0.0005)
        return limiter

    limiter: LimitedModel = run_on_virtual_clock(run())
    median, _ = settled(limiter.cap_spans(), 4, 8)
    assert 4 <= median <= 8 and latency_cuts(limiter) >= 1, f"the cap's median {median} with 4 slots"


def test_switched_off_the_cap_grows_into_the_servers_queue() -> None:
    """Without the latency rule a queueing server looks healthy: the cap stays at its maximum."""
    limiter = settle(QueueingServer(2), Limits(max_in_flight=32, queueing_tolerance=None), calls=800)
    assert limiter.limit == 32 and latency_cuts(limiter) == 0 and limiter.max_seen == 32


def test_latency_rule_limits_are_validated() -> None:
    with pytest.raises(ParameterError, match="queueing tolerance"):
        Limits(queueing_tolerance=1.0)
    with pytest.raises(ParameterError, match="latency window"):
        Limits(latency_window=2)


@pytest.mark.parametrize("jitter, cold", [(0.0, 0.0), (0.5, 4.0)])
def test_a_batching_server_is_not_a_queue_the_cap_stays_where_more_calls_are_served(jitter: float, cold: float) -> None:
    """A GPU server batches what is in flight: at 128 calls a batch takes 0.23 s against 0.1 s
    for one, so latency grows with load while the calls served per second grow 28-fold; and one
    batch's time varies by half from the next (the issue-29 H100 run: 96-215 ms for a batch of
    one), after a cold first batch of 4 s. The rule must not take that latency for a queue: on
    that H100 it cut a TGI-like server to 2 calls in flight, 11 calls a second where a plain
    client got 245. A cut that costs served calls is undone."""
    server = BatchingServer(fixed=0.1, per_call=0.001, jitter=jitter, cold=cold, seed=1)
    limiter = settle(server, Limits(max_in_flight=128), calls=20_000, callers=128)
    rate = server.answered / limiter.clock()
    best = 128 / (0.1 + 0.001 * 128)  # every batch full
    assert rate >= 0.75 * best, f"{rate:.0f} calls/s, {rate / best:.2f} of the {best:.0f}/s full batches give"
    assert limiter.mean_in_flight() > 80 and limiter.limit >= 64
