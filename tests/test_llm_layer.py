"""The LLM layer's pieces one by one, without a network: spec and population parsing, error
kinds and Retry-After, option probabilities, the cache key, retries and the limiter."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from helpers import run_on_virtual_clock

from agentsim.errors import BackendAuthError, BackendError, BackendSpecError, ParameterError
from agentsim.llm.base import Completion, Grammar, Message, Request, Sampling
from agentsim.llm.cache import cache_key
from agentsim.llm.faults import error_for_status, rate_limit_signals, retry_after
from agentsim.llm.limiter import LimitedModel, Limits
from agentsim.llm.prices import cost_usd, register_price
from agentsim.llm.retries import RetryingModel, RetryPolicy
from agentsim.llm.specs import parse_population, parse_spec


def test_specs_are_parsed_in_one_place() -> None:
    assert parse_spec("openai:gpt-4o-mini").target == "gpt-4o-mini"
    spec = parse_spec("openai:meta-llama/Llama-3.1-8B@http://box:8000/v1")
    assert (spec.target, spec.base_url) == ("meta-llama/Llama-3.1-8B", "http://box:8000/v1")
    assert parse_spec("tgi:http://box:8080").target == "http://box:8080"
    assert parse_spec("stand-in:family-a").provider == "stand-in"
    with pytest.raises(BackendSpecError, match="needs a target"):
        parse_spec("anthropic:")
    with pytest.raises(BackendSpecError, match="unknown backend"):
        parse_spec("gemini:pro")


def test_populations_are_spec_count_pairs() -> None:
    assert parse_population("openai:a@http://h:1/v1=3, tgi:http://h:2=5") == [("openai:a@http://h:1/v1", 3), ("tgi:http://h:2", 5)]
    for bad, fragment in (("openai:a", "SPEC=COUNT"), ("openai:a=x", "not a whole number"), ("openai:a=0", "at least 1"),
                          ("openai:a=1,openai:a=2", "twice"), ("", "empty")):
        with pytest.raises(BackendSpecError, match=fragment):
            parse_population(bad)


def test_statuses_become_kinds_and_keys_never_appear() -> None:
    kinds = {status: error_for_status("x", status, {}).kind for status in (429, 529, 500, 503, 408, 400)}  # type: ignore[union-attr]
    assert kinds == {429: "rate_limited", 529: "overloaded", 500: "server", 503: "overloaded", 408: "timeout",
                     400: "bad_request"}
    assert error_for_status("tgi", 429, {}, {"error_type": "overloaded"}).kind == "overloaded"  # type: ignore[union-attr]
    refused = error_for_status("openai", 401, {"Authorization": "Bearer sk-abc"}, key_variable="OPENAI_API_KEY")
    assert isinstance(refused, BackendAuthError) and "sk-abc" not in str(refused) and "OPENAI_API_KEY" in str(refused)
    assert isinstance(error_for_status("openai", 404, {}), BackendSpecError)
    assert retry_after({"Retry-After": "2"}) == 2.0 and retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({}) is None
    assert rate_limit_signals({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s",
                               "x-queue-time": "120"}) == {"remaining_requests": 0.0, "reset_requests_s": 360.0,
                                                           "queue_time_s": 0.12}


def test_the_cache_key_covers_everything_that_determines_an_answer() -> None:
    base = Request(messages=(Message("user", "hi"),), sampling=Sampling(), seed=1)
    key = cache_key("openai", "http://h/v1", "m", base)
    variants = [
        Request(messages=(Message("user", "hi!"),), sampling=Sampling(), seed=1),
        Request(messages=base.messages, sampling=Sampling(temperature=0.7), seed=1),
        Request(messages=base.messages, sampling=Sampling(top_k=5), seed=1),
        Request(messages=base.messages, sampling=Sampling(), seed=2),
        Request(messages=base.messages, sampling=Sampling(), seed=1, replicate=1),
        Request(messages=base.messages, sampling=Sampling(), seed=1, grammar=Grammar(kind="regex", value="[AB]")),
        Request(messages=(Message("system", "hi"),), sampling=Sampling(), seed=1),
        Request(messages=base.messages, sampling=Sampling(), seed=1, options=("A", "B")),
        # The same text split differently between messages is a different prompt.
        Request(messages=(Message("user", "h"), Message("user", "i")), sampling=Sampling(), seed=1),
        Request(messages=(Message("user", "hi"), Message("user", "")), sampling=Sampling(), seed=1),
    ]
    assert len({key, *(cache_key("openai", "http://h/v1", "m", request) for request in variants)}) == 11
    assert cache_key("tgi", "http://h/v1", "m", base) != key and cache_key("openai", "http://h/v1", "m2", base) != key
    assert cache_key("openai", "http://h/v1", "m", base) == key
    with pytest.raises(ParameterError):
        Grammar(kind="xml", value="<a/>")


def test_prices_match_the_longest_prefix() -> None:
    assert cost_usd("gpt-4o-mini-2024-07-18", 1_000_000, 0) == pytest.approx(0.15)
    assert cost_usd("gpt-4o-2024-08-06", 0, 1_000_000) == pytest.approx(10.0)
    assert cost_usd("my-own-llama", 10**6, 10**6) == 0.0


def test_a_price_registered_later_reaches_a_model_already_priced() -> None:
    """Prices are matched once per model name and remembered; registering one forgets them."""
    assert cost_usd("late-priced-model-v2", 10**6, 0) == 0.0
    register_price("late-priced-model", 2.0, 4.0)
    assert cost_usd("late-priced-model-v2", 10**6, 10**6) == pytest.approx(6.0)
    register_price("late-priced-model-v2", 1.0, 1.0)
    assert cost_usd("late-priced-model-v2", 10**6, 0) == pytest.approx(1.0)


class Scripted:
    """A backend that fails with the given kinds, then answers; counts calls at once."""

    name = "scripted"
    immediate = False

    def __init__(self, failures: list[BackendError], delay: float = 0.0) -> None:
        self.failures = list(failures)
        self.delay = delay
        self.active = self.most = self.calls = 0

    async def complete(self, request: Request) -> Completion:
        self.calls += 1
        self.active += 1
        self.most = max(self.most, self.active)
        try:
            await asyncio.sleep(self.delay)
            if self.failures:
                raise self.failures.pop(0)
            return Completion(text="ok")
        finally:
            self.active -= 1

    async def aclose(self) -> None:
        return None


REQUEST = Request(messages=(Message("user", "hi"),), sampling=Sampling(), seed=1)


def test_retries_back_off_count_attempts_and_give_up() -> None:
    policy = RetryPolicy(max_attempts=3, base_s=0.001, cap_s=0.002)
    inner = Scripted([BackendError("x", kind="server"), BackendError("x", kind="rate_limited")])
    completion = asyncio.run(RetryingModel(inner, policy).complete(REQUEST))
    assert (completion.text, completion.retries, completion.errors) == ("ok", 2, ("server", "rate_limited"))
    exhausted = Scripted([BackendError("x", kind="server")] * 3)
    with pytest.raises(BackendError, match="gave up after 3 attempts") as raised:
        asyncio.run(RetryingModel(exhausted, policy).complete(REQUEST))
    assert raised.value.kind == "server" and exhausted.calls == 3
    fatal = Scripted([BackendError("x", kind="bad_request")])
    with pytest.raises(BackendError):
        asyncio.run(RetryingModel(fatal, policy).complete(REQUEST))
    assert fatal.calls == 1, "a bad request is not retried"


def test_the_limiter_caps_in_flight_and_paces_requests_per_minute() -> None:
    inner = Scripted([], delay=0.01)
    limiter = LimitedModel(inner, Limits(max_in_flight=3))

    async def many(model: Any, count: int) -> None:
        await asyncio.gather(*(model.complete(REQUEST) for _ in range(count)))

    asyncio.run(many(limiter, 20))
    assert inner.most == 3 and limiter.in_flight == 0


def test_rpm_holds_over_any_minute_with_no_burst_above_a_seconds_share() -> None:
    """A hosted API counts requests over a sliding minute. The clock is the event loop's, run
    forward by hand (a loop whose time is a variable), so a simulated ten minutes take none."""
    sent: list[float] = []

    class Clocked(Scripted):
        async def complete(self, request: Request) -> Completion:
            sent.append(asyncio.get_running_loop().time())
            return await super().complete(request)

    paced = LimitedModel(Clocked([]), Limits(max_in_flight=5000, rpm=1200))

    async def many() -> None:
        await asyncio.gather(*(paced.complete(REQUEST) for _ in range(3000)))

    run_on_virtual_clock(many())
    assert len(sent) == 3000
    assert max(sum(1 for t in sent if start <= t < start + 1) for start in sent) <= 20, "a burst above 1200/60"
    assert max(sum(1 for t in sent if start <= t < start + 60) for start in sent[::10]) <= 1200
    assert sent[-1] - sent[0] < 3000 / 1200 * 60 * 1.05, "the limit is used, not left idle"


def test_a_tight_tpm_lets_requests_through_in_turn() -> None:
    sent: list[float] = []

    class Clocked(Scripted):
        async def complete(self, request: Request) -> Completion:
            sent.append(asyncio.get_running_loop().time())
            return await super().complete(request)

    request = Request(messages=(Message("user", "x" * 2000),), sampling=Sampling(max_tokens=10))  # about 510 tokens
    paced = LimitedModel(Clocked([]), Limits(max_in_flight=64, tpm=2000))

    async def many() -> None:
        await asyncio.gather(*(paced.complete(request) for _ in range(40)))

    run_on_virtual_clock(many())
    assert sent[0] - 0 < 1, "the first request goes at once"
    assert all(later - earlier < 60 for earlier, later in itertools.pairwise(sent)), "each waits its turn, not a minute"
    assert max(sum(510 for t in sent if start <= t < start + 60) for start in sent) <= 2000


class Signalling(Scripted):
    """Answers carrying a server hint (TGI's queue time, rate-limit headers)."""

    def __init__(self, signals: dict[str, float]) -> None:
        super().__init__([])
        self.signals = signals

    async def complete(self, request: Request) -> Completion:
        completion = await super().complete(request)
        completion.signals = dict(self.signals)
        return completion


def test_the_limiter_cuts_on_rising_queue_time_and_pauses_on_retry_after() -> None:
    queued = Signalling({"queue_time_s": 0.01})
    limiter = LimitedModel(queued, Limits(max_in_flight=16))

    async def run() -> None:
        for _ in range(10):
            await limiter.complete(REQUEST)
        assert limiter.limit == 16
        queued.signals["queue_time_s"] = 1.5  # requests now wait for a batch slot
        await limiter.complete(REQUEST)
        assert limiter.limit == 12 and limiter.cuts == 1
        refused = LimitedModel(Scripted([BackendError("x", kind="rate_limited", retry_after=0.3)]), Limits())
        with pytest.raises(BackendError):
            await refused.complete(REQUEST)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await refused.complete(REQUEST)
        assert loop.time() - started >= 0.25, "the next call waited out the Retry-After"
        assert refused.limit == 31.5  # -1 for the 429, +0.5 for the answer

    asyncio.run(run())


def test_the_start_up_probe_takes_its_turns_under_rpm() -> None:
    """At --rpm 120 a request may leave every half second: the probe's attempts (two refused,
    the third answered) and the requests that waited for it keep that pace, on a virtual
    clock, with no second seeing more than two."""
    from agentsim.llm.accounting import Budget
    from agentsim.llm.specs import BackendOptions
    from agentsim.llm.stack import wrap

    sent: list[float] = []

    class Provider:
        name, immediate = "openai:m@http://127.0.0.1:9/v1", False

        async def complete(self, request: Request) -> Completion:
            sent.append(asyncio.get_running_loop().time())
            if len(sent) <= 2:
                raise BackendError("openai answered HTTP 500 (server)", kind="server")
            return Completion(text="M", prompt_tokens=3, completion_tokens=1)

        async def aclose(self) -> None: ...

    options = BackendOptions(limits=Limits(rpm=120), cache=False)
    model = wrap(Provider(), parse_spec(Provider.name), options, Budget())
    request = Request(messages=(Message("user", "name one"),), sampling=Sampling(max_tokens=2), seed=1)

    async def scenario() -> None:
        await asyncio.gather(*(model.complete(request) for _ in range(3)))

    run_on_virtual_clock(scenario())
    assert len(sent) == 6  # three probe attempts, then the three requests
    assert all(later - earlier >= 0.5 for earlier, later in itertools.pairwise(sent)), sent


def test_a_model_in_process_has_no_deadline_and_a_server_has_one() -> None:
    """A call to a model run here waits its turn for the model's one context: a queue that grows
    with the population, not a failure, so --deadline bounds only calls over the network
    (on a virtual clock: ten minutes of queueing pass in no time)."""
    from agentsim.llm.accounting import Budget
    from agentsim.llm.specs import BackendOptions
    from agentsim.llm.stack import wrap

    class Queued:
        immediate = False

        def __init__(self, name: str) -> None:
            self.name = name

        async def complete(self, request: Request) -> Completion:
            await asyncio.sleep(600)  # the calls ahead of this one in the model's queue
            return Completion(text="M", prompt_tokens=3, completion_tokens=1)

        async def aclose(self) -> None: ...

    from agentsim.llm.health import HealthPolicy

    options = BackendOptions(retry=RetryPolicy(deadline_s=30), cache=False,
                             health=HealthPolicy(probe=False))
    request = Request(messages=(Message("user", "name one"),), sampling=Sampling(max_tokens=2), seed=1)
    for spec, answers in (("local:smollm2", True), ("openai:m@http://127.0.0.1:9/v1", False)):
        model = wrap(Queued(spec), parse_spec(spec), options, Budget())
        if answers:
            assert run_on_virtual_clock(model.complete(request)).text == "M"
        else:
            with pytest.raises(BackendError, match="no answer within --deadline 30 s"):
                run_on_virtual_clock(model.complete(request))
