"""Providers' prompt caches as a run meets them, played call by call: what the estimate prices
(agentsim/estimate.py), each provider's descriptor naming its own (llm/providers.py).

- Anthropic caches a prefix only at a `cache_control` breakpoint, and agentsim's client sets
  one where a prefix was seen before (`CacheBreakpoints`, llm/anthropic_backend.py: the same
  object the run uses, so the estimate places the same breakpoints). The provider writes the
  prefix up to a breakpoint if it is at least the model's minimum cacheable length
  (`min_cacheable_tokens`) and not cached yet, and reads the longest prefix ending at one of
  the request's block boundaries, up to its breakpoint, that an earlier breakpoint wrote.
  Writes are billed above the input price, reads at a tenth (llm/prices.py).
- OpenAI caches every prompt by itself: a prompt of 1,024 tokens or more reads the longest
  prefix it shares with an earlier prompt, counted in steps of 128 tokens from 1,024; nothing
  is billed for writing (a model with a cache-write price pays it where genai-prices says).

Both assume the cache stays warm between a prefix's uses (Anthropic keeps an entry 5 minutes
from its last use, OpenAI 5 to 10): a run whose calls sharing a prefix come further apart
reads less, and pays more, than estimated.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from .anthropic_backend import CacheBreakpoints, min_cacheable_tokens
from .base import Message

OPENAI_MIN_TOKENS = 1024
OPENAI_STEP_TOKENS = 128


class AnthropicPromptCache:
    """Anthropic's cache of `model`'s prompts, behind agentsim's breakpoints (none when
    `breakpoints` is off: nothing is cached then)."""

    def __init__(self, model: str, count: Callable[[str], int], breakpoints: bool) -> None:
        self.min_tokens = min_cacheable_tokens(model)
        self.count = count
        self.breakpoints = CacheBreakpoints(self.min_tokens) if breakpoints else None
        self.written: set[bytes] = set()

    def call(self, messages: Sequence[Message]) -> tuple[int, int]:
        if self.breakpoints is None:
            return 0, 0
        system = "\n\n".join(message.content for message in messages if message.role == "system")
        turns = [{"role": message.role, "content": message.content} for message in messages if message.role != "system"]
        marked_system, marked = self.breakpoints.mark(system, turns)
        blocks = [("system", block) for block in _blocks(marked_system)]
        blocks += [(turn["role"], block) for turn in marked for block in _blocks(turn["content"])]
        last = max((index for index, (_, block) in enumerate(blocks) if block.get("cache_control")), default=None)
        if last is None:
            return 0, 0
        digest, text, read = hashlib.sha256(), "", 0
        key, tokens = b"", 0
        for role, block in blocks[:last + 1]:
            digest.update(f"\x00{role}\x00{block.get('text', '')}".encode())
            text += str(block.get("text", ""))
            key, tokens = digest.digest(), self.count(text)
            if key in self.written:
                read = tokens
        if tokens < self.min_tokens or key in self.written:
            return read, 0
        self.written.add(key)
        return read, tokens - read


class OpenAIPromptCache:
    """OpenAI's automatic prefix cache (it takes no breakpoints)."""

    def __init__(self, model: str, count: Callable[[str], int], breakpoints: bool) -> None:
        self.count = count
        self.seen: set[bytes] = set()

    def call(self, messages: Sequence[Message]) -> tuple[int, int]:
        text = "".join(f"\x00{message.role}\x00{message.content}" for message in messages)
        step = 4 * OPENAI_STEP_TOKENS  # characters between the prefixes looked up: about one step of tokens
        cached = 0
        for end in range(step, len(text) + 1, step):
            key = hashlib.sha256(text[:end].encode()).digest()
            if key in self.seen:
                tokens = self.count(text[:end])
                if tokens >= OPENAI_MIN_TOKENS:
                    cached = OPENAI_MIN_TOKENS + (tokens - OPENAI_MIN_TOKENS) // OPENAI_STEP_TOKENS * OPENAI_STEP_TOKENS
            self.seen.add(key)
        return min(cached, sum(self.count(message.content) for message in messages)), 0


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [block for block in content if isinstance(block, dict)]
