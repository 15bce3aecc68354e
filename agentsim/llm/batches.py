"""Batch APIs: calls that wait for nothing, answered at half price within hours (`--batch`).

OpenAI's Batch API and Anthropic's Message Batches bill a request at half its interactive price
and answer within 24 hours. agentsim uses them where a run's calls do not depend on one another:
a scenario that declares `independent_calls` (the individual-bias and strategy probes: agents
that never remember, whose prompts depend on the seed alone). Before the run, `prefetch`:

1. plays the experiment on the stand-in (the same runs, seeds and settings, into a scratch
   directory) and keeps every first request it makes (a re-ask depends on a reply: it is asked
   as usual, if the run needs it);
2. drops the requests the response cache already answers, and those of a batch already
   submitted for them (recorded in the cache's `batches` table with their keys before any
   waiting: a run killed while it waits, resumed, polls that batch and submits nothing twice);
3. reserves the rest in the budget (at half price), submits one batch per backend, shows its
   progress while it waits, and stores each answer in the response cache marked as a batch
   answer: the run then plays as usual, and the first time it is served, that answer is an
   ordinary call (the store, the usage, the cost at half price), not a cache hit.

A request the provider could not answer (errored, expired, cancelled) is submitted again in a
new batch, up to the retry policy's attempts; then the experiment stops with one line. The
stand-in server (backends/standin_server.py) speaks both protocols, with their expiry, partial
failures and cancellations, for the tests.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import BackendError
from . import wire
from .anthropic_backend import read_message
from .base import Completion, Message, Request, estimate_tokens
from .cache import ResponseStore, cache_key
from .faults import sdk_errors

BATCH_DISCOUNT = 0.5  # both providers bill a batched request at half its interactive price
# Per batch, at most (OpenAI: 50,000 requests; Anthropic: 100,000): a bigger set goes in several.
MAX_REQUESTS = 50_000


@dataclass(frozen=True)
class BatchState:
    done: bool
    finished: int  # requests answered or failed so far
    total: int
    status: str


class BatchClient(Protocol):
    """One provider's batch protocol."""

    async def submit(self, requests: list[tuple[str, Request]]) -> str: ...

    async def state(self, batch_id: str) -> BatchState: ...

    async def results(self, batch_id: str) -> dict[str, Completion | str]:
        """Each request's completion by its key, or why it failed (errored, expired, cancelled)."""
        ...

    async def aclose(self) -> None:
        """Close what the client opened for itself (not the backend's own connection)."""
        ...


