"""Per-run accounting of policy calls, split by backend: what the live view and summaries show.

Latency percentiles come from a log-bucketed histogram (eight buckets per doubling, so within
about 9%), which keeps a checkpoint small however long the run; exact per-call latencies are
in the store.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import checkpoints

if TYPE_CHECKING:
    from .llm.base import Completion


PROBE = " (start-up probe)"  # the usage line of a backend's start-up probe: LABEL (start-up probe)


@dataclass
class LatencyHistogram:
    counts: dict[int, int] = field(default_factory=dict)
    total: int = 0

    def checkpoint_problem(self) -> str | None:
        """What a checkpoint's histogram breaks (agentsim/checkpoints.py), or None."""
        if any(count < 0 for count in self.counts.values()) or sum(self.counts.values()) != self.total:
            return f"with bucket counts that do not add up to its total {self.total}"
        return None

    def add(self, latency_us: int) -> None:
        bits = latency_us.bit_length()
        # The power of two, then the three bits below the leading one: 8 buckets per doubling.
        bucket = (bits << 3) | ((latency_us >> (bits - 4)) & 7 if bits > 3 else latency_us & 7)
        self.counts[bucket] = self.counts.get(bucket, 0) + 1
        self.total += 1

    def percentile(self, fraction: float) -> float:
        """Latency in seconds below which `fraction` of calls fall (bucket midpoint)."""
        if not self.total:
            return 0.0
        rank = fraction * self.total
        seen = 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= rank:
                return _bucket_middle(bucket) / 1e6
        return 0.0


def _bucket_middle(bucket: int) -> float:
    bits, eighth = bucket >> 3, bucket & 7
    if bits <= 3:
        return float(eighth)
    return ((8 + eighth + 0.5) / 16) * (1 << bits)


@dataclass
class BackendUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Of prompt_tokens, those the provider read from its prompt cache and wrote to it (billed apart).
    cached_prompt_tokens: int = 0
    cache_write_tokens: int = 0
    invalid_replies: int = 0
    reasks: int = 0
    decisions: int = 0  # language-model decisions taken (a reply's, or a fallback)
    fallbacks: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    in_flight: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0
    sampled_locally: int = 0  # answered by a draw from a stored choice distribution, no call (llm/choices.py)
    retries: int = 0

    def checkpoint_problem(self) -> str | None:
        """What a checkpoint's usage breaks (agentsim/checkpoints.py): a negative count, or
        more fallbacks than decisions."""
        counts = {name: getattr(self, name) for name in ("calls", "prompt_tokens", "completion_tokens", "invalid_replies",
                                                         "reasks", "decisions", "fallbacks", "in_flight", "cache_hits",
                                                         "sampled_locally", "retries")}
        negative = [name for name, value in counts.items() if value < 0]
        if negative or self.cost_usd < 0 or any(value < 0 for value in self.errors.values()):
            return f"with a negative count ({', '.join(negative) or 'cost or errors'})"
        if self.fallbacks > self.decisions:
            return f"with {self.fallbacks} fallbacks of {self.decisions} decisions"
        return None

    def count(self, prompt_tokens: int, completion_tokens: int, latency_us: int) -> None:
        """One answered call."""
        self.calls += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.latency.add(latency_us)

    def answered(self, completion: Completion) -> None:
        """What the backend stack reports beside tokens: cost, a cache hit, retried attempts."""
        self.cost_usd += completion.cost_usd
        self.cached_prompt_tokens += completion.cached_prompt_tokens
        self.cache_write_tokens += completion.cache_write_tokens
        self.cache_hits += completion.cached
        self.sampled_locally += completion.sampled_locally
        if completion.retries:
            self.retries += completion.retries
            for kind in completion.errors:
                self.errors[kind] = self.errors.get(kind, 0) + 1

    def as_dict(self) -> dict[str, object]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "invalid_replies": self.invalid_replies,
            "reasks": self.reasks,
            "decisions": self.decisions,
            "fallbacks": self.fallbacks,
            "errors": dict(self.errors),
            "cost_usd": round(self.cost_usd, 6),
            "cache_hits": self.cache_hits,
            "sampled_locally": self.sampled_locally,
            "retries": self.retries,
            "latency_p50_s": round(self.latency.percentile(0.50), 6),
            "latency_p95_s": round(self.latency.percentile(0.95), 6),
            "latency_p99_s": round(self.latency.percentile(0.99), 6),
        }


@dataclass
class RunUsage:
    by_backend: dict[str, BackendUsage] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def backend(self, label: str) -> BackendUsage:
        usage = self.by_backend.get(label)
        if usage is None:
            usage = self.by_backend[label] = BackendUsage()
        return usage

    def total(self) -> BackendUsage:
        total = BackendUsage()
        for usage in self.by_backend.values():
            total.calls += usage.calls
            total.prompt_tokens += usage.prompt_tokens
            total.completion_tokens += usage.completion_tokens
            total.cached_prompt_tokens += usage.cached_prompt_tokens
            total.cache_write_tokens += usage.cache_write_tokens
            total.invalid_replies += usage.invalid_replies
            total.reasks += usage.reasks
            total.decisions += usage.decisions
            total.fallbacks += usage.fallbacks
            total.in_flight += usage.in_flight
            total.cost_usd += usage.cost_usd
            total.cache_hits += usage.cache_hits
            total.sampled_locally += usage.sampled_locally
            total.retries += usage.retries
            for kind, count in usage.errors.items():
                total.errors[kind] = total.errors.get(kind, 0) + count
            for bucket, count in usage.latency.counts.items():
                total.latency.counts[bucket] = total.latency.counts.get(bucket, 0) + count
            total.latency.total += usage.latency.total
        return total

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state.pop("started", None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.started = time.monotonic()
        for usage in self.by_backend.values():
            usage.in_flight = 0


checkpoints.register(LatencyHistogram, BackendUsage, RunUsage)
