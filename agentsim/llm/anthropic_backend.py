"""`anthropic:MODEL` through the official SDK (`AsyncAnthropic`), its own retries off.

The system message goes in `system`; re-asks continue the conversation as assistant and user
turns. The key goes once, as `x-api-key`; `--timeout` bounds the whole exchange, body included.
Temperature and top_k are sent explicitly (in the request body, which the SDK passes
through); top_p is left out when a temperature is set, because newer models reject the two
together. Anthropic gives no logprobs and no seed: option probabilities are absent, and
reproducibility comes from the response cache.

Prompt caching: Anthropic caches a prompt's prefix only up to a `cache_control` breakpoint,
bills what it writes there a quarter above the input price and what it reads back at a tenth.
A breakpoint on a prefix that no later call shares only costs more, so agentsim marks a prefix
once it has been seen before (`CacheBreakpoints`): the system text every call of a run shares
(a game's rules), and in a multi-turn conversation the turns before the newest (each call then
reads the history the previous one wrote), where the prefix is long enough for the model to
cache (`min_cacheable_tokens`). A prefix seen once is never marked, so a game whose prompts
share nothing (every prompt unique) pays no premium. The cached and written tokens come back
in the usage and are priced as billed (llm/prices.py). `cache_breakpoints=False`
(`--no-cache-breakpoints`) sends none.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections import OrderedDict
from typing import Any, ClassVar

from ..errors import BackendError
from . import wire
from .base import Completion, Request, estimate_tokens, usage_count
from .faults import rate_limit_signals, sdk_errors, whole_answer_within

KEY_VARIABLE = "ANTHROPIC_API_KEY"

# The shortest prefix Anthropic caches, by model family (its prompt-caching documentation);
# models not listed take the largest, so a breakpoint is never set where it cannot be read.
_MIN_CACHEABLE = (("claude-3-haiku", 2048), ("claude-3-5-haiku", 2048), ("claude-haiku-4-5", 4096),
                  ("claude-opus-4-5", 4096), ("claude-3-opus", 1024), ("claude-3-5-sonnet", 1024),
                  ("claude-3-7-sonnet", 1024), ("claude-sonnet-4", 1024), ("claude-opus-4", 1024))


def min_cacheable_tokens(model: str) -> int:
    """The fewest prompt tokens the model caches at a breakpoint."""
    return max((tokens for prefix, tokens in _MIN_CACHEABLE if model.startswith(prefix)),
               default=max(tokens for _, tokens in _MIN_CACHEABLE))


class CacheBreakpoints:
    """Where a request's breakpoint goes: at the end of the longest prefix of its prompt that an
    earlier request of this backend also began with, if that prefix is long enough to be cached.

    Prefixes are compared at the end of each message (the system text included) and every
    `step` characters within one (moved back to a space or a line break, so the split falls
    between words); a breakpoint inside a message splits it into two text blocks, which the
    model reads as the same text. Rules written before what changes (a game's rules, then its
    round) thus share a prefix across every call, and a conversation shares its earlier turns.
    Remembers the prefixes of about the last `remember` boundaries."""

    EPHEMERAL: ClassVar[dict[str, str]] = {"type": "ephemeral"}

    def __init__(self, min_tokens: int, *, step: int = 1024, remember: int = 200_000) -> None:
        self.min_tokens = min_tokens
        self.step = step
        self.remember = remember
        self.seen: OrderedDict[bytes, None] = OrderedDict()

    def mark(self, system: str, messages: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
        """The `system` and `messages` arguments, a breakpoint set where it pays."""
        texts = [("system", system), *((message["role"], message["content"]) for message in messages)]
        digest, tokens = hashlib.sha256(), 0
        boundaries: list[tuple[int, int, bytes, int]] = []  # (text index, offset in it, prefix digest, tokens)
        for index, (role, text) in enumerate(texts):
            digest.update(f"\x00{role}\x00".encode())
            start = 0
            for offset in [*self._splits(text), len(text)]:
                digest.update(text[start:offset].encode())
                tokens += estimate_tokens(text[start:offset])
                start = offset
                if text:
                    boundaries.append((index, offset, digest.copy().digest(), tokens))
        shared = [(index, offset) for index, offset, key, tokens in boundaries[:-1]
                  if key in self.seen and tokens >= self.min_tokens]
        for *_, key, _ in boundaries:
            self.seen[key] = None
            self.seen.move_to_end(key)
        while len(self.seen) > self.remember:
            self.seen.popitem(last=False)
        blocks: list[Any] = [text for _, text in texts]
        if shared:
            index, offset = shared[-1]
            text = texts[index][1]
            blocks[index] = [{"type": "text", "text": text[:offset], "cache_control": self.EPHEMERAL}]
            if offset < len(text):
                blocks[index].append({"type": "text", "text": text[offset:]})
        marked = [{"role": message["role"], "content": content} for message, content in zip(messages, blocks[1:])]
        return blocks[0], marked

    def _splits(self, text: str) -> list[int]:
        """Offsets within `text`, about every `step` characters, each just before a space or a
        line break (none where a stretch has neither)."""
        splits: list[int] = []
        for end in range(self.step, len(text), self.step):
            split = max(text.rfind(" ", end - self.step, end), text.rfind("\n", end - self.step, end))
            if split > (splits[-1] if splits else 0):
                splits.append(split)
        return splits


class AnthropicModel:
    immediate = False

    def __init__(self, *, name: str, model: str, api_key: str, base_url: str | None = None,
                 timeout_s: float = 60.0, cache_breakpoints: bool = True) -> None:
        import anthropic

        self._anthropic = anthropic
        self.name = name
        self.model = model
        self.timeout_s = timeout_s
        self.breakpoints = CacheBreakpoints(min_cacheable_tokens(model)) if cache_breakpoints else None
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
        if self.breakpoints is not None:
            marked_system, arguments["messages"] = self.breakpoints.mark(system, arguments["messages"])
            if system:
                arguments["system"] = marked_system
        elif system:
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
        except ValueError:
            raise BackendError("anthropic answered a body that is not a message", kind="malformed") from None
        completion = read_message(body, self.model)
        completion.signals = rate_limit_signals(response.headers) or None
        return completion

    async def aclose(self) -> None:
        await self.client.close()


def read_message(body: Any, model: str) -> Completion:
    """A Messages API message (an answer, or one result of a message batch) as a Completion.
    Anthropic counts the input read from its prompt cache and written to it apart from
    `input_tokens`; agentsim's prompt_tokens is every input token, each part billed at its price."""
    try:
        text = "".join(wire.reply_text(block.get("text"), "anthropic") for block in body["content"]
                       if block.get("type") == "text")
        usage = body.get("usage") or {}
        cached, written = usage_count(usage.get("cache_read_input_tokens")), usage_count(usage.get("cache_creation_input_tokens"))
        fresh = int(usage.get("input_tokens") or 0)
        return Completion(text=text, prompt_tokens=fresh + cached + written if fresh >= 0 else fresh,
                          completion_tokens=int(usage.get("output_tokens") or 0), cached_prompt_tokens=cached,
                          cache_write_tokens=written, model=str(body.get("model") or model),
                          raw={"id": body.get("id"), "stop_reason": body.get("stop_reason")})
    except (ValueError, KeyError, TypeError, AttributeError):
        raise BackendError("anthropic answered a body that is not a message", kind="malformed") from None
