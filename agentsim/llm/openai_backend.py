"""`openai:MODEL`: OpenAI, and any OpenAI-compatible server (vLLM, TGI's messages API) with a
base URL, through the official SDK (`AsyncOpenAI`) and its public API only.

Each call is `client.chat.completions.with_raw_response.create(...)`: the SDK builds and sends
the request (URL, auth header, its default headers, timeout) and raises its own exceptions for
every error answer, translated once in `faults.sdk_errors`; `--timeout` bounds the whole
exchange, body included (`faults.whole_answer_within`: the SDK's timeouts are per read); the raw response gives the
rate-limit headers, and the answer is read from its JSON. No option probabilities: the chat
API's top log probabilities are those of the positions the model generated, raw, before any
grammar, so they are not the chance of a whole reply under the sampler (llm/scoring.py;
docs/backends.md says what each server could give). The SDK's own retries are off (`max_retries=0`): agentsim's retry
wrapper retries, and two layers would multiply attempts. Against a compatible server (a base
URL is given), top_k and repetition_penalty go in the body beside the standard parameters
(`extra_body`), the way vLLM expects, and every sampling parameter is sent explicitly, since
such servers substitute their own defaults for omitted ones. A grammar goes as vLLM's
`guided_regex` or as a JSON-schema `response_format`; a regex also as llama.cpp's GBNF `grammar`
(llama-server, llama_cpp.server), where llama-cpp-python is installed to translate it.

This is the path for OpenAI's own API (no base URL, or an openai.com or azure.com one). Other
base URLs, a local vLLM or llama-server, take the lean path in llm/openai_http.py: the same
request body and answer reading (`chat_arguments`, `read_completion`), posted with aiohttp,
at a fraction of the SDK's CPU per call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..errors import BackendError
from . import wire
from .base import Completion, Request, usage_count
from .faults import rate_limit_signals, sdk_errors, whole_answer_within
from .grammars import gbnf_if_available

KEY_VARIABLE = "OPENAI_API_KEY"


class OpenAIModel:
    immediate = False

    def __init__(self, *, name: str, model: str, api_key: str, base_url: str | None = None,
                 timeout_s: float = 60.0, max_connections: int = 256) -> None:
        try:
            import httpx2 as httpx
        except ImportError:  # older SDKs ride on httpx
            import httpx  # type: ignore[no-redef]
        import openai

        self._openai = openai
        self.name = name
        self.model = model
        self.compatible = base_url is not None
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        try:
            http_client = openai.DefaultAioHttpClient(limits=limits, timeout=timeout_s)
        except RuntimeError:  # an SDK without its aiohttp transport: its default httpx client
            http_client = openai.DefaultAsyncHttpxClient(limits=limits, timeout=timeout_s)
        self.timeout_s = timeout_s
        self.client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s,
                                         http_client=http_client)
        self.endpoint = str(self.client.base_url)

    def arguments(self, request: Request) -> dict[str, Any]:
        """The chat.completions.create arguments for `request` (what the SDK does not type goes
        in `extra_body`)."""
        return chat_arguments(self.model, request, compatible=self.compatible)

    async def complete(self, request: Request) -> Completion:
        async with whole_answer_within("openai", self.timeout_s):
            with sdk_errors("openai", self._openai, key_variable=KEY_VARIABLE):
                raw = await self.client.chat.completions.with_raw_response.create(**self.arguments(request))
                answer, headers = raw.content, raw.headers
        return read_completion(answer, headers, self.model)

    async def aclose(self) -> None:
        await self.client.close()


def chat_arguments(model: str, request: Request, *, compatible: bool) -> dict[str, Any]:
    """The chat.completions.create arguments for `request`; what the SDK does not type goes in
    `extra_body` (the lean path merges it into the body, as the SDK does)."""
    sampling = request.sampling
    arguments: dict[str, Any] = {
        "model": model,
        "messages": [{"role": message.role, "content": message.content} for message in request.messages],
        "temperature": sampling.temperature,
    }
    extra: dict[str, Any] = {}
    if compatible:
        arguments["max_tokens"] = sampling.max_tokens
        arguments["top_p"] = 1.0 if sampling.top_p is None else sampling.top_p
        # unset: 0, "all tokens" to vLLM (0.8 on) and llama.cpp's servers (llama_cpp.server refuses -1)
        extra["top_k"] = 0 if sampling.top_k is None else sampling.top_k
        extra["repetition_penalty"] = 1.0 if sampling.repetition_penalty is None else sampling.repetition_penalty
        # llama.cpp's servers: min_p defaults to 0.05 (it would cut the sampler's tail) and
        # the penalty goes by another name (llama_cpp.server defaults it to 1.1)
        extra["min_p"] = 0.0
        extra["repeat_penalty"] = extra["repetition_penalty"]
    else:
        arguments["max_completion_tokens"] = sampling.max_tokens
        if sampling.top_p is not None:
            arguments["top_p"] = sampling.top_p
    if sampling.stop:
        arguments["stop"] = list(sampling.stop)
    if request.seed is not None:
        arguments["seed"] = request.seed
    grammar = request.grammar
    if grammar is not None:
        if grammar.kind == "json":
            arguments["response_format"] = {"type": "json_schema",
                                            "json_schema": {"name": "answer", "schema": json.loads(grammar.value)}}
        elif compatible:  # vLLM: guided_regex up to 0.10, structured_outputs after
            extra["guided_regex"] = grammar.value
            extra["structured_outputs"] = {"regex": grammar.value}
            gbnf = gbnf_if_available(grammar)  # llama.cpp's servers take GBNF only
            if gbnf is not None:
                extra["grammar"] = gbnf
    if extra:
        arguments["extra_body"] = extra
    return arguments


def read_completion(answer: bytes, headers: Mapping[str, str], model: str) -> Completion:
    """A chat completion's body and headers as agentsim's Completion."""
    try:
        body = wire.decode(answer)
        choice = body["choices"][0]
        text = wire.reply_text(choice["message"]["content"], "openai")
        usage = body.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError):
        raise BackendError("openai answered a body that is not a chat completion", kind="malformed") from None
    return Completion(
        text=text,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        # OpenAI caches prompt prefixes of 1,024 tokens or more by itself and bills the cached part
        # at its cached-input price; prompt_tokens counts them too.
        cached_prompt_tokens=usage_count((usage.get("prompt_tokens_details") or {}).get("cached_tokens")),
        model=str(body.get("model") or model),
        raw={"id": body.get("id"), "finish_reason": choice.get("finish_reason"),
             "system_fingerprint": body.get("system_fingerprint")},
        signals=rate_limit_signals(headers) or None,
    )


def hosted(base_url: str | None) -> bool:
    """Whether a base URL is OpenAI's own API (or Azure's): the SDK's path, not the lean one."""
    if base_url is None:
        return True
    host = (urlsplit(base_url).hostname or "").lower()
    return host in ("openai.com", "azure.com") or host.endswith((".openai.com", ".azure.com"))

