"""Batch APIs: calls that wait for nothing, answered at half price within hours (`--batch`).

OpenAI's Batch API and Anthropic's Message Batches bill a request at half its interactive price
and answer within 24 hours. agentsim uses them where a run's calls do not depend on one another:
a scenario that declares `independent_calls` (the individual-bias and strategy probes: agents
that never remember, whose prompts depend on the seed alone). Before the run, `prefetch`:

1. plays the experiment on the stand-in (the same runs, seeds and settings, into a scratch
   directory) and keeps every first request it makes (a re-ask depends on a reply: it is asked
   as usual, if the run needs it);
2. drops the requests the response cache already answers, and those of a batch already
   submitted for them (the cache's `batches` table: a run killed while it waits, resumed,
   polls that batch and submits nothing twice);
3. reserves the rest in the budget (at half price), all of them or none (a batch the budget
   cannot hold is refused whole: nothing reserved, nothing recorded, nothing submitted);
4. records its intent to submit them (an agentsim id, the requests' keys and what was reserved
   for each) in the `batches` table before the create call, and sends that call once: the
   SDK's own retries are off for it, and the intent id goes with the batch (OpenAI: in its
   metadata; Anthropic: the requests' custom ids are their keys). A create whose answer never
   came (a kill, a timeout, a dropped connection) is looked up among the provider's batches
   before anything is submitted again, by this run or a resumed one; one that comes back
   refused is forgotten, its reservation released;
5. shows the batch's progress while it waits, and stores each answer in the response cache
   marked as a batch answer, its reservation settled at its billed half price: the run then
   plays as usual, and the first time it is served, that answer is an ordinary call (the
   store, the usage, the cost at half price), not a cache hit.

A request the provider could not answer (errored, expired, cancelled) is submitted again in a
new batch, up to the retry policy's attempts; then the experiment stops with one line. The
stand-in server (backends/standin_server.py) speaks both protocols, with their expiry, partial
failures and cancellations, for the tests.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import BackendError, BackendSpecError, UserError
from . import wire
from .anthropic_backend import KEY_VARIABLE as ANTHROPIC_KEY
from .anthropic_backend import read_message
from .base import Completion, Message, Request
from .cache import ResponseStore, cache_key
from .faults import sdk_errors
from .openai_backend import KEY_VARIABLE as OPENAI_KEY
from .openai_backend import chat_arguments, read_completion
from .providers import batch_providers, provider_of

if TYPE_CHECKING:
    from .accounting import Budget

BATCH_DISCOUNT = 0.5  # both providers bill a batched request at half its interactive price
# Per batch, at most (OpenAI: 50,000 requests; Anthropic: 100,000): a bigger set goes in several.
MAX_REQUESTS = 50_000


# A create answered with these made no batch (a 4xx); any other failure (a 5xx, which a gateway
# may send after the batch was made, a timeout, a dropped connection) may have made one.
REFUSED_KINDS = frozenset({"rate_limited", "bad_request"})
# How far back a lookup reads the provider's batches before the intent's own time: its clock
# and ours may differ by this much.
CLOCK_SKEW_S = 600.0
METADATA_KEY = "agentsim_batch"


@dataclass(frozen=True)
class BatchState:
    done: bool
    finished: int  # requests answered or failed so far
    total: int
    status: str


@dataclass(frozen=True, kw_only=True)
class Intent:
    """A batch agentsim means to submit, recorded before the create call: its own id (sent with
    the batch), its requests' keys, when, and the batches already known (not it)."""

    id: str
    keys: tuple[str, ...]
    created: float
    known: frozenset[str] = field(default_factory=frozenset)


