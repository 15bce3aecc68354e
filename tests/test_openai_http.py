"""The OpenAI backend against the stand-in server over real HTTP, through the SDK's public API
(`chat.completions.with_raw_response.create`): the server sees the SDK's own request with
agentsim's parameters, answers read back with their option probabilities and rate-limit
headers, and every injected fault raises the SDK's exception class, which becomes agentsim's
error kind without the key in it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest
from servers import standin_server  # noqa: F401  (the fixture)

from agentsim.errors import BackendAuthError, BackendError
from agentsim.games.naming import NamingGame, NamingSituation
from agentsim.llm.base import Completion, Request
from agentsim.llm.openai_backend import OpenAIModel
from agentsim.llm.openai_http import OpenAIHTTPModel

KEY = "sk-route-test-0123456789"


def _request(seed: int) -> Request:
    scenario = NamingGame().for_experiment(0)
    names = scenario.names
    situation = NamingSituation(names, ((names[0], names[1], -50),))
    return Request(messages=scenario.codec.messages(situation), sampling=scenario.params.sampling(), seed=seed,
                   options=situation.options)


def _model(server: Any, *, timeout_s: float = 5.0) -> OpenAIModel:
    return OpenAIModel(name="openai:x", model="stand-in-model", api_key=KEY, base_url=server.url + "/v1",
                       timeout_s=timeout_s)


def _record(server: Any) -> list[tuple[dict[str, str], bytes]]:
    """What reaches the server: each request's headers (lower-cased names) and body."""
    seen: list[tuple[dict[str, str], bytes]] = []
    original = server.server._serve

    async def recording(request: Any, *args: Any) -> Any:
        seen.append(({key.lower(): value for key, value in request.headers.items()}, await request.read()))
        return await original(request, *args)

    server.server._serve = recording
    return seen


async def _ask(model: OpenAIModel, seeds: range) -> list[Completion]:
    try:
        return [await model.complete(_request(seed)) for seed in seeds]
    finally:
        await model.aclose()


def test_the_server_gets_the_sdks_request_with_every_parameter_and_the_answer_reads_back(standin_server: Any) -> None:
    server = standin_server(capacity=4, api_key=KEY)
    seen = _record(server)
    completions = asyncio.run(_ask(_model(server), range(3)))
    assert len(seen) == 3
    sampling = _request(0).sampling
    for seed, (headers, body) in enumerate(seen):
        assert headers["authorization"] == f"Bearer {KEY}"
        assert headers["user-agent"].startswith("AsyncOpenAI/Python")
        sent = json.loads(body)
        assert sent["model"] == "stand-in-model" and sent["seed"] == seed
        assert sent["messages"] == [{"role": message.role, "content": message.content} for message in _request(seed).messages]
        # A compatible server gets every sampling parameter, the untyped ones beside the rest.
        assert (sent["temperature"], sent["top_k"], sent["max_tokens"]) == (sampling.temperature, sampling.top_k,
                                                                            sampling.max_tokens)
        # No server API gives the chance of a whole reply under its sampler: nothing is asked for it.
        assert "logprobs" not in sent and "top_logprobs" not in sent
    for completion in completions:
        assert completion.text and completion.prompt_tokens > 0 and completion.completion_tokens > 0
        assert completion.model == "stand-in-model"
        assert completion.option_probabilities is None, "no option distribution over HTTP (docs/backends.md)"
        assert completion.raw["finish_reason"] is not None


# fault -> (the SDK's exception class, agentsim's error kind)
ERRORS = {
    "429": (openai.RateLimitError, "rate_limited"),
    "429_retry_after": (openai.RateLimitError, "rate_limited"),
    "529": (openai.APIStatusError, "overloaded"),
    "overloaded": (openai.RateLimitError, "overloaded"),
    "500": (openai.InternalServerError, "server"),
    "503": (openai.InternalServerError, "overloaded"),
    "timeout": (openai.APITimeoutError, "timeout"),
    "drop": (openai.APIConnectionError, "connection"),  # the SDK raises APITimeoutError, a subclass
}


@pytest.mark.parametrize("fault", sorted(ERRORS))
def test_error_answers_raise_the_sdks_classes_and_become_agentsim_errors(standin_server: Any, fault: str) -> None:
    sdk_class, kind = ERRORS[fault]
    server = standin_server(capacity=4, retry_after_s=2, timeout_hold_s=0.6)
    model = _model(server, timeout_s=0.25)

    async def scenario() -> None:
        await model.complete(_request(0))  # a clean answer first
        server.faults({fault: 1.0})
        with pytest.raises(sdk_class) as raised:
            await model.client.chat.completions.with_raw_response.create(**model.arguments(_request(1)))
        if isinstance(raised.value, openai.APIStatusError):
            assert raised.value.status_code == (int(fault[:3]) if fault[:3].isdigit() else 429)
        with pytest.raises(BackendError) as translated:
            await model.complete(_request(1))
        assert translated.value.kind == kind
        assert translated.value.retry_after == (2.0 if fault == "429_retry_after" else None)
        assert KEY not in str(translated.value) and translated.value.__cause__ is None
        await model.aclose()

    asyncio.run(scenario())


def test_a_refused_key_is_the_sdks_authentication_error_and_stops_the_run(standin_server: Any) -> None:
    server = standin_server(capacity=4, api_key="sk-the-right-one")
    model = _model(server)

    async def scenario() -> None:
        with pytest.raises(openai.AuthenticationError):
            await model.client.chat.completions.with_raw_response.create(**model.arguments(_request(0)))
        with pytest.raises(BackendAuthError) as raised:
            await model.complete(_request(0))
        assert "OPENAI_API_KEY" in str(raised.value) and KEY not in str(raised.value)
        await model.aclose()

    asyncio.run(scenario())


# --- the lean path (llm/openai_http.py): what `openai:MODEL@URL` takes for a server not OpenAI's ---

def _lean(server: Any, *, timeout_s: float = 5.0) -> OpenAIHTTPModel:
    return OpenAIHTTPModel(name="openai:x", model="stand-in-model", api_key=KEY, base_url=server.url + "/v1",
                           timeout_s=timeout_s)


def test_the_lean_path_sends_the_sdks_request_and_reads_the_same_answer(standin_server: Any) -> None:
    """Same body, same auth header, same Completion, same cache key (`endpoint`) as the SDK."""
    server = standin_server(capacity=4, api_key=KEY)
    seen = _record(server)
    through_sdk = asyncio.run(_ask(_model(server), range(3)))
    lean = _lean(server)
    through_lean = asyncio.run(_ask(lean, range(3)))
    assert len(seen) == 6
    for (sdk_headers, sdk_body), (lean_headers, lean_body) in zip(seen[:3], seen[3:], strict=True):
        assert json.loads(lean_body) == json.loads(sdk_body)
        assert lean_headers["authorization"] == sdk_headers["authorization"] == f"Bearer {KEY}"
    for sdk, plain in zip(through_sdk, through_lean, strict=True):
        assert (plain.text, plain.prompt_tokens, plain.completion_tokens, plain.model) == \
            (sdk.text, sdk.prompt_tokens, sdk.completion_tokens, sdk.model)
        assert plain.raw["finish_reason"] == sdk.raw["finish_reason"]
    assert lean.endpoint == _model(server).endpoint


@pytest.mark.parametrize("fault", sorted(ERRORS))
def test_the_lean_path_turns_error_answers_into_the_same_errors(standin_server: Any, fault: str) -> None:
    _, kind = ERRORS[fault]
    server = standin_server(capacity=4, retry_after_s=2, timeout_hold_s=0.6)
    model = _lean(server, timeout_s=0.25)

    async def scenario() -> None:
        await model.complete(_request(0))
        server.faults({fault: 1.0})
        with pytest.raises(BackendError) as translated:
            await model.complete(_request(1))
        assert translated.value.kind == kind
        assert translated.value.retry_after == (2.0 if fault == "429_retry_after" else None)
        assert KEY not in str(translated.value) and translated.value.__cause__ is None
        await model.aclose()

    asyncio.run(scenario())


def test_a_refused_key_on_the_lean_path_stops_the_run(standin_server: Any) -> None:
    server = standin_server(capacity=4, api_key="sk-the-right-one")
    model = _lean(server)

    async def scenario() -> None:
        with pytest.raises(BackendAuthError) as raised:
            await model.complete(_request(0))
        assert "OPENAI_API_KEY" in str(raised.value) and KEY not in str(raised.value)
        await model.aclose()

    asyncio.run(scenario())


def test_the_spec_picks_the_sdk_for_openai_and_the_lean_path_for_other_servers(monkeypatch: Any) -> None:
    from agentsim.llm.specs import build_backend
    from agentsim.llm.stack import layer

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    scenario = NamingGame().for_experiment(0)
    for spec, kind in (("openai:gpt-4o-mini", OpenAIModel), ("openai:gpt-4o-mini@https://api.openai.com/v1", OpenAIModel),
                       ("openai:m@http://127.0.0.1:8000/v1", OpenAIHTTPModel), ("openai:m@http://gpu-box:8000/v1", OpenAIHTTPModel)):
        backend = build_backend(spec, rules=scenario.standin_part().rules)
        assert layer(backend, kind) is not None, spec
        asyncio.run(backend.aclose())


def test_the_lean_path_keeps_a_base_urls_query_after_the_route() -> None:
    """`?api-version=...` (as some gateways want) stays a query, as the SDK sends it, instead of
    being glued in front of the route."""
    for base, url in (("http://h:8000/v1", "http://h:8000/v1/chat/completions"),
                      ("http://h:8000/v1/?api-version=2", "http://h:8000/v1/chat/completions?api-version=2")):
        assert OpenAIHTTPModel(name="n", model="m", api_key=KEY, base_url=base).url == url
