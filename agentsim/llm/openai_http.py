"""`openai:MODEL@URL` against an OpenAI-compatible server that is not OpenAI's (vLLM,
llama-server, TGI's messages API, the stand-in server): the lean path.

The official SDK builds typed request and response models, a retry and header machinery and an
httpx-style transport for every call: 2-5 ms of CPU a call, which caps one process at a few
hundred calls a second, below what one GPU serving a small model answers. Here the request body
is the SDK path's (`openai_backend.chat_arguments`, its `extra_body` merged in, as the SDK
sends it), posted over one pooled aiohttp session, and the answer is read by the same
`read_completion`. What the run sees is the same: the auth header (`Authorization: Bearer`),
error answers through `faults.error_for_status` (kinds, Retry-After, a refused key stopping
the run), `--timeout` over the whole exchange, body included (aiohttp's total timeout), a
dropped connection as `connection`, a body that is not a completion as `malformed`, usage and
rate-limit headers. `endpoint`, what the response cache keys on, is written as the SDK writes
its base URL, so a cache filled through either path serves the other.

OpenAI's own API (no base URL, or openai.com / azure.com) keeps the SDK (`openai_backend`):
`specs` chooses by `openai_backend.hosted`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from ..errors import BackendError
from . import wire
from .base import Completion, Request
from .faults import error_for_status
from .openai_backend import KEY_VARIABLE, chat_arguments, read_completion


class OpenAIHTTPModel:
    immediate = False

    def __init__(self, *, name: str, model: str, api_key: str, base_url: str, timeout_s: float = 60.0,
                 max_connections: int = 256) -> None:
        self.name = name
        self.model = model
        self.endpoint = sdk_base_url(base_url)
        endpoint = urlsplit(self.endpoint)  # the route goes before a query string, which stays, as the SDK sends it
        self.url = urlunsplit(endpoint._replace(path=endpoint.path.rstrip("/") + "/chat/completions"))
        self.timeout_s = timeout_s
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                        "Accept": "application/json"}
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.max_connections)
            self._session = aiohttp.ClientSession(connector=connector, headers=self.headers, timeout=self.timeout)
        return self._session

    def body(self, request: Request) -> dict[str, Any]:
        """The JSON body the SDK would send for `request`."""
        arguments = chat_arguments(self.model, request, compatible=True)
        arguments.update(arguments.pop("extra_body", None) or {})
        return arguments

    async def complete(self, request: Request) -> Completion:
        data = wire.encode(self.body(request))
        try:
            async with self.session.post(self.url, data=data) as response:
                answer = await response.read()
                if response.status >= 400:
                    raise error_for_status("openai", response.status, response.headers, wire.decode_or_none(answer),
                                           key_variable=KEY_VARIABLE)
                headers = response.headers
        except TimeoutError:
            raise BackendError(f"openai sent no whole answer within --timeout {self.timeout_s:g} s",
                               kind="timeout") from None
        except aiohttp.ClientError:
            raise BackendError("openai connection failed or dropped", kind="connection") from None
        return read_completion(answer, headers, self.model)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def sdk_base_url(url: str) -> str:
    """`url` as the SDK keeps a base URL: scheme and host in lower case, no default port, one
    trailing slash (so the response cache's key is the same on both paths)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    netloc = host if parts.port is None or parts.port == default else f"{host}:{parts.port}"
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return urlunsplit((parts.scheme.lower(), netloc, path, parts.query, ""))