class OpenAIBatches:
    """OpenAI's Batch API through the SDK: a JSONL file uploaded, a batch made of it, polled,
    its output (and error) file read back."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend  # an OpenAIModel or OpenAIHTTPModel: its model, endpoint and key
        self.compatible = getattr(backend, "compatible", True)
        client = getattr(backend, "client", None)
        self.owned = client is None
        if client is None:  # the lean path (a server of your own) keeps no SDK client: one for the batch
            import openai

            key = backend.headers["Authorization"].removeprefix("Bearer ")
            client = openai.AsyncOpenAI(api_key=key, base_url=backend.endpoint, max_retries=2, timeout=backend.timeout_s)
        self.client = client

    def _sdk(self) -> Any:
        """The SDK's exceptions as agentsim's BackendErrors, without the SDK's chained (it can
        hold request headers)."""
        import openai

        from .openai_backend import KEY_VARIABLE

        return sdk_errors("openai", openai, key_variable=KEY_VARIABLE)

    async def submit(self, requests: list[tuple[str, Request]]) -> str:
        from .openai_backend import chat_arguments

        lines = []
        for key, request in requests:
            body = chat_arguments(self.backend.model, request, compatible=self.compatible)
            body.update(body.pop("extra_body", {}))
            lines.append(json.dumps({"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body}))
        with self._sdk():
            upload = await self.client.files.create(file=("agentsim-batch.jsonl", "\n".join(lines).encode(),
                                                          "application/jsonl"), purpose="batch")
            batch = await self.client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                                     completion_window="24h")
        return batch.id

    async def state(self, batch_id: str) -> BatchState:
        with self._sdk():
            batch = await self.client.batches.retrieve(batch_id)
        counts = batch.request_counts
        total = counts.total if counts else 0
        finished = (counts.completed + counts.failed) if counts else 0
        return BatchState(done=batch.status in ("completed", "failed", "expired", "cancelled"), finished=finished,
                          total=total, status=batch.status)

    async def results(self, batch_id: str) -> dict[str, Completion | str]:
        from .openai_backend import read_completion

        with self._sdk():
            batch = await self.client.batches.retrieve(batch_id)
        found: dict[str, Completion | str] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            with self._sdk():
                content = await self.client.files.content(file_id)
            for line in content.content.decode().splitlines():
                if not line.strip():
                    continue
                item = json.loads(line)
                response = item.get("response") or {}
                if response.get("status_code") == 200 and not item.get("error"):
                    found[item["custom_id"]] = read_completion(wire.encode(response["body"]), {}, self.backend.model)
                else:
                    error = item.get("error") or {}
                    found[item["custom_id"]] = str(error.get("code") or response.get("status_code") or "errored")
        return found

    async def aclose(self) -> None:
        if self.owned:
            await self.client.close()


class AnthropicBatches:
    """Anthropic's Message Batches through the SDK: created with every request's parameters,
    polled, its results (JSONL at `results_url`) read back."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend  # an AnthropicModel: its client and request arguments
        self.client = backend.client

    def _sdk(self) -> Any:
        """The SDK's exceptions as agentsim's BackendErrors (see OpenAIBatches._sdk)."""
        from .anthropic_backend import KEY_VARIABLE

        return sdk_errors("anthropic", self.backend._anthropic, key_variable=KEY_VARIABLE)

    async def submit(self, requests: list[tuple[str, Request]]) -> str:
        entries = []
        for key, request in requests:
            params = self.backend.arguments(request)
            params.update(params.pop("extra_body", {}))
            entries.append({"custom_id": key, "params": params})
        with self._sdk():
            batch = await self.client.messages.batches.create(requests=entries)
        return batch.id

    async def state(self, batch_id: str) -> BatchState:
        with self._sdk():
            batch = await self.client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        finished = counts.succeeded + counts.errored + counts.canceled + counts.expired
        return BatchState(done=batch.processing_status == "ended", finished=finished, total=finished + counts.processing,
                          status=batch.processing_status)

    async def results(self, batch_id: str) -> dict[str, Completion | str]:
        with self._sdk():
            raw = await self.client.messages.batches.with_raw_response.results(batch_id)
            content = raw.content if hasattr(raw, "content") else raw.read()
            if asyncio.iscoroutine(content):
                content = await content
        found: dict[str, Completion | str] = {}
        for line in bytes(content).decode().splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            result = item.get("result") or {}
            if result.get("type") == "succeeded":  # read as an interactive answer is: cache reads and writes too
                found[item["custom_id"]] = read_message(result["message"], self.backend.model)
            else:
                found[item["custom_id"]] = str(result.get("type") or "errored")
        return found

    async def aclose(self) -> None:
        return None  # the backend's client: the backend closes it


def batch_client(backend: Any) -> BatchClient:
    """The batch protocol of a provider backend, or a BackendError naming what takes one."""
    from .anthropic_backend import AnthropicModel
    from .openai_backend import OpenAIModel
    from .openai_http import OpenAIHTTPModel

    if isinstance(backend, AnthropicModel):
        return AnthropicBatches(backend)
    if isinstance(backend, OpenAIModel | OpenAIHTTPModel):
        return OpenAIBatches(backend)
    raise BackendError(f"{getattr(backend, 'name', backend)} has no batch API; --batch is for openai: and anthropic: "
                       f"backends", kind="config")


# --- the cache's record of submitted batches ----------------------------------------------------
def _table(store: ResponseStore) -> None:
    store.connection.execute("CREATE TABLE IF NOT EXISTS batches (batch_id TEXT PRIMARY KEY, backend TEXT, "
                             "keys TEXT NOT NULL, submitted REAL, state TEXT)")


def pending_batches(store: ResponseStore, backend: str) -> dict[str, list[str]]:
    """The batches submitted for `backend` whose answers are not stored yet: id -> keys."""
    _table(store)
    return {batch_id: json.loads(keys) for batch_id, keys in store.connection.execute(
        "SELECT batch_id, keys FROM batches WHERE backend = ? AND state = 'submitted'", (backend,))}


def _record(store: ResponseStore, batch_id: str, backend: str, keys: list[str], state: str) -> None:
    _table(store)
    store.connection.execute("INSERT OR REPLACE INTO batches VALUES (?, ?, ?, ?, ?)",
                             (batch_id, backend, json.dumps(keys), time.time(), state))


def store_answer(store: ResponseStore, key: str, backend: str, completion: Completion, cost_usd: float) -> None:
    """Keep a batch answer in the cache, marked so that its first use is billed as a call."""
    store.put(key, backend, {"text": completion.text, "prompt_tokens": completion.prompt_tokens,
                             "completion_tokens": completion.completion_tokens, "model": completion.model,
                             "cached_prompt_tokens": completion.cached_prompt_tokens,
                             "cache_write_tokens": completion.cache_write_tokens,
                             "option_probabilities": None, "unscored": 0.0, "raw": completion.raw,
                             "batch_cost_usd": cost_usd})


