"""The stand-in server: a small aiohttp server on 127.0.0.1 that speaks OpenAI chat
completions, Anthropic messages and TGI's native `/generate`, and answers with agentsim's
naming-game stand-in rule, so a whole naming game runs over real HTTP through each provider's
real client with no key, GPU or network.

It reads each prompt as a model would (the scenario's prompt templates read back), serves at
most `capacity` requests at once with a set service time (a simulated inference server:
requests beyond capacity wait in its queue, and TGI's `x-queue-time` says how long), and
injects faults at given rates:

    429              rate limited, no Retry-After
    429_retry_after  rate limited with Retry-After (seconds: --retry-after)
    529              overloaded (Anthropic's status; OpenAI clients see a 5xx)
    overloaded       TGI's 429 {"error_type": "overloaded"}
    500, 503         server errors
    timeout          holds the request past the client's timeout
    drip             a 200 whose body comes one byte every --drip-interval seconds
    drop             closes the connection without an answer
    malformed        a 200 whose body is cut-off JSON
    unparseable      a 200 whose reply names no option (the game re-asks)

Its answers' token counts are the rule's (`--usage reported`), or below zero (`negative`), or
left out (`absent`): what a client's budget must not trust. It caches prompts as the providers
do and reports it in the usage as they do (`prompt_caching`): OpenAI's automatic prefix cache
(prompts of 1,024 tokens or more; `prompt_tokens_details.cached_tokens`, in steps of 128) and
Anthropic's breakpoints (`cache_control` on a block: `cache_creation_input_tokens` the first
time a prefix of at least the model's minimum cacheable length is seen, its documented
table, or `cache_min_tokens`; `cache_read_input_tokens` after).

It bills as the providers document (`Stats.bill_usd`, each request in `Stats.bills`): every
request it answers, whether or not the client is still there to read the answer (a request
cancelled in flight is billed), priced by genai-prices' own `calc_price` from the usage it
counted (cached and written input at their prices, the tier of the request's input tokens),
a batch's requests at half that; an error answer (429, 5xx) bills nothing. A model that
genai-prices does not price is counted in `Stats.unpriced`, not billed.

Its batches can be slow to create (`batch_create_delay_s`: the batch exists at once, its
create's answer comes that much later) or lose the create's answer (`batch_create_fault`:
"drop" closes the connection, "500" answers a server error, for the first
`batch_create_faults` creates; the batch is made either way), what a client that submits a
batch twice would pay for; both providers' batches are listed newest first
(`GET /v1/batches`, `GET /v1/messages/batches`), OpenAI's with their metadata.

With `replies` (`replies_from_run`: the prompts and replies of a run recorded in process), it
answers any scenario's prompts with the recorded reply, so that a run over HTTP with the same
seed plays the recorded run again, whatever the game: what a benchmark of a provider's billing
needs of a game whose prompts the naming rule cannot read. It counts requests, faults, the
auth headers it was sent and the most requests it had open at once (what a client's in-flight
cap is checked against): GET /stats, POST /stats/reset; POST /faults changes the fault rates. Start it from the command line:

    python backends/standin_server.py --port 8080 --capacity 32 --service-time 0.1 --fault 429=0.2

or from Python (`StandInServer(...).start()`; the tests' fixture does that on a free port).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import re
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from agentsim.games.naming import NamingGame, NamingSituation, read_options
from agentsim.games.naming.standin import NamingStandIn, NamingStandInSettings
from agentsim.llm import chat_format
from agentsim.llm.base import Message, Request, Sampling, estimate_tokens
from agentsim.llm.standin import StandInModel

FAULT_KINDS = ("429", "429_retry_after", "529", "overloaded", "500", "503", "timeout", "drip", "drop", "malformed",
               "unparseable")
USAGE_KINDS = ("reported", "negative", "absent")
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
_JITTER = random.SystemRandom()  # real random latency: no seed makes two runs' orders alike


@dataclass(kw_only=True)
class ServerConfig:
    capacity: int = 32
    service_time_s: float = 0.0
    latency_jitter_s: float = 0.0  # plus a delay uniform in [0, this), from an unseeded generator
    faults: dict[str, float] = field(default_factory=dict)
    healthy_first: int = 0  # requests answered without a fault before the faults begin (past a client's probe)
    retry_after_s: float = 1.0
    timeout_hold_s: float = 30.0
    drip_interval_s: float = 0.5  # a drip fault's pause between bytes
    usage: str = "reported"  # the token counts answers carry: reported, negative or absent
    max_waiting: int | None = None  # more waiting than this: TGI's overloaded 429
    api_key: str | None = None
    seed: int = 0
    model_id: str = "stand-in"
    # the naming rule's prior and exploration (a scenario's standin.bias_name, standin.bias, standin.noise)
    bias_name: str | None = None
    bias: float = 0.0
    noise: float = 0.0
    # prompt key (`prompt_key`) -> the replies to give it, in order; None: the naming rule answers
    replies: dict[str, list[str]] | None = None
    prompt_caching: bool = True
    # The provider's tokenizer: characters a token in what it counts and bills (4: the stand-in
    # rule's own count; 3.6: about OpenAI's o200k on agentsim's prompts)
    chars_per_token: float = 4.0
    cache_min_tokens: int | None = None  # Anthropic's shortest cacheable prefix; None: the model's, as documented
    # Batch APIs: a batch ends after this many looks at it; the first `batch_faulty` batches end
    # `batch_end` ("completed", "expired": half answered, "cancelled": half answered, by the provider),
    # and `batch_errored` of every batch's requests fail alone (a partial failure).
    batch_polls: int = 1
    batch_end: str = "completed"
    batch_faulty: int = 1
    batch_errored: float = 0.0
    batch_create_delay_s: float = 0.0
    batch_create_fault: str | None = None  # "drop" or "500": the create's answer lost, the batch made
    batch_create_faults: int = 1

    def __post_init__(self) -> None:
        unknown = sorted(set(self.faults) - set(FAULT_KINDS))
        if unknown:
            raise ValueError(f"unknown fault kind(s) {', '.join(unknown)}; use {', '.join(FAULT_KINDS)}")
        if sum(self.faults.values()) > 1 or any(rate < 0 for rate in self.faults.values()):
            raise ValueError("fault rates must be >= 0 and add up to at most 1")
        if self.capacity < 1:
            raise ValueError("capacity must be at least 1")
        if self.usage not in USAGE_KINDS:
            raise ValueError(f"usage must be one of {', '.join(USAGE_KINDS)} (got {self.usage!r})")
        if self.batch_create_fault not in (None, "drop", "500"):
            raise ValueError(f"batch_create_fault is 'drop' or '500' (got {self.batch_create_fault!r})")


@dataclass
class Stats:
    requests: int = 0
    answered: int = 0
    active: int = 0
    max_active: int = 0
    waiting: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    by_route: dict[str, int] = field(default_factory=dict)
    arrivals: list[float] = field(default_factory=list)
    auth_headers: dict[str, int] = field(default_factory=dict)  # requests that carried each auth header
    batches_created: int = 0
    batch_requests: int = 0  # requests received inside batches
    bill_usd: float = 0.0  # what the provider bills, all requests together
    bills: list[dict[str, Any]] = field(default_factory=list)  # each billed request: its model, usage and price
    unpriced: int = 0  # requests of a model genai-prices does not price (not billed)

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "answered": self.answered, "active": self.active,
                "max_active": self.max_active, "faults": dict(self.faults), "by_route": dict(self.by_route),
                "auth_headers": dict(self.auth_headers), "batches_created": self.batches_created,
                "batch_requests": self.batch_requests, "bill_usd": self.bill_usd, "billed": len(self.bills),
                "unpriced": self.unpriced}


# Anthropic's shortest cacheable prefix by model, from its prompt-caching documentation (the
# provider's side, written here on its own); a model not listed caches from the longest.
ANTHROPIC_MIN_CACHEABLE = {"claude-opus-4-5": 4096, "claude-haiku-4-5": 4096, "claude-3-5-haiku": 2048,
                           "claude-3-haiku": 2048, "claude-opus-4": 1024, "claude-sonnet-4": 1024,
                           "claude-3-7-sonnet": 1024, "claude-3-5-sonnet": 1024, "claude-3-opus": 1024}
BATCH_DISCOUNT = 0.5
FORMAT_TOKENS_PER_MESSAGE, FORMAT_TOKENS_PER_REPLY = 3, 3  # a chat prompt's own tokens (OpenAI's count)


def anthropic_min_cacheable(model: str) -> int:
    found = [tokens for prefix, tokens in ANTHROPIC_MIN_CACHEABLE.items() if model.startswith(prefix)]
    return max(found, key=lambda tokens: tokens) if found else max(ANTHROPIC_MIN_CACHEABLE.values())


class StandInServer:
    def __init__(self, config: ServerConfig | None = None) -> None:
        self.config = config or ServerConfig()
        game = NamingGame().for_experiment(0)
        templates = [template for template, _ in game.standin_part().rules[0].templates]
        self.rule = NamingStandIn(templates, NamingStandInSettings(bias_name=self.config.bias_name, bias=self.config.bias,
                                                                   noise=self.config.noise))
        self.model = StandInModel([self.rule])
        self.rng = random.Random(self.config.seed)
        self.stats = Stats()
        self.slots = asyncio.Semaphore(self.config.capacity)
        self.runner: web.AppRunner | None = None
        self.url = ""
        self.cached_prefixes: set[str] = set()  # what the emulated prompt caches hold
        self.files: dict[str, bytes] = {}  # OpenAI's uploaded and output files
        self.batches: dict[str, dict[str, Any]] = {}  # both protocols' batches, by id
        self.app = web.Application(client_max_size=8 * 1024 * 1024)
        self.app.add_routes([
            web.post("/v1/chat/completions", self.openai),
            web.post("/v1/messages", self.anthropic),
            web.post("/v1/files", self.upload),
            web.get("/v1/files/{file_id}/content", self.file_content),
            web.post("/v1/batches", self.openai_batch),
            web.get("/v1/batches", self.openai_batches),
            web.get("/v1/batches/{batch_id}", self.openai_batch_state),
            web.post("/v1/messages/batches", self.anthropic_batch),
            web.get("/v1/messages/batches", self.anthropic_batches),
            web.get("/v1/messages/batches/{batch_id}", self.anthropic_batch_state),
            web.get("/v1/messages/batches/{batch_id}/results", self.anthropic_batch_results),
            web.post("/generate", self.tgi),
            web.get("/info", self.info),
            web.get("/stats", self.get_stats),
            web.post("/stats/reset", self.reset_stats),
            web.post("/faults", self.set_faults),
        ])

    # --- lifecycle ----------------------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self.runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=0.5)
        await self.runner.setup()
        site = web.TCPSite(self.runner, host, port, backlog=1024)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://{host}:{bound}"
        return self.url

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    # --- the shared path ----------------------------------------------------------------
    async def _serve(self, request: web.Request, route: str, authorised: bool, answer: Any,
                     error: Any) -> web.StreamResponse:
        """Count, authenticate, maybe inject a fault, wait for a slot, answer."""
        stats = self.stats
        stats.requests += 1
        stats.arrivals.append(time.monotonic())
        stats.by_route[route] = stats.by_route.get(route, 0) + 1
        for header in ("Authorization", "x-api-key"):
            if header in request.headers:
                stats.auth_headers[header.lower()] = stats.auth_headers.get(header.lower(), 0) + 1
        stats.active += 1
        stats.max_active = max(stats.max_active, stats.active)
        try:
            if not authorised:
                return error(401, "invalid api key", "authentication_error")
            fault = self._fault()
            if fault is not None:
                stats.faults[fault] = stats.faults.get(fault, 0) + 1
                injected = await self._inject(request, fault, error)
                if injected is not None:
                    return injected
            if self.config.max_waiting is not None and stats.waiting >= self.config.max_waiting and self.slots.locked():
                stats.faults["queue_full"] = stats.faults.get("queue_full", 0) + 1
                return web.json_response({"error": "Model is overloaded", "error_type": "overloaded"}, status=429)
            arrived = time.monotonic()
            stats.waiting += 1
            try:
                await self.slots.acquire()
            finally:
                stats.waiting -= 1
            queued = time.monotonic() - arrived
            try:
                delay = self.config.service_time_s + self.config.latency_jitter_s * _JITTER.random()
                if delay:
                    await asyncio.sleep(delay)
                response = answer(fault == "unparseable", queued)
                if fault == "drip":
                    response = await self._drip(request, response)
            finally:
                self.slots.release()
            stats.answered += 1
            return response
        finally:
            stats.active -= 1

    def _fault(self) -> str | None:
        faults = self.config.faults
        if not faults or self.stats.requests <= self.config.healthy_first:
            return None
        die, total = self.rng.random(), 0.0
        for kind in FAULT_KINDS:
            total += faults.get(kind, 0.0)
            if die < total:
                return kind
        return None

    async def _inject(self, request: web.Request, fault: str, error: Any) -> web.StreamResponse | None:
        if fault == "429":
            return error(429, "rate limited", "rate_limit_error")
        if fault == "429_retry_after":
            retry = self.config.retry_after_s
            response = error(429, "rate limited", "rate_limit_error")
            response.headers["Retry-After"] = f"{retry:g}" if retry != int(retry) else str(int(retry))
            return response
        if fault == "529":
            return error(529, "Overloaded", "overloaded_error")
        if fault == "overloaded":
            return web.json_response({"error": "Model is overloaded", "error_type": "overloaded"}, status=429)
        if fault in ("500", "503"):
            return error(int(fault), "server error", "api_error")
        if fault == "timeout":
            await asyncio.sleep(self.config.timeout_hold_s)
            return error(504, "held past the client's timeout", "timeout")
        if fault == "drop":
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError  # nothing more to send on a dropped connection
        if fault == "malformed":
            return web.Response(status=200, text='{"id": "cut", "choices": [{"message": {"content": "Q',
                                content_type="application/json")
        return None  # unparseable: answered below, with a reply naming no option

    async def _drip(self, request: web.Request, response: web.Response) -> web.StreamResponse:
        """Send a whole answer a byte at a time: a client's timeout must cover the body too."""
        body = bytes(response.body or b"")  # type: ignore[arg-type]
        dripped = web.StreamResponse(status=response.status, headers={"Content-Type": response.content_type})
        dripped.content_length = len(body)
        await dripped.prepare(request)
        for index in range(len(body)):
            await dripped.write(body[index:index + 1])
            await asyncio.sleep(self.config.drip_interval_s)
        await dripped.write_eof()
        return dripped

    def _usage(self, prompt_tokens: int, completion_tokens: int) -> tuple[int, int] | None:
        """The token counts an answer reports (None: none at all)."""
        if self.config.usage == "absent":
            return None
        if self.config.usage == "negative":
            return -1_000_000, -1_000_000
        return prompt_tokens, completion_tokens

    def bill(self, provider: str, model: str, *, input_tokens: int, output_tokens: int, cache_read: int = 0,
             cache_write: int = 0, batch: bool = False) -> float:
        """Bill one answered request as the provider would: genai-prices' `calc_price` of its
        usage (`input_tokens` counts every input token, cached and written included)."""
        from genai_prices import Usage, calc_price

        try:
            price = calc_price(Usage(input_tokens=input_tokens, output_tokens=output_tokens,
                                     cache_read_tokens=cache_read, cache_write_tokens=cache_write),
                               model_ref=model, provider_id=provider)
        except LookupError:
            self.stats.unpriced += 1
            return 0.0
        cost = float(price.total_price) * (BATCH_DISCOUNT if batch else 1.0)
        self.stats.bill_usd += cost
        self.stats.bills.append({"provider": provider, "model": model, "input_tokens": input_tokens,
                                 "output_tokens": output_tokens, "cache_read_tokens": cache_read,
                                 "cache_write_tokens": cache_write, "batch": batch, "usd": cost})
        return cost

    def _reply(self, messages: list[Message], sampling: Sampling, seed: int | None, unparseable: bool, *,
               chat: bool = True) -> tuple[str, int, int]:
        """The reply and its tokens; a chat prompt's count with the chat format's own tokens, as
        OpenAI documents them for its chat models (3 a message, 3 priming the reply)."""
        text, prompt_tokens, completion_tokens = self._rule_reply(messages, sampling, seed, unparseable)
        if self.config.chars_per_token != 4.0:
            prompt_tokens, completion_tokens = self._count(messages), max(1, math.ceil(len(text) / self.config.chars_per_token))
        if chat:
            prompt_tokens += FORMAT_TOKENS_PER_MESSAGE * len(messages) + FORMAT_TOKENS_PER_REPLY
        return text, prompt_tokens, completion_tokens

    def _count(self, messages: list[Message]) -> int:
        """The prompt's tokens as this provider's tokenizer counts them."""
        return sum(math.ceil(len(message.content) / self.config.chars_per_token) for message in messages)

    def _rule_reply(self, messages: list[Message], sampling: Sampling, seed: int | None,
                    unparseable: bool) -> tuple[str, int, int]:
        if self.config.replies is not None:
            queue = self.config.replies.get(prompt_key(messages)) or ["I have not seen this prompt."]
            # The same prompt asked again later (an agent's prompt can repeat) gets its next recorded reply.
            text = "Let me think about this for a while." if unparseable else queue.pop(0) if len(queue) > 1 else queue[0]
            return text, sum(estimate_tokens(message.content) for message in messages), max(1, estimate_tokens(text))
        if seed is None:  # a provider with no seed (Anthropic): the prompt decides the dice
            seed = zlib.crc32("\n".join(message.content for message in messages).encode())
        if unparseable:
            text = "Let me think about this for a while."[: 4 * sampling.max_tokens]
            completion = self.model.answer(Request(messages=tuple(messages), sampling=sampling, seed=seed))
            return text, completion.prompt_tokens, max(1, len(text) // 4)
        completion = self.model.answer(Request(messages=tuple(messages), sampling=sampling, seed=seed))
        return completion.text, completion.prompt_tokens, completion.completion_tokens

    def _token_view(self, text: str, messages: list[Message], temperature: float,
                    count: int) -> list[tuple[str, list[tuple[str, float]]]]:
        """The reply's tokens, each with its top alternatives. At the first option named: the
        rule's exact probability of each option (its choice distribution for this prompt), as
        the raw log probabilities that give it once the client applies the request's
        temperature (T log p); elsewhere the token at 0.99."""
        distribution = self._choice_distribution(messages)
        options = list(distribution)
        tokens = _TOKEN.findall(text)
        view, answered = [], False
        for token in tokens:
            if not answered and token in options:
                answered = True
                scale = temperature if temperature > 0 else 1.0
                ranked = sorted((option for option in options if distribution[option] > 0),
                                key=lambda option: -distribution[option])[:max(count, 1)]
                view.append((token, [(option, scale * math.log(distribution[option])) for option in ranked]))
            else:
                view.append((token, [(token, math.log(0.99))]))
        return view

    def _choice_distribution(self, messages: list[Message]) -> dict[str, float]:
        """Each option's probability under the rule, read from a naming prompt (empty otherwise)."""
        system = next((message.content for message in messages if message.role == "system"), "")
        for template, _ in self.rule.templates:
            fields = template.read("system", system, only=("options", "options_text", "history"))
            if fields is not None:
                memory = template.findall("entry", fields.get("history") or "", "own", "partner")
                return self.rule.probabilities(NamingSituation(tuple(read_options(fields)), tuple(memory)))
        return {}

    # --- OpenAI chat completions ---------------------------------------------------------
    async def openai(self, request: web.Request) -> web.StreamResponse:
        key = self.config.api_key
        authorised = key is None or request.headers.get("Authorization") == f"Bearer {key}"
        body = await request.json()

        def error(status: int, message: str, kind: str) -> web.Response:
            return web.json_response({"error": {"message": message, "type": kind}}, status=status)

        def answer(unparseable: bool, queued: float) -> web.Response:
            messages = [Message(item["role"], item["content"]) for item in body["messages"]]
            sampling = Sampling(temperature=body.get("temperature", 1.0), top_k=_top_k(body.get("top_k")),
                                max_tokens=body.get("max_tokens") or body.get("max_completion_tokens") or 16)
            text, prompt_tokens, completion_tokens = self._reply(messages, sampling, body.get("seed"), unparseable)
            logprobs = None
            if body.get("logprobs"):
                count = int(body.get("top_logprobs") or 1)
                logprobs = {"content": [{"token": token, "logprob": alternatives[0][1],
                                         "top_logprobs": [{"token": alt, "logprob": value} for alt, value in alternatives]}
                                        for token, alternatives in self._token_view(text, messages, sampling.temperature, count)]}
            document: dict[str, Any] = {
                "id": f"chatcmpl-{self.stats.requests}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", self.config.model_id),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop",
                             "logprobs": logprobs}],
            }
            cached = self._openai_cached(messages) if self.config.prompt_caching else 0
            self.bill("openai", document["model"], input_tokens=prompt_tokens, output_tokens=completion_tokens,
                      cache_read=cached)
            usage = self._usage(prompt_tokens, completion_tokens)
            if usage is not None:
                document["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
                if self.config.prompt_caching and usage[0] > 0:
                    document["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
            return web.json_response(document, headers={"x-ratelimit-remaining-requests": "10000"})

        return await self._serve(request, "openai", authorised, answer, error)

    # --- Anthropic messages --------------------------------------------------------------
    async def anthropic(self, request: web.Request) -> web.StreamResponse:
        key = self.config.api_key
        authorised = key is None or key in (request.headers.get("x-api-key"),
                                            request.headers.get("Authorization", "").removeprefix("Bearer "))
        body = await request.json()

        def error(status: int, message: str, kind: str) -> web.Response:
            return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)

        def answer(unparseable: bool, queued: float) -> web.Response:
            system = body.get("system")
            messages = ([Message("system", _block_text(system))] if system else []) + [
                Message(item["role"], _block_text(item["content"])) for item in body["messages"]]
            sampling = Sampling(temperature=body.get("temperature", 1.0), top_k=body.get("top_k"),
                                max_tokens=body["max_tokens"])
            text, prompt_tokens, completion_tokens = self._reply(messages, sampling, None, unparseable)
            document: dict[str, Any] = {
                "id": f"msg_{self.stats.requests}", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            }
            read, written = self._anthropic_cached(body) if self.config.prompt_caching and prompt_tokens > 0 else (0, 0)
            self.bill("anthropic", body["model"], input_tokens=prompt_tokens, output_tokens=completion_tokens,
                      cache_read=read, cache_write=written)
            usage = self._usage(prompt_tokens, completion_tokens)
            if usage is not None:
                document["usage"] = {"input_tokens": usage[0] - read - written, "output_tokens": usage[1],
                                     "cache_read_input_tokens": read, "cache_creation_input_tokens": written}
            return web.json_response(document)

        return await self._serve(request, "anthropic", authorised, answer, error)

    # --- TGI /generate -------------------------------------------------------------------
    async def tgi(self, request: web.Request) -> web.StreamResponse:
        key = self.config.api_key
        authorised = key is None or request.headers.get("Authorization") == f"Bearer {key}"
        body = await request.json()

        def error(status: int, message: str, kind: str) -> web.Response:
            return web.json_response({"error": message, "error_type": kind}, status=status)

        def answer(unparseable: bool, queued: float) -> web.Response:
            parameters = body.get("parameters") or {}
            messages = chat_format.parse(body["inputs"])
            sampling = Sampling(temperature=parameters.get("temperature", 1.0), top_k=parameters.get("top_k"),
                                max_tokens=parameters.get("max_new_tokens") or 20)
            text, prompt_tokens, completion_tokens = self._reply(messages, sampling, parameters.get("seed"), unparseable,
                                                                 chat=False)
            result: dict[str, Any] = {"generated_text": text}
            if parameters.get("details"):
                count = int(parameters.get("top_n_tokens") or 0)
                view = self._token_view(text, messages, sampling.temperature, max(count, 1))
                details: dict[str, Any] = {
                    "finish_reason": "eos_token", "generated_tokens": len(view), "seed": parameters.get("seed"),
                    "prefill": [], "tokens": [{"id": index, "text": token, "logprob": alternatives[0][1], "special": False}
                                              for index, (token, alternatives) in enumerate(view)],
                }
                if count:
                    details["top_tokens"] = [[{"id": rank, "text": alt, "logprob": value, "special": False}
                                              for rank, (alt, value) in enumerate(alternatives[:count])]
                                             for _, alternatives in view]
                result["details"] = details
            service = self.config.service_time_s
            headers = {"x-queue-time": str(int(queued * 1000)), "x-inference-time": str(int(service * 1000)),
                       "x-compute-type": "stand-in"}
            usage = self._usage(prompt_tokens, completion_tokens)
            if usage is not None:
                headers.update({"x-prompt-tokens": str(usage[0]), "x-generated-tokens": str(usage[1])})
            return web.json_response(result, headers=headers)

        return await self._serve(request, "tgi", authorised, answer, error)

    # --- batch APIs ----------------------------------------------------------------------
    def _batch_answers(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Each request's answer (text and tokens) or why it failed, as the batch ends; each
        answered request billed at half price."""
        items = batch["items"]
        end = self.config.batch_end if batch["number"] <= self.config.batch_faulty else "completed"
        answers: dict[str, Any] = {}
        for index, (custom_id, messages, sampling, seed) in enumerate(items):
            if end != "completed" and index >= len(items) // 2:
                answers[custom_id] = end  # the provider expired or cancelled the rest
            elif self.rng.random() < self.config.batch_errored:
                answers[custom_id] = "errored"
            else:
                answers[custom_id] = self._reply(messages, sampling, seed, False)
                _, prompt_tokens, completion_tokens = answers[custom_id]
                self.bill(batch["provider"], batch["model"], input_tokens=prompt_tokens, output_tokens=completion_tokens,
                          batch=True)
        return {"end": end, "answers": answers}

    def _new_batch(self, kind: str, items: list[tuple[str, list[Message], Sampling, int | None]], body: Any,
                   model: str) -> str:
        self.stats.batches_created += 1
        self.stats.batch_requests += len(items)
        batch_id = f"{kind}_batch_{self.stats.batches_created}"
        self.batches[batch_id] = {"items": items, "polls": 0, "result": None, "created": time.time(), "body": body,
                                  "number": self.stats.batches_created, "model": model,
                                  "provider": "openai" if kind == "openai" else "anthropic"}
        return batch_id

    def _advance(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        batch["polls"] += 1
        if batch["result"] is None and batch["polls"] >= self.config.batch_polls:
            batch["result"] = self._batch_answers(batch)
        return batch

    async def _created(self, request: web.Request, document: dict[str, Any], error: Any) -> web.StreamResponse:
        """A create's answer: after `batch_create_delay_s`, or lost (`batch_create_fault`) for
        the first `batch_create_faults` creates; the batch is made whatever its answer."""
        if self.config.batch_create_delay_s:
            await asyncio.sleep(self.config.batch_create_delay_s)
        fault = self.config.batch_create_fault
        if fault is not None and self.stats.batches_created <= self.config.batch_create_faults:
            if fault == "500":
                return error(500, "server error", "api_error")
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError  # nothing more to send on a dropped connection
        return web.json_response(document)

    def _listed(self, request: web.Request, kind: str, document: Any, *, cursor: str) -> web.Response:
        """A provider's list of batches, newest first, a page at a time (`limit`, after the
        batch named by `cursor`)."""
        ids = sorted((batch_id for batch_id in self.batches if batch_id.startswith(f"{kind}_batch_")),
                     key=lambda batch_id: -self.batches[batch_id]["number"])
        after = request.query.get(cursor)
        if after in ids:
            ids = ids[ids.index(after) + 1:]
        limit = int(request.query.get("limit", "20"))
        page = [document(batch_id) for batch_id in ids[:limit]]
        return web.json_response({"data": page, "has_more": len(ids) > limit, "object": "list",
                                  "first_id": page[0]["id"] if page else None, "last_id": page[-1]["id"] if page else None})

    async def upload(self, request: web.Request) -> web.Response:
        data = await request.post()
        upload = data["file"]
        content = upload.file.read() if hasattr(upload, "file") else bytes(str(upload), "utf-8")
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = content
        return web.json_response({"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                                  "filename": "batch.jsonl", "purpose": "batch", "status": "processed"})

    async def file_content(self, request: web.Request) -> web.Response:
        content = self.files.get(request.match_info["file_id"])
        if content is None:
            return web.json_response({"error": {"message": "no such file", "type": "invalid_request_error"}}, status=404)
        return web.Response(body=content, content_type="application/octet-stream")

    async def openai_batch(self, request: web.Request) -> web.Response:
        body = await request.json()
        items = []
        for line in self.files[body["input_file_id"]].decode().splitlines():
            item = json.loads(line)
            chat = item["body"]
            sampling = Sampling(temperature=chat.get("temperature", 1.0), top_k=_top_k(chat.get("top_k")),
                                max_tokens=chat.get("max_tokens") or chat.get("max_completion_tokens") or 16)
            items.append((item["custom_id"], [Message(m["role"], m["content"]) for m in chat["messages"]], sampling,
                          chat.get("seed")))
            model = chat.get("model", self.config.model_id)
        batch_id = self._new_batch("openai", items, body, model if items else self.config.model_id)

        def error(status: int, message: str, kind: str) -> web.Response:
            return web.json_response({"error": {"message": message, "type": kind}}, status=status)

        return await self._created(request, self._openai_batch_document(batch_id), error)

    async def openai_batches(self, request: web.Request) -> web.Response:
        return self._listed(request, "openai", self._openai_batch_document, cursor="after")

    def _openai_batch_document(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        total = len(batch["items"])
        document: dict[str, Any] = {
            "id": batch_id, "object": "batch", "endpoint": "/v1/chat/completions", "completion_window": "24h",
            "input_file_id": batch["body"]["input_file_id"], "created_at": int(batch["created"]), "status": "in_progress",
            "metadata": batch["body"].get("metadata"), "request_counts": {"total": total, "completed": 0, "failed": 0}}
        result = batch["result"]
        if result is None:
            return document
        answers = result["answers"]
        ok = [(key, answer) for key, answer in answers.items() if isinstance(answer, tuple)]
        failed = [(key, answer) for key, answer in answers.items() if not isinstance(answer, tuple)]
        if "output_file_id" not in batch:
            lines = []
            for key, (text, prompt_tokens, completion_tokens) in ok:
                completion = {"id": f"chatcmpl-{key[:8]}", "object": "chat.completion", "created": int(batch["created"]),
                              "model": batch["model"],
                              "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                           "finish_reason": "stop"}],
                              "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                        "total_tokens": prompt_tokens + completion_tokens}}
                lines.append(json.dumps({"id": f"req-{key[:8]}", "custom_id": key, "error": None,
                                         "response": {"status_code": 200, "request_id": key[:8], "body": completion}}))
            errors = [json.dumps({"id": f"req-{key[:8]}", "custom_id": key, "response": None,
                                  "error": {"code": "batch_expired" if reason == "expired" else
                                            "batch_cancelled" if reason == "cancelled" else "server_error",
                                            "message": reason}}) for key, reason in failed]
            batch["output_file_id"] = f"file-{len(self.files) + 1}"
            self.files[batch["output_file_id"]] = "\n".join(lines).encode()
            batch["error_file_id"] = f"file-{len(self.files) + 1}"
            self.files[batch["error_file_id"]] = "\n".join(errors).encode()
        document.update(status=result["end"], output_file_id=batch["output_file_id"], error_file_id=batch["error_file_id"],
                        request_counts={"total": total, "completed": len(ok), "failed": len(failed)})
        return document

    async def openai_batch_state(self, request: web.Request) -> web.Response:
        batch_id = request.match_info["batch_id"]
        if batch_id not in self.batches:
            return web.json_response({"error": {"message": "no such batch", "type": "invalid_request_error"}}, status=404)
        self._advance(batch_id)
        return web.json_response(self._openai_batch_document(batch_id))

    async def anthropic_batch(self, request: web.Request) -> web.Response:
        body = await request.json()
        items = []
        for entry in body["requests"]:
            params = entry["params"]
            system = params.get("system")
            messages = ([Message("system", _block_text(system))] if system else []) + [
                Message(item["role"], _block_text(item["content"])) for item in params["messages"]]
            sampling = Sampling(temperature=params.get("temperature", 1.0), top_k=params.get("top_k"),
                                max_tokens=params["max_tokens"])
            items.append((entry["custom_id"], messages, sampling, None))
        model = body["requests"][0]["params"]["model"] if body["requests"] else self.config.model_id
        batch_id = self._new_batch("msgbatch", items, body, model)

        def error(status: int, message: str, kind: str) -> web.Response:
            return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)

        return await self._created(request, self._anthropic_batch_document(batch_id), error)

    async def anthropic_batches(self, request: web.Request) -> web.Response:
        return self._listed(request, "msgbatch", self._anthropic_batch_document, cursor="after_id")

    def _anthropic_batch_document(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        created = datetime.fromtimestamp(batch["created"], tz=UTC).isoformat().replace("+00:00", "Z")
        counts = {"processing": len(batch["items"]), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        document: dict[str, Any] = {"id": batch_id, "type": "message_batch", "processing_status": "in_progress",
                                    "request_counts": counts, "created_at": created, "expires_at": created,
                                    "ended_at": None, "archived_at": None, "cancel_initiated_at": None,
                                    "results_url": None}
        result = batch["result"]
        if result is not None:
            kinds = {"expired": "expired", "cancelled": "canceled", "errored": "errored"}
            counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
            for answer in result["answers"].values():
                counts["succeeded" if isinstance(answer, tuple) else kinds[answer]] += 1
            document.update(processing_status="ended", request_counts=counts, ended_at=created,
                            results_url=f"{self.url}/v1/messages/batches/{batch_id}/results")
        return document

    async def anthropic_batch_state(self, request: web.Request) -> web.Response:
        batch_id = request.match_info["batch_id"]
        if batch_id not in self.batches:
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "no such batch"}},
                                     status=404)
        self._advance(batch_id)
        return web.json_response(self._anthropic_batch_document(batch_id))

    async def anthropic_batch_results(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None or batch["result"] is None:
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "not ended"}},
                                     status=404)
        kinds = {"expired": "expired", "cancelled": "canceled", "errored": "errored"}
        lines = []
        for key, answer in batch["result"]["answers"].items():
            if isinstance(answer, tuple):
                text, prompt_tokens, completion_tokens = answer
                message = {"id": f"msg_{key[:8]}", "type": "message", "role": "assistant", "model":
                           batch["body"]["requests"][0]["params"]["model"], "content": [{"type": "text", "text": text}],
                           "stop_reason": "end_turn", "stop_sequence": None,
                           "usage": {"input_tokens": prompt_tokens, "output_tokens": completion_tokens}}
                lines.append(json.dumps({"custom_id": key, "result": {"type": "succeeded", "message": message}}))
            else:
                result: dict[str, Any] = {"type": kinds[answer]}
                if answer == "errored":
                    result["error"] = {"type": "error", "error": {"type": "api_error", "message": "failed"}}
                lines.append(json.dumps({"custom_id": key, "result": result}))
        return web.Response(body="\n".join(lines).encode(), content_type="application/binary")

    # --- prompt caches, as the providers bill them ----------------------------------------
    def _openai_cached(self, messages: list[Message]) -> int:
        """OpenAI's automatic cache: the longest prefix of the prompt seen before, counted in
        steps of 128 tokens (here 512 characters), if it is 1,024 tokens or more."""
        text = "".join(f"\x00{message.role}\x00{message.content}" for message in messages)
        cached = 0
        for end in range(512, len(text) + 1, 512):
            key = "openai:" + hashlib.sha256(text[:end].encode()).hexdigest()
            if key in self.cached_prefixes and end >= 4 * 1024:
                cached = end // 4
            self.cached_prefixes.add(key)
        return min(cached, sum(estimate_tokens(message.content) for message in messages))

    def _anthropic_cached(self, body: dict[str, Any]) -> tuple[int, int]:
        """Anthropic's cache: a request reads the longest prefix, ending at one of its blocks up
        to its last `cache_control` block, that an earlier breakpoint wrote, and writes the
        rest up to that breakpoint (a prefix under `cache_min_tokens` is never cached)."""
        blocks = _blocks(body.get("system")) + [block for item in body["messages"] for block in _blocks(item["content"])]
        marked = [index for index, block in enumerate(blocks) if block.get("cache_control")]
        if not marked:
            return 0, 0
        prefix, read, boundaries = "", 0, []
        for block in blocks[:marked[-1] + 1]:
            prefix += str(block.get("text", ""))
            boundaries.append(("anthropic:" + hashlib.sha256(prefix.encode()).hexdigest(), estimate_tokens(prefix)))
        for key, tokens in boundaries:
            if key in self.cached_prefixes:
                read = tokens
        key, tokens = boundaries[-1]
        least = self.config.cache_min_tokens or anthropic_min_cacheable(str(body.get("model", "")))
        if tokens < least or key in self.cached_prefixes:
            return read, 0
        self.cached_prefixes.add(key)
        return read, tokens - read

    async def info(self, request: web.Request) -> web.Response:
        return web.json_response({"model_id": self.config.model_id, "max_concurrent_requests": self.config.capacity})

    # --- control -------------------------------------------------------------------------
    async def get_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats.as_dict())

    async def reset_stats(self, request: web.Request) -> web.Response:
        self.stats = Stats(active=self.stats.active, waiting=self.stats.waiting)
        return web.json_response(self.stats.as_dict())

    async def set_faults(self, request: web.Request) -> web.Response:
        faults = {str(kind): float(rate) for kind, rate in (await request.json()).items()}
        self.config = ServerConfig(**{**self.config.__dict__, "faults": faults})
        return web.json_response({"faults": faults})


def _blocks(content: Any) -> list[dict[str, Any]]:
    """An Anthropic `system` or message `content` as its list of blocks (a string is one)."""
    if not content:
        return []
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _block_text(content: Any) -> str:
    return "".join(str(block.get("text", "")) for block in _blocks(content))


def prompt_key(messages: list[Message] | tuple[Message, ...]) -> str:
    """What a recorded reply is found by: the prompt's roles and texts."""
    return hashlib.sha256(json.dumps([[message.role, message.content] for message in messages]).encode()).hexdigest()


def replies_from_run(directory: str | Path, scenario: Any) -> dict[str, list[str]]:
    """Every prompt of the runs recorded in `directory` (re-asks included) with the replies it
    got, in the order it got them: a server given them answers a run of `scenario` with the
    same seeds as recorded (a prompt that repeats names its agent, whose calls come in order)."""
    from agentsim.store import Store

    store = Store(Path(directory))
    try:
        replies: dict[str, list[str]] = {}
        for run, t, agent, attempt, reply in store.rows("SELECT run, t, agent, attempt, reply FROM calls "
                                                        "WHERE reply IS NOT NULL ORDER BY run, t, agent, attempt"):
            replies.setdefault(prompt_key(store.messages(scenario, run, t, agent, attempt)), []).append(reply)
        return replies
    finally:
        store.close()


def _top_k(value: Any) -> int | None:
    return None if value in (None, -1, 0) else int(value)


def parse_faults(pairs: list[str]) -> dict[str, float]:
    faults = {}
    for pair in pairs:
        kind, _, rate = pair.partition("=")
        faults[kind.strip()] = float(rate)
    return faults


async def _serve_forever(config: ServerConfig, host: str, port: int) -> None:
    server = StandInServer(config)
    url = await server.start(host, port)
    print(f"stand-in server on {url} (capacity {config.capacity}, service {config.service_time_s:g} s, "
          f"faults {config.faults or 'none'})", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--capacity", type=int, default=32, help="requests served at once (default 32)")
    parser.add_argument("--service-time", type=float, default=0.0, help="seconds each request takes (default 0)")
    parser.add_argument("--latency-jitter", type=float, default=0.0,
                        help="plus a random delay up to this many seconds per request, unseeded (default 0)")
    parser.add_argument("--fault", action="append", default=[], metavar="KIND=RATE",
                        help=f"inject a fault at a rate (repeatable): {', '.join(FAULT_KINDS)}")
    parser.add_argument("--healthy-first", type=int, default=0, metavar="N",
                        help="answer the first N requests without a fault (past a client's start-up probe)")
    parser.add_argument("--retry-after", type=float, default=1.0, help="seconds a 429_retry_after asks to wait")
    parser.add_argument("--timeout-hold", type=float, default=30.0, help="seconds a timeout fault holds the request")
    parser.add_argument("--drip-interval", type=float, default=0.5, help="seconds between the bytes of a drip fault")
    parser.add_argument("--usage", choices=USAGE_KINDS, default="reported",
                        help="the token counts answers carry: the rule's, below zero, or none (default reported)")
    parser.add_argument("--max-waiting", type=int, default=None, help="queue length past which TGI-style overload answers 429")
    parser.add_argument("--api-key", default=None, help="require this key (Bearer or x-api-key)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault dice")
    parser.add_argument("--standin-bias-name", default=None, help="the name the rule favours when it draws from its prior")
    parser.add_argument("--standin-bias", type=float, default=0.0, help="probability of the favoured name in the prior")
    parser.add_argument("--standin-noise", type=float, default=0.0, help="probability of a draw from the prior (exploration)")
    options = parser.parse_args(argv)
    try:
        config = ServerConfig(capacity=options.capacity, service_time_s=options.service_time,
                              latency_jitter_s=options.latency_jitter,
                              faults=parse_faults(options.fault), healthy_first=options.healthy_first,
                              retry_after_s=options.retry_after,
                              timeout_hold_s=options.timeout_hold, drip_interval_s=options.drip_interval,
                              usage=options.usage, max_waiting=options.max_waiting,
                              api_key=options.api_key, seed=options.seed, bias_name=options.standin_bias_name,
                              bias=options.standin_bias, noise=options.standin_noise)
    except ValueError as error:
        parser.exit(2, f"standin_server: error: {error}\n")
    try:
        asyncio.run(_serve_forever(config, options.host, options.port))
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