class BatchClient(Protocol):
    """One provider's batch protocol."""

    async def submit(self, requests: list[tuple[str, Request]], intent: Intent) -> str:
        """Create the batch, once (no retry): its id."""
        ...

    async def find(self, intent: Intent) -> str | None:
        """The provider's batch made for `intent` (its create's answer lost), or None."""
        ...

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
        self.once = client.with_options(max_retries=0)  # a create is sent once: a retry could submit it twice

    def _sdk(self) -> Any:
        """The SDK's exceptions as agentsim's BackendErrors, without the SDK's chained (it can
        hold request headers)."""
        import openai

        return sdk_errors("openai", openai, key_variable=OPENAI_KEY)

    async def submit(self, requests: list[tuple[str, Request]], intent: Intent) -> str:
        lines = []
        for key, request in requests:
            body = chat_arguments(self.backend.model, request, compatible=self.compatible)
            body.update(body.pop("extra_body", {}))
            lines.append(json.dumps({"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body}))
        with self._sdk():
            upload = await self.client.files.create(file=(f"agentsim-{intent.id}.jsonl", "\n".join(lines).encode(),
                                                          "application/jsonl"), purpose="batch")
            batch = await self.once.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                                   completion_window="24h", metadata={METADATA_KEY: intent.id})
        return batch.id

    async def find(self, intent: Intent) -> str | None:
        """The batch whose metadata carries the intent's id (newest first, back to its time)."""
        with self._sdk():
            async for batch in self.client.batches.list(limit=100):
                if (batch.metadata or {}).get(METADATA_KEY) == intent.id:
                    return str(batch.id)
                if batch.created_at < intent.created - CLOCK_SKEW_S:
                    break
        return None

    async def state(self, batch_id: str) -> BatchState:
        with self._sdk():
            batch = await self.client.batches.retrieve(batch_id)
        counts = batch.request_counts
        total = counts.total if counts else 0
        finished = (counts.completed + counts.failed) if counts else 0
        return BatchState(done=batch.status in ("completed", "failed", "expired", "cancelled"), finished=finished,
                          total=total, status=batch.status)

    async def results(self, batch_id: str) -> dict[str, Completion | str]:
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
        return sdk_errors("anthropic", self.backend._anthropic, key_variable=ANTHROPIC_KEY)

    async def submit(self, requests: list[tuple[str, Request]], intent: Intent) -> str:
        entries = []
        for key, request in requests:
            params = self.backend.arguments(request)
            params.update(params.pop("extra_body", {}))
            entries.append({"custom_id": key, "params": params})
        with self._sdk():  # the backend's client retries nothing (max_retries=0): the create goes once
            batch = await self.client.messages.batches.create(requests=entries)
        return batch.id

    async def find(self, intent: Intent) -> str | None:
        """A Message Batch carries no metadata: the batch made after the intent with as many
        requests, not one agentsim knows already; an ended one must hold exactly the intent's
        custom ids (its keys). Of several that cannot be told apart yet, the first made."""
        candidates: list[tuple[float, str, bool]] = []
        with self._sdk():
            async for batch in self.client.messages.batches.list(limit=100):
                made = _timestamp(batch.created_at)
                if made < intent.created - CLOCK_SKEW_S:
                    break
                counts = batch.request_counts
                total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
                if batch.id in intent.known or total != len(intent.keys):
                    continue
                candidates.append((made, str(batch.id), batch.processing_status == "ended"))
        for _, batch_id, ended in sorted(candidates):
            if not ended:
                return batch_id
            if set(await self.results(batch_id)) == set(intent.keys):
                return batch_id
        return None

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


def _timestamp(value: Any) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value)


def batch_client(backend: Any) -> BatchClient:
    """The batch protocol of a bare backend, as its provider's descriptor makes it
    (llm/providers.py), or a BackendError naming the providers that have one."""
    name = str(getattr(backend, "name", backend))
    try:
        found = provider_of(name)
    except BackendSpecError:  # a backend of no known spec: none of them has a batch API
        found = None
    if found is None or found.batch is None:
        raise BackendError(f"{name} has no batch API; --batch is for {', '.join(batch_providers())} backends",
                           kind="config")
    client: BatchClient = found.batch_client(backend, name)
    return client


# --- the cache's record of batches, intended and submitted ---------------------------------------
@dataclass(frozen=True)
class Recorded:
    """A row of the `batches` table: a batch submitted (`batch_id`), or only intended (its
    create's answer never came: `batch_id` is None), with what was reserved for each key."""

    intent: str
    batch_id: str | None
    keys: tuple[str, ...]
    reserved: dict[str, float]
    created: float


def _table(store: ResponseStore) -> None:
    connection = store.connection
    connection.execute("CREATE TABLE IF NOT EXISTS batches (batch_id TEXT PRIMARY KEY, backend TEXT, "
                       "keys TEXT NOT NULL, submitted REAL, state TEXT)")
    columns = {row[1] for row in connection.execute("PRAGMA table_info(batches)")}
    for column in ("intent", "reserved"):  # an older cache's table: the columns an intent needs
        if column not in columns:
            try:
                connection.execute(f"ALTER TABLE batches ADD COLUMN {column} TEXT")
            except sqlite3.OperationalError:  # another process added it meanwhile
                pass


def recorded_batches(store: ResponseStore, backend: str) -> list[Recorded]:
    """The batches of `backend` whose answers are not stored yet, intended or submitted."""
    _table(store)
    return [Recorded(intent=intent or batch_id, batch_id=None if state == "intent" else batch_id,
                     keys=tuple(json.loads(keys)), reserved=json.loads(reserved) if reserved else {}, created=created or 0.0)
            for batch_id, keys, created, state, intent, reserved in store.connection.execute(
                "SELECT batch_id, keys, submitted, state, intent, reserved FROM batches WHERE backend = ? AND "
                "state IN ('intent', 'submitted') ORDER BY submitted", (backend,))]


def pending_batches(store: ResponseStore, backend: str) -> dict[str, list[str]]:
    """The batches submitted for `backend` whose answers are not stored yet: id -> keys."""
    return {record.batch_id: list(record.keys) for record in recorded_batches(store, backend) if record.batch_id}


def _known_ids(store: ResponseStore) -> frozenset[str]:
    _table(store)
    return frozenset(batch_id for (batch_id,) in store.connection.execute(
        "SELECT batch_id FROM batches WHERE state != 'intent'"))


def _write(store: ResponseStore, statement: str, values: tuple[Any, ...]) -> None:
    """One change to the table, committed at once (an intent must be on disk before its create)."""
    _table(store)
    with store.connection:
        store.connection.execute("BEGIN IMMEDIATE")
        store.connection.execute(statement, values)


def _record_intent(store: ResponseStore, intent: Intent, backend: str, reserved: dict[str, float]) -> None:
    _write(store, "INSERT OR REPLACE INTO batches (batch_id, backend, keys, submitted, state, intent, reserved) "
                  "VALUES (?, ?, ?, ?, 'intent', ?, ?)",
           (intent.id, backend, json.dumps(list(intent.keys)), intent.created, intent.id, json.dumps(reserved)))


def _record_submitted(store: ResponseStore, intent: str, batch_id: str) -> None:
    _write(store, "UPDATE batches SET batch_id = ?, state = 'submitted' WHERE intent = ? OR batch_id = ?",
           (batch_id, intent, intent))


def _forget_intent(store: ResponseStore, intent: str) -> None:
    _write(store, "DELETE FROM batches WHERE batch_id = ? AND state = 'intent'", (intent,))


def _record_answered(store: ResponseStore, batch_id: str) -> None:
    _write(store, "UPDATE batches SET state = 'answered' WHERE batch_id = ?", (batch_id,))


def store_answer(store: ResponseStore, key: str, backend: str, completion: Completion, cost_usd: float) -> None:
    """Keep a batch answer in the cache, marked so that its first use is billed as a call."""
    store.put(key, backend, {"text": completion.text, "prompt_tokens": completion.prompt_tokens,
                             "completion_tokens": completion.completion_tokens, "model": completion.model,
                             "cached_prompt_tokens": completion.cached_prompt_tokens,
                             "cache_write_tokens": completion.cache_write_tokens,
                             "option_probabilities": None, "unscored": 0.0, "raw": completion.raw,
                             "batch_cost_usd": cost_usd})


async def prefetch(requests: Iterable[Request], *, backend: Any, identity: tuple[str, str, str], store: ResponseStore,
                   budget: Budget, price: Callable[[Completion], float], estimate: Callable[[Request], float],
                   progress: Callable[[str], None], poll_s: float = 30.0, attempts: int = 3) -> int:
    """Answer `requests` through the provider's batch API into the response cache (see the
    module's docstring), reserved and settled in `budget`; returns how many requests were
    submitted in this call."""
    client = batch_client(backend)
    try:
        return await _prefetch(client, requests, backend.name, identity=identity, store=store, budget=budget,
                               price=price, estimate=estimate, progress=progress, poll_s=poll_s, attempts=attempts)
    finally:
        await client.aclose()


async def _prefetch(client: BatchClient, requests: Iterable[Request], name: str, *, identity: tuple[str, str, str],
                    store: ResponseStore, budget: Budget, price: Callable[[Completion], float],
                    estimate: Callable[[Request], float], progress: Callable[[str], None], poll_s: float,
                    attempts: int) -> int:
    wanted: dict[str, Request] = {}
    for request in requests:
        key = cache_key(*identity, request)
        if store.get(key) is None:
            wanted[key] = request
    submitted = 0
    for attempt in range(attempts):
        # Batches of this backend recorded before (another experiment sharing the cache may
        # have its own: those are left for it); an intent whose create's answer never came is
        # looked up first.
        waiting: dict[str, Recorded] = {}
        for record in recorded_batches(store, name):
            if not any(key in wanted for key in record.keys):
                continue
            if record.batch_id is None:
                record = await _look_up(client, store, record, budget, progress, name)
                if record.batch_id is None:
                    continue
            waiting[record.batch_id] = record
        covered = {key for record in waiting.values() for key in record.keys}
        fresh = [(key, request) for key, request in wanted.items() if key not in covered]
        for start in range(0, len(fresh), MAX_REQUESTS):
            chunk = fresh[start:start + MAX_REQUESTS]
            record = await _submit(client, store, chunk, budget, estimate, progress, name)
            submitted += len(chunk)
            waiting[str(record.batch_id)] = record
        for batch_id, record in waiting.items():
            await _wait(client, batch_id, name, progress, poll_s)
            results = await client.results(batch_id)
            for key in record.keys:
                answer = results.get(key, "missing")
                reserved = record.reserved.get(key, 0.0)
                if isinstance(answer, Completion):
                    cost = price(answer) * BATCH_DISCOUNT
                    budget.settle(reserved, cost)
                    store_answer(store, key, name, answer, cost)
                    wanted.pop(key, None)
                else:
                    budget.settle(reserved, 0.0)  # not answered, not billed
            store.flush()
            _record_answered(store, batch_id)
        if not wanted:
            return submitted
        progress(f"{name}: {len(wanted)} requests of the batch were not answered (errored, expired or cancelled); "
                 f"submitting them again ({attempt + 1} of {attempts})")
    raise BackendError(f"{name}: {len(wanted)} requests were not answered by {attempts} batches (errored, expired or "
                       f"cancelled by the provider); run again later, or without --batch", kind="batch")


async def _submit(client: BatchClient, store: ResponseStore, chunk: list[tuple[str, Request]], budget: Budget,
                  estimate: Callable[[Request], float], progress: Callable[[str], None], name: str) -> Recorded:
    """Reserve a batch whole (or refuse it: nothing reserved, nothing recorded), record the
    intent, send the create once; a create whose answer never came is looked up."""
    costs = [estimate(request) * BATCH_DISCOUNT for _, request in chunk]
    budget.reserve_all(costs)
    reserved = {key: cost for (key, _), cost in zip(chunk, costs, strict=True)}
    intent = Intent(id=f"agentsim-{secrets.token_hex(8)}", keys=tuple(key for key, _ in chunk), created=time.time(),
                    known=_known_ids(store))
    # A resume settles what the budget restores (its journal, its close): a limited budget's reservations.
    _record_intent(store, intent, name, reserved if budget.limited else {})
    record = Recorded(intent=intent.id, batch_id=None, keys=intent.keys, reserved=reserved, created=intent.created)
    try:
        batch_id = await client.submit(chunk, intent)
    except (BackendError, UserError) as error:
        if isinstance(error, UserError) or error.kind in REFUSED_KINDS:  # the provider answered it made no batch
            _forget_intent(store, intent.id)
            budget.settle(sum(costs), 0.0)
            raise
        record = await _look_up(client, store, record, budget, progress, name, forget=False)
        if record.batch_id is None:  # not there (yet): the intent stays, and a resume looks again
            raise
        return record
    _record_submitted(store, intent.id, batch_id)
    progress(f"{name}: batch {batch_id} submitted ({len(chunk)} requests, at half price)")
    return Recorded(intent=intent.id, batch_id=batch_id, keys=intent.keys, reserved=reserved, created=intent.created)


async def _look_up(client: BatchClient, store: ResponseStore, record: Recorded, budget: Budget,
                   progress: Callable[[str], None], name: str, *, forget: bool = True) -> Recorded:
    """The batch an intent made, found among the provider's batches; if it made none (and
    `forget`), the intent is forgotten and its reservation released."""
    intent = Intent(id=record.intent, keys=record.keys, created=record.created, known=_known_ids(store))
    batch_id = await client.find(intent)
    if batch_id is not None:
        _record_submitted(store, record.intent, batch_id)
        progress(f"{name}: batch {batch_id} found at the provider (its create's answer was lost); it is not "
                 f"submitted again")
        return Recorded(intent=record.intent, batch_id=batch_id, keys=record.keys, reserved=record.reserved,
                        created=record.created)
    if forget:
        _forget_intent(store, record.intent)
        budget.settle(sum(record.reserved.values()), 0.0)
    return record


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


__all__ = ["BATCH_DISCOUNT", "AnthropicBatches", "BatchClient", "BatchState", "Intent", "Message", "OpenAIBatches",
           "batch_client", "first_requests", "pending_batches", "prefetch", "recorded_batches", "store_answer"]
