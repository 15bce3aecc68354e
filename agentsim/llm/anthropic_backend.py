"""`anthropic:MODEL` through the official SDK (`AsyncAnthropic`), its own retries off.

The system message goes in `system`; re-asks continue the conversation as assistant and user
turns. The key goes once, as `x-api-key`; `--timeout` bounds the whole exchange, body included.
Temperature and top_k are sent explicitly (in the request body, which the SDK passes
through); top_p is left out when a temperature is set, because newer models reject the two
together. Anthropic gives no logprobs and no seed: option probabilities are absent, and
reproducibility comes from the response cache.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from ..errors import BackendError
from . import wire
from .base import Completion, Request
from .faults import rate_limit_signals, sdk_errors, whole_answer_within

KEY_VARIABLE = "ANTHROPIC_API_KEY"


class AnthropicModel:
    immediate = False

    def __init__(self, *, name: str, model: str, api_key: str, base_url: str | None = None,
                 timeout_s: float = 60.0) -> None:
        import anthropic

        self._anthropic = anthropic
        self.name = name
        self.model = model
        self.timeout_s = timeout_s
        # The Messages API authenticates with `x-api-key`. SDK versions differ (some send the key
        # as a bearer token, which Anthropic-compatible servers refuse): send the documented header
        # once, and no Authorization header with the same key (`omit` is the SDK's public way).
        self.client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s,
                                               default_headers={"x-api-key": api_key,
                                                                "Authorization": anthropic.omit})  # type: ignore[dict-item]
        self.endpoint = str(self.client.base_url)

    def arguments(self, request: Request) -> dict[str, Any]:
        sampling = request.sampling
        system = "\n\n".join(message.content for message in request.messages if message.role == "system")
        arguments: dict[str, Any] = {
            "model": self.model,
            "max_tokens": sampling.max_tokens,
            "messages": [{"role": message.role, "content": message.content}
                         for message in request.messages if message.role != "system"],
        }
        if system:
            arguments["system"] = system
        if sampling.stop:
            arguments["stop_sequences"] = list(sampling.stop)
        extra: dict[str, Any] = {"temperature": min(sampling.temperature, 1.0)}
        if sampling.top_k is not None:
            extra["top_k"] = sampling.top_k
        arguments["extra_body"] = extra
        return arguments

    async def complete(self, request: Request) -> Completion:
        async with whole_answer_within("anthropic", self.timeout_s):
            with sdk_errors("anthropic", self._anthropic, key_variable=KEY_VARIABLE):
                response = await self.client.messages.with_raw_response.create(**self.arguments(request))
                content = response.content if hasattr(response, "content") else response.read()
                if inspect.isawaitable(content):
                    content = await content
        try:
            body = json.loads(content)
            text = "".join(wire.reply_text(block.get("text"), "anthropic") for block in body["content"]
                           if block.get("type") == "text")
            usage = body.get("usage") or {}
        except (ValueError, KeyError, TypeError, AttributeError):
            raise BackendError("anthropic answered a body that is not a message", kind="malformed") from None
        return Completion(
            text=text,
            prompt_tokens=int(usage.get("input_tokens") or 0),
            completion_tokens=int(usage.get("output_tokens") or 0),
            model=str(body.get("model") or self.model),
            raw={"id": body.get("id"), "stop_reason": body.get("stop_reason")},
            signals=rate_limit_signals(response.headers) or None,
        )

    async def aclose(self) -> None:
        await self.client.close()