async def prefetch(requests: Iterable[Request], *, backend: Any, identity: tuple[str, str, str], store: ResponseStore,
                   reserve: Callable[[float], None], settle: Callable[[float, float], None],
                   price: Callable[[Completion], float], estimate: Callable[[Request], float],
                   progress: Callable[[str], None], poll_s: float = 30.0, attempts: int = 3) -> int:
    """Answer `requests` through the provider's batch API into the response cache (see the
    module's docstring); returns how many requests were submitted in this call."""
    client = batch_client(backend)
    try:
        return await _prefetch(client, requests, backend.name, identity=identity, store=store, reserve=reserve,
                               settle=settle, price=price, estimate=estimate, progress=progress, poll_s=poll_s,
                               attempts=attempts)
    finally:
        await client.aclose()


async def _prefetch(client: BatchClient, requests: Iterable[Request], name: str, *, identity: tuple[str, str, str],
                    store: ResponseStore, reserve: Callable[[float], None], settle: Callable[[float, float], None],
                    price: Callable[[Completion], float], estimate: Callable[[Request], float],
                    progress: Callable[[str], None], poll_s: float, attempts: int) -> int:
    wanted: dict[str, Request] = {}
    for request in requests:
        key = cache_key(*identity, request)
        if store.get(key) is None:
            wanted[key] = request
    submitted = 0
    for attempt in range(attempts):
        # Batches of this backend still waiting that hold some of these requests (another
        # experiment sharing the cache may have its own: those are left for it).
        waiting = {batch_id: keys for batch_id, keys in pending_batches(store, name).items()
                   if any(key in wanted for key in keys)}
        covered = {key for keys in waiting.values() for key in keys}
        fresh = [(key, request) for key, request in wanted.items() if key not in covered]
        reserved: dict[str, float] = {}
        for start in range(0, len(fresh), MAX_REQUESTS):
            chunk = fresh[start:start + MAX_REQUESTS]
            for key, request in chunk:
                reserved[key] = estimate(request) * BATCH_DISCOUNT
                reserve(reserved[key])
            batch_id = await client.submit(chunk)
            _record(store, batch_id, name, [key for key, _ in chunk], "submitted")
            submitted += len(chunk)
            waiting[batch_id] = [key for key, _ in chunk]
            progress(f"{name}: batch {batch_id} submitted ({len(chunk)} requests, at half price)")
        for batch_id, keys in waiting.items():
            await _wait(client, batch_id, name, progress, poll_s)
            results = await client.results(batch_id)
            for key in keys:
                answer = results.get(key, "missing")
                if isinstance(answer, Completion):
                    cost = price(answer) * BATCH_DISCOUNT
                    settle(reserved.get(key, 0.0), cost)
                    store_answer(store, key, name, answer, cost)
                    wanted.pop(key, None)
                else:
                    settle(reserved.get(key, 0.0), 0.0)  # not answered, not billed
            _record(store, batch_id, name, keys, "answered")
            store.flush()
        if not wanted:
            return submitted
        progress(f"{name}: {len(wanted)} requests of the batch were not answered (errored, expired or cancelled); "
                 f"submitting them again ({attempt + 1} of {attempts})")
    raise BackendError(f"{name}: {len(wanted)} requests were not answered by {attempts} batches (errored, expired or "
                       f"cancelled by the provider); run again later, or without --batch", kind="batch")


async def _wait(client: BatchClient, batch_id: str, name: str, progress: Callable[[str], None], poll_s: float) -> None:
    last = -1
    while True:
        state = await client.state(batch_id)
        if state.finished != last or state.done:
            progress(f"{name}: batch {batch_id} {state.status}, {state.finished} of {state.total} requests finished")
            last = state.finished
        if state.done:
            return
        await asyncio.sleep(poll_s)


def first_requests(recorded: Iterable[Request]) -> list[Request]:
    """The requests a run asks before any reply (no assistant turn): a re-ask depends on what
    the model answered, and is asked as usual if the run needs it."""
    seen: dict[tuple[Any, ...], Request] = {}
    for request in recorded:
        if any(message.role == "assistant" for message in request.messages):
            continue
        seen.setdefault((request.messages, request.seed, request.replicate, request.sampling, request.options,
                         request.grammar), request)
    return list(seen.values())


def estimated_cost(price: Callable[[Completion], float], request: Request) -> float:
    """What a request can cost at most at interactive prices (its prompt, and `max_tokens`)."""
    prompt = sum(estimate_tokens(message.content) for message in request.messages)
    return price(Completion(text="", prompt_tokens=prompt, completion_tokens=request.sampling.max_tokens))


__all__ = ["BATCH_DISCOUNT", "AnthropicBatches", "BatchClient", "BatchState", "Message", "OpenAIBatches", "batch_client",
           "estimated_cost", "first_requests", "pending_batches", "prefetch", "store_answer"]
