"""The language-model protocol: one request in, one completion out.

Every provider module, the stand-in and every wrapper (cache, limiter, retries) implements
`LanguageModel`, so wrappers compose and each is tested alone. Requests carry everything that
determines an answer, which is also what the response cache keys on.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ..errors import ParameterError


class Message(NamedTuple):
    role: str  # "system", "user" or "assistant"
    content: str


# The widest ranges a provider takes: OpenAI's temperatures go to 2, and no model answers more
# tokens than a million (a bigger number was a typo that would reserve a fortune in the budget).
MAX_TEMPERATURE = 2.0
MAX_TOKENS = 1_000_000


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Sampling:
    """Sampling parameters, sent explicitly to every provider (servers' own defaults differ)."""

    temperature: float = 0.5
    top_k: int | None = None
    top_p: float | None = None
    max_tokens: int = 6
    repetition_penalty: float | None = None
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.temperature <= MAX_TEMPERATURE:
            raise ParameterError(f"temperature must be between 0 and {MAX_TEMPERATURE:g} (got {self.temperature})")
        if self.top_k is not None and self.top_k < 1:
            raise ParameterError(f"top_k must be >= 1 or None (got {self.top_k})")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ParameterError(f"top_p must be in (0, 1] or None (got {self.top_p})")
        if not 1 <= self.max_tokens <= MAX_TOKENS:
            raise ParameterError(f"max_tokens must be between 1 and {MAX_TOKENS:,} (got {self.max_tokens})")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Grammar:
    """A constraint on the reply's text, for schema-constrained decoding: a regular expression
    (`kind="regex"`) or a JSON schema given as JSON text (`kind="json"`). TGI sends it as its
    `grammar` parameter, OpenAI-compatible servers (vLLM) as `guided_regex` / `response_format`;
    providers without constrained decoding ignore it (docs/backends.md).

    A choice grammar (`Grammar.choice`) allows a finite set of replies, one per option: `value`
    is the regex that matches exactly them (for servers that take a regex) and `choices` lists
    each reply with its option. With a finite set of replies, the chance of each option under
    the sampler is computable exactly (llm/scoring.py)."""

    kind: str
    value: str
    choices: tuple[tuple[str, str], ...] = ()  # (reply, option) for a choice grammar

    def __post_init__(self) -> None:
        if self.kind not in ("regex", "json"):
            raise ParameterError(f"grammar kind must be 'regex' or 'json' (got '{self.kind}')")
        if not self.value:
            raise ParameterError("grammar value must be a non-empty regex or JSON schema")
        replies = [reply for reply, _ in self.choices]
        if any(not reply for reply in replies) or len(set(replies)) != len(replies):
            raise ParameterError("a choice grammar's replies must be distinct and non-empty")
        if any(other != reply and other.startswith(reply) for reply in replies for other in replies):
            raise ParameterError("no reply of a choice grammar may begin another (end each with a delimiter)")

    @classmethod
    def choice(cls, replies: Mapping[str, str]) -> Grammar:
        """The grammar that allows exactly `replies` (option -> its reply text)."""
        pairs = tuple((reply, option) for option, reply in replies.items())
        return cls(kind="regex", value="(?:" + "|".join(re.escape(reply) for reply, _ in pairs) + ")", choices=pairs)

    def longest_reply_tokens(self) -> int:
        """Tokens enough to write any reply of a choice grammar (every token writes a byte at
        least), so that no sampled path is cut before it names its option."""
        return max((len(reply.encode()) for reply, _ in self.choices), default=0)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """What determines an answer. `options` lists the valid answers when the game knows them,
    so backends that can score a choice grammar report each option's probability.

    `situation` is the game's own view of what the prompt shows (a `NamingSituation`, ...).
    Providers never look at it and the cache does not key on it: it is the same information
    as the messages, given to in-process rules (the stand-in) so that they need not read the
    prompt back. A rule answering over HTTP reads the text instead."""

    messages: tuple[Message, ...]
    sampling: Sampling
    seed: int | None = None
    options: tuple[str, ...] = ()
    replicate: int = 0
    grammar: Grammar | None = None
    situation: Any = dataclasses.field(default=None, compare=False, repr=False)

    def with_turns(self, *turns: Message, seed: int | None = None) -> Request:
        """The same request continued by more turns (a re-ask after an unusable reply)."""
        return dataclasses.replace(self, messages=self.messages + turns, seed=self.seed if seed is None else seed)


@dataclasses.dataclass(slots=True, kw_only=True)
class Completion:
    """What came back, with what accounting and analysis need."""

    text: str
    prompt_tokens: int = 0  # every input token, those read from or written to a prompt cache included
    completion_tokens: int = 0
    # Of the prompt's tokens, those the provider read from its prompt cache and those it wrote
    # there (Anthropic's cache_creation_input_tokens): billed at their own prices (llm/prices.py).
    cached_prompt_tokens: int = 0
    cache_write_tokens: int = 0
    model: str = ""
    # Each option's chance that the backend's own sampler writes its reply, scored exactly
    # (llm/scoring.py); None where the backend cannot score. `unscored` bounds what the scoring
    # left out: each option's probability lies in [p, p + unscored].
    option_probabilities: Mapping[str, float] | None = None
    unscored: float = 0.0
    raw: Any = None
    cached: bool = False
    # Filled by the wrappers (llm/stack.py) for accounting and the limiter:
    cost_usd: float = 0.0  # what this call cost (0 when served from the cache)
    retries: int = 0  # attempts that failed before this answer
    errors: tuple[str, ...] = ()  # the kinds of those failed attempts
    signals: Mapping[str, float] | None = None  # server hints: queue_time_s, remaining_requests, ...
    sampled_locally: bool = False  # drawn from a stored choice distribution, no call made (llm/choices.py)
    batched: bool = False  # answered through a batch API (llm/batches.py): `cost_usd` is its billed half price
    # The start-up probe its backend sent before it, on the first answer to pass the probe
    # (llm/health.StartupProbe): billed like any call, so recorded as its own usage line.
    probe: Completion | None = None


@runtime_checkable
class LanguageModel(Protocol):
    """A backend. `name` is the spec it was built from (recorded with every run).
    `immediate` is true for in-process rule policies that answer without suspending, which
    lets an encounter skip the concurrency it would otherwise need."""

    name: str
    immediate: bool

    async def complete(self, request: Request) -> Completion: ...

    async def aclose(self) -> None: ...


def estimate_tokens(text: str) -> int:
    """Token count for backends that report none (the stand-in): one token per four characters,
    the usual rule of thumb for English text with BPE vocabularies."""
    return (len(text) + 3) // 4


# Tokens a chat format puts around each message (role markers, separators) and before the
# reply, at most: OpenAI's count 3-4 a message and 3 for the reply; the bound allows more.
FORMAT_TOKENS_PER_MESSAGE = 8
FORMAT_TOKENS_PER_REQUEST = 8


def tokens_at_most(text: str) -> int:
    """A count of `text`'s tokens that no byte-level tokenizer exceeds: its UTF-8 bytes (each
    token of a BPE vocabulary with byte fallback covers at least one byte). What a budget
    reserves with, where it must never count fewer tokens than the provider bills."""
    return len(text.encode())


def prompt_tokens_at_most(messages: tuple[Message, ...] | list[Message]) -> int:
    """A prompt's tokens, at most: its texts' bytes and the chat format's tokens around them."""
    return sum(tokens_at_most(message.content) + FORMAT_TOKENS_PER_MESSAGE for message in messages) \
        + FORMAT_TOKENS_PER_REQUEST


def usage_count(value: Any) -> int:
    """A part of the token usage a provider reports (cached input, cache writes); 0 where it
    gives none, or one a budget cannot trust (negative, not an integer)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
