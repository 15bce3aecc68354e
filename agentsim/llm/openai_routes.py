"""How the OpenAI backend's requests reach the server: the SDK's request, built by the SDK once
per backend and sent over one aiohttp session (`DirectRoute`), or the SDK's whole request path
per call (`SdkRoute`, the fallback).

Why two: everything the SDK computes for a chat-completions POST other than the body (the URL
from the base URL, the auth header from the key, its User-Agent and X-Stainless headers, the
timeout) is the same for every call, yet `AsyncOpenAI.post` rebuilds it each time through
httpx2's URL and Headers models, pydantic option copies and its httpx2-over-aiohttp adapter:
about 1 ms of client CPU per call, more than the rest of agentsim spends on a decision. The
direct route asks the SDK for that request once (its own `_prepare_options`, `_build_request`
and `_prepare_request`, the steps `post` runs) and sends each body with those headers. Error
answers still become the SDK's exceptions: the SDK's `_make_status_error_from_response` turns a
4xx/5xx into RateLimitError, AuthenticationError, ...; a timeout or a dropped connection
becomes the SDK's APITimeoutError / APIConnectionError. So `faults.sdk_errors` sees the same
classes on either route.

The direct route is only taken when the SDK's request really is invariant: the SDK builds it
twice and the two must match header for header (a per-call idempotency key or signature would
differ); no per-call auth hook is configured (custom httpx auth, an API-key provider, workload
identity, a provider runtime); no proxy is configured for the URL (the SDK's client would send
through it). Anything else, including an SDK whose private helpers moved, keeps `SdkRoute`,
which is correct, only slower. `tests/test_openai_routes.py` pins that the installed SDK gets the
direct route and that the server sees the same headers from both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Protocol

import aiohttp

# Left to aiohttp: the length per body, the encodings it can decode, and the host per URL (a
# redirect to another host must not carry this one's).
_PER_BODY = frozenset({"content-length", "accept-encoding", "host"})
# Hooks that change a request at send time, which a request built once would miss.
_PER_CALL_AUTH = ("custom_auth", "_api_key_provider", "_workload_identity_auth", "_provider_runtime")


class Route(Protocol):
    name: str

    async def post(self, body: bytes) -> tuple[bytes, Mapping[str, str]]:
        """The answer's body and headers; a failure raises the SDK's exception."""
        ...

    async def aclose(self) -> None: ...


class SdkRoute:
    """Every call through `AsyncOpenAI.post`: the SDK's whole request path."""

    name = "sdk"

    def __init__(self, client: Any, path: str) -> None:
        self.client = client
        self.path = path
        self._options: Any = {"headers": {"Content-Type": "application/json"}}
        self._response_type = _httpx().Response

    async def post(self, body: bytes) -> tuple[bytes, Mapping[str, str]]:
        response = await self.client.post(self.path, content=body, options=self._options, cast_to=self._response_type)
        return response.content, response.headers

    async def aclose(self) -> None:
        """The SDK client is the backend's to close."""


class DirectRoute:
    """Each body POSTed with the SDK-built URL, headers and timeout over one aiohttp session."""

    name = "direct"

    def __init__(self, client: Any, sdk: Any, template: Any, *, max_connections: int) -> None:
        self._httpx = _httpx()
        self.client = client
        self.sdk = sdk
        self.template = template  # the SDK's own request: the SDK's exceptions point at it
        self.url = str(template.url)
        self.headers = {key: value for key, value in template.headers.items() if key.lower() not in _PER_BODY}
        timeout = template.extensions.get("timeout") or {}
        # The SDK's aiohttp transport maps httpx2's timeout to aiohttp's the same way.
        self.timeout = aiohttp.ClientTimeout(sock_connect=timeout.get("connect"), sock_read=timeout.get("read"),
                                             connect=timeout.get("pool"))
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    async def open(cls, client: Any, sdk: Any, path: str, *, max_connections: int) -> DirectRoute | None:
        """The direct route for `client`, or None where a request built once would not be the
        request the SDK sends (see the module's docstring)."""
        try:
            if any(getattr(client, hook, None) is not None for hook in _PER_CALL_AUTH):
                return None
            first, second = await _sdk_request(client, path), await _sdk_request(client, path)
            if (first.method != "POST" or first.url != second.url or first.extensions != second.extensions
                    or list(first.headers.multi_items()) != list(second.headers.multi_items())):
                return None
            if first.url.scheme not in ("http", "https") or _proxied(client, first.url):
                return None
        except Exception:  # an SDK whose private helpers moved: its whole path still works
            return None
        return cls(client, sdk, first, max_connections=max_connections)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            # The SDK's TLS settings (httpx2's context: certifi, SSL_CERT_FILE); made only for https.
            ssl = self._httpx.create_ssl_context() if self.template.url.scheme == "https" else True
            connector = aiohttp.TCPConnector(limit=self.max_connections, ssl=ssl)
            # The SDK's headers as the session's: copied per request in C, not merged in Python.
            self._session = aiohttp.ClientSession(connector=connector, headers=self.headers)
        return self._session

    async def post(self, body: bytes) -> tuple[bytes, Mapping[str, str]]:
        try:
            async with self.session.post(self.url, data=body, timeout=self.timeout) as response:
                content = await response.read()
                status, headers = response.status, response.headers
        except asyncio.TimeoutError:
            raise self.sdk.APITimeoutError(request=self.template) from None
        except aiohttp.ClientError:
            raise self.sdk.APIConnectionError(request=self.template) from None
        if status >= 400:
            raise self.client._make_status_error_from_response(self._response(status, headers, content))
        return content, headers

    def _response(self, status: int, headers: Any, content: bytes) -> Any:
        """An error answer as the httpx2 Response the SDK's error classes hold (aiohttp has
        already decoded the body, so its content-encoding goes)."""
        kept = [(key, value) for key, value in headers.items() if key.lower() != "content-encoding"]
        return self._httpx.Response(status, headers=kept, content=content, request=self.template)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _httpx() -> Any:
    """The SDK's HTTP models: httpx2, or httpx under older SDKs."""
    try:
        import httpx2
    except ImportError:
        import httpx as httpx2  # type: ignore[no-redef]
    return httpx2


async def _sdk_request(client: Any, path: str) -> Any:
    """The request `client.post(path, content=...)` would send, built by the SDK's own steps."""
    from openai._models import FinalRequestOptions

    options = FinalRequestOptions.construct(method="post", url=path, content=b"{}",
                                            headers={"Content-Type": "application/json"})
    if client._idempotency_header:  # as `request` does: a key per call, so two builds differ
        options.idempotency_key = client._idempotency_key()
    options = await client._prepare_options(options)
    request = client._build_request(options)
    await client._prepare_request(request)
    return request


def _proxied(client: Any, url: Any) -> bool:
    """Whether the SDK's http client would send `url` through a proxy (HTTPS_PROXY, ...)."""
    http = client._client
    return http._transport_for_url(url) is not http._transport


async def open_route(client: Any, sdk: Any, path: str, *, max_connections: int, direct: bool = True) -> Route:
    route = await DirectRoute.open(client, sdk, path, max_connections=max_connections) if direct else None
    return route if route is not None else SdkRoute(client, path)
