"""The OpenAI backend's two request routes against the stand-in server over real HTTP: the
SDK's request built once and sent over aiohttp (`DirectRoute`), and the SDK's whole `post`
path (`SdkRoute`). The direct route leans on private SDK helpers, so these tests pin what it
must keep: the installed SDK gets it, the server sees the request the SDK would have sent,
answers read the same, and error answers raise the SDK's own exception classes, which become
the same agentsim errors. Where the SDK's request would change per call, the SDK path stays."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from servers import standin_server  # noqa: F401  (the fixture)

from agentsim.errors import BackendAuthError, BackendError
from agentsim.games.naming import NamingGame, NamingSituation
from agentsim.llm.base import Completion, Request
from agentsim.llm.openai_backend import PATH, OpenAIModel
from agentsim.llm.openai_routes import DirectRoute, SdkRoute, open_route

KEY = "sk-route-test-0123456789"
# Set per body (content-length) or by the HTTP client that decodes the answer (accept-encoding).
PER_BODY = {"content-length", "accept-encoding"}


def _request(seed: int) -> Request:
    scenario = NamingGame().for_experiment(0)
    names = scenario.names
    situation = NamingSituation(names, ((names[0], names[1], -50),))
    return Request(messages=scenario.messages(situation), sampling=scenario.params.sampling(), seed=seed,
                   options=situation.options)


def _model(server: Any, *, direct: bool = True, timeout_s: float = 5.0) -> OpenAIModel:
    return OpenAIModel(name="openai:x", model="stand-in-model", api_key=KEY, base_url=server.url + "/v1",
                       timeout_s=timeout_s, direct=direct)


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


def test_the_installed_sdk_gets_the_direct_route(standin_server: Any) -> None:
    """If an SDK upgrade moves the private helpers the direct route uses, calls still work
    (through `post`) but cost about 1 ms of CPU more each: this test says so."""
    server = standin_server(capacity=4)
    model = _model(server)

    async def scenario() -> str:
        await model.complete(_request(0))
        assert model.route is not None
        name = model.route.name
        await model.aclose()
        return name

    assert asyncio.run(scenario()) == "direct"


def test_both_routes_send_the_same_request_and_read_the_same_answer(standin_server: Any) -> None:
    server = standin_server(capacity=4, api_key=KEY)
    seen = _record(server)
    direct = asyncio.run(_ask(_model(server), range(3)))
    through_sdk = asyncio.run(_ask(_model(server, direct=False), range(3)))
    assert len(seen) == 6
    for (direct_headers, direct_body), (sdk_headers, sdk_body) in zip(seen[:3], seen[3:]):
        assert direct_body == sdk_body
        assert {k: v for k, v in direct_headers.items() if k not in PER_BODY} == \
               {k: v for k, v in sdk_headers.items() if k not in PER_BODY}
        assert direct_headers["authorization"] == f"Bearer {KEY}"
        assert direct_headers["user-agent"].startswith("AsyncOpenAI/Python")
    for one, other in zip(direct, through_sdk):
        assert one.option_probabilities is not None
        assert (one.text, one.prompt_tokens, one.completion_tokens, one.model, one.signals) == \
               (other.text, other.prompt_tokens, other.completion_tokens, other.model, other.signals)
        assert one.option_probabilities == pytest.approx(other.option_probabilities)
        assert {key: value for key, value in one.raw.items() if key != "id"} == \
               {key: value for key, value in other.raw.items() if key != "id"}


# fault -> (the SDK's exception class, agentsim's error kind)
ERRORS = {
    "429": (openai.RateLimitError, "rate_limited"),
    "429_retry_after": (openai.RateLimitError, "rate_limited"),
    "529": (openai.APIStatusError, "overloaded"),
    "overloaded": (openai.RateLimitError, "overloaded"),
    "500": (openai.InternalServerError, "server"),
    "503": (openai.InternalServerError, "overloaded"),
    "timeout": (openai.APITimeoutError, "timeout"),
    "drop": (openai.APIConnectionError, "connection"),
}


@pytest.mark.parametrize("fault", sorted(ERRORS))
def test_error_answers_raise_the_sdks_classes_on_the_direct_route(standin_server: Any, fault: str) -> None:
    sdk_class, kind = ERRORS[fault]
    server = standin_server(capacity=4, retry_after_s=2, timeout_hold_s=0.6)
    model = _model(server, timeout_s=0.25)

    async def scenario() -> None:
        await model.complete(_request(0))  # opens the route on a clean answer
        route = model.route
        assert isinstance(route, DirectRoute)
        server.faults({fault: 1.0})
        with pytest.raises(sdk_class) as raised:
            await route.post(b'{"model": "stand-in-model", "messages": []}')
        if isinstance(raised.value, openai.APIStatusError):
            assert raised.value.status_code == (int(fault[:3]) if fault[:3].isdigit() else 429)
        with pytest.raises(BackendError) as translated:
            await model.complete(_request(1))
        assert translated.value.kind == kind
        assert translated.value.retry_after == (2.0 if fault == "429_retry_after" else None)
        assert KEY not in str(translated.value) and translated.value.__cause__ is None
        await model.aclose()

    asyncio.run(scenario())


def test_status_errors_are_the_same_agentsim_errors_on_both_routes(standin_server: Any) -> None:
    server = standin_server(capacity=4, retry_after_s=2)

    async def kinds(direct: bool) -> list[tuple[str, float | None]]:
        model = _model(server, direct=direct)
        found = []
        for fault in ("429", "429_retry_after", "529", "overloaded", "500", "503"):
            server.faults({fault: 1.0})
            with pytest.raises(BackendError) as raised:
                await model.complete(_request(0))
            found.append((raised.value.kind, raised.value.retry_after))
        server.faults({})
        await model.aclose()
        return found

    assert asyncio.run(kinds(True)) == asyncio.run(kinds(False))


def test_a_refused_key_is_the_sdks_authentication_error_and_stops_the_run(standin_server: Any) -> None:
    server = standin_server(capacity=4, api_key="sk-the-right-one")
    model = _model(server)

    async def scenario() -> None:
        route = await open_route(model.client, openai, PATH, max_connections=4)
        assert isinstance(route, DirectRoute)
        with pytest.raises(openai.AuthenticationError):
            await route.post(b"{}")
        await route.aclose()
        with pytest.raises(BackendAuthError) as raised:
            await model.complete(_request(0))
        assert "OPENAI_API_KEY" in str(raised.value) and KEY not in str(raised.value)
        await model.aclose()

    asyncio.run(scenario())


def _offline_model(base_url: str = "http://127.0.0.1:9/v1") -> OpenAIModel:
    """A model whose route is chosen without a server (choosing one sends nothing)."""
    return OpenAIModel(name="openai:x", model="m", api_key=KEY, base_url=base_url)


def _route_for(model: OpenAIModel) -> Any:
    async def scenario() -> Any:
        route = await open_route(model.client, openai, PATH, max_connections=4)
        await route.aclose()
        await model.client.close()
        return route

    return asyncio.run(scenario())


def test_without_a_server_the_route_is_still_the_direct_one() -> None:
    """The control for the tests below: what changes the route is what each of them changes."""
    assert isinstance(_route_for(_offline_model()), DirectRoute)
    assert isinstance(_route_for(_offline_model("http://example.invalid/v1")), DirectRoute)


def test_a_request_that_changes_per_call_keeps_the_sdk_path() -> None:
    """An idempotency key per call (the SDK adds one when a client names its header): a
    request built once would resend one key, so every call goes through `post`."""
    model = _offline_model()
    model.client._idempotency_header = "Idempotency-Key"
    assert isinstance(_route_for(model), SdkRoute)


def test_a_per_call_auth_hook_keeps_the_sdk_path() -> None:
    model = _offline_model()
    model.client._api_key_provider = lambda: KEY
    assert isinstance(_route_for(model), SdkRoute)


def test_a_proxy_keeps_the_sdk_path(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    assert isinstance(_route_for(_offline_model("http://example.invalid/v1")), SdkRoute)


def test_an_sdk_whose_helpers_moved_keeps_the_sdk_path() -> None:
    model = _offline_model()

    def gone(*args: Any, **kwargs: Any) -> Any:
        raise AttributeError("_build_request")

    model.client._build_request = gone
    assert isinstance(_route_for(model), SdkRoute)


def test_an_https_endpoint_gets_the_direct_route_with_the_sdks_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing connects here: the route and its session are built, as on a first call to the
    real API, and the session verifies certificates with the SDK's TLS settings."""
    import ssl

    for variable in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy",
                     "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)

    async def build() -> tuple[Any, Any]:
        model = OpenAIModel(name="openai:x", model="gpt-x", api_key=KEY)  # the default https endpoint
        try:
            route = await open_route(model.client, openai, PATH, max_connections=4)
            assert isinstance(route, DirectRoute)
            connector = route.session.connector
            await route.aclose()
            return str(route.url), getattr(connector, "_ssl", None)
        finally:
            await model.aclose()

    url, context = asyncio.run(build())
    assert url.startswith("https://") and url.endswith(PATH)
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED
