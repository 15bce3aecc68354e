"""`tgi:URL`: Text Generation Inference's native `/generate`, over one pooled aiohttp session.

Native rather than the messages API because only `/generate` honours everything the papers
used: seed, top_k, top_p, repetition_penalty, stop, max_new_tokens, `details`, and `grammar`
(regex or JSON schema). No option probabilities: TGI takes the prompt as text (so a token
path cannot be forced) and gives the top tokens of the positions it generated, before its
grammar, which is not the chance of a whole reply (llm/scoring.py; docs/backends.md). TGI's limits
are TGI's own: temperature must be > 0 (0 becomes greedy decoding), top_p strictly below 1
(1 is left out). The response headers feed the limiter: `x-queue-time` (rising queue time
means the server is saturated) and the token counts `x-prompt-tokens` / `x-generated-tokens`.
An optional bearer token comes from HF_TOKEN (for endpoints behind auth).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from ..errors import BackendError
from . import chat_format, wire
from .base import Completion, Request
from .faults import error_for_status, rate_limit_signals

KEY_VARIABLE = "HF_TOKEN"


class TGIModel:
    immediate = False

    def __init__(self, *, name: str, url: str, token: str | None = None, timeout_s: float = 60.0,
                 max_connections: int = 256) -> None:
        self.name = name
        self.endpoint = url.rstrip("/")
        self.model = ""
        self.style: str | None = None
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._info_lock = asyncio.Lock()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self.max_connections)
            self._session = aiohttp.ClientSession(connector=connector, headers=self.headers, timeout=self.timeout)
        return self._session

    async def _chat_style(self) -> str:
        """The served model's chat format, read once from `/info`."""
        if self.style is None:
            async with self._info_lock:
                if self.style is None:
                    info = await self._post_or_get("GET", "/info", None)
                    self.model = str(info.get("model_id", "")) if isinstance(info, dict) else ""
                    self.style = chat_format.format_for(self.model)
        return self.style

    def payload(self, request: Request, style: str) -> dict[str, Any]:
        sampling = request.sampling
        parameters: dict[str, Any] = {"max_new_tokens": sampling.max_tokens, "details": True}
        if sampling.temperature > 0:
            parameters.update(do_sample=True, temperature=sampling.temperature)
        else:
            parameters["do_sample"] = False
        if sampling.top_k is not None:
            parameters["top_k"] = sampling.top_k
        if sampling.top_p is not None and sampling.top_p < 1:
            parameters["top_p"] = sampling.top_p
        if sampling.repetition_penalty is not None:
            parameters["repetition_penalty"] = sampling.repetition_penalty
        if sampling.stop:
            parameters["stop"] = list(sampling.stop)
        if request.seed is not None:
            parameters["seed"] = request.seed
        if request.grammar is not None:
            value: Any = json.loads(request.grammar.value) if request.grammar.kind == "json" else request.grammar.value
            parameters["grammar"] = {"type": request.grammar.kind, "value": value}
        return {"inputs": chat_format.render(request.messages, style), "parameters": parameters}

    async def complete(self, request: Request) -> Completion:
        style = await self._chat_style()
        body, headers = await self._post_or_get("POST", "/generate", self.payload(request, style), with_headers=True)
        try:
            text = wire.reply_text(body["generated_text"], "tgi")
            details = body.get("details") or {}
            prompt_tokens = int(headers.get("x-prompt-tokens") or 0)
            completion_tokens = int(headers.get("x-generated-tokens") or details.get("generated_tokens") or 0)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise BackendError("tgi answered a body that is not a generation", kind="malformed") from None
        return Completion(
            text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, model=self.model or "tgi",
            raw={"finish_reason": details.get("finish_reason"), "seed": details.get("seed")},
            signals=rate_limit_signals(headers) or None,
        )

    async def _post_or_get(self, method: str, path: str, payload: Any, *, with_headers: bool = False) -> Any:
        data = None if payload is None else wire.encode(payload)
        try:
            async with self.session.request(method, self.endpoint + path, data=data) as response:
                raw = await response.read()
                if response.status >= 400:
                    raise error_for_status("tgi", response.status, response.headers, wire.decode_or_none(raw), key_variable=KEY_VARIABLE)
                try:
                    body = wire.decode(raw)
                except ValueError:
                    raise BackendError("tgi answered a body that is not JSON", kind="malformed") from None
                return (body, response.headers) if with_headers else body
        except TimeoutError:
            raise BackendError("tgi call timed out", kind="timeout") from None
        except aiohttp.ClientError:
            raise BackendError("tgi connection failed or dropped", kind="connection") from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

