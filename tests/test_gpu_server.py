"""benchmarks/gpu_server.py on a CPU with a tiny random model: what agentsim's own TGI and
lean OpenAI clients send comes back as one of the choice grammar's replies (so the GPU
benchmark's runs parse), the same seed gives the same reply, and requests that arrive together
share a batch. Skipped without torch (the `local` extra)."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import ROOT

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
pytest.importorskip("jinja2")

sys.path.insert(0, str(ROOT / "benchmarks"))

from aiohttp import web
from gpu_server import Engine, GPUServer, literal_options

from agentsim.games.naming.answers import answer_replies, parse_answer
from agentsim.llm.base import Grammar, Message, Request, Sampling
from agentsim.llm.openai_http import OpenAIHTTPModel
from agentsim.llm.tgi import TGIModel

NAMES = ("Q", "M", "Zeta")
GRAMMAR = Grammar.choice(answer_replies(NAMES))


@pytest.fixture(scope="module")
def gpu_server() -> Iterator[tuple[str, GPUServer]]:
    """The server on a free loopback port, in a thread with its own event loop."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def start() -> tuple[str, GPUServer, web.AppRunner]:
        server = GPUServer(Engine("tiny", "cpu"), max_batch=64, model_id="tiny")
        server.ready = True
        runner = web.AppRunner(server.app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}", server, runner

    url, server, runner = asyncio.run_coroutine_threadsafe(start(), loop).result(60)
    yield url, server
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def naming_request(seed: int, temperature: float = 0.7) -> Request:
    messages = (Message("system", "You are playing a game. Choose one name: Q, M or Zeta."),
                Message("user", "Which name do you choose?"))
    return Request(messages=messages, sampling=Sampling(temperature=temperature, max_tokens=GRAMMAR.longest_reply_tokens()),
                   seed=seed, options=NAMES, grammar=GRAMMAR)


def ask(model: Any, requests: list[Request]) -> list[str]:
    async def run() -> list[str]:
        try:
            return [completion.text for completion in await asyncio.gather(*(model.complete(r) for r in requests))]
        finally:
            await model.aclose()

    return asyncio.run(run())


def test_the_choice_grammar_reads_back_as_its_literals() -> None:
    assert literal_options(GRAMMAR.value) == [reply for reply, _ in GRAMMAR.choices]
    assert literal_options("[A-Z]+") is None


def test_agentsims_clients_get_replies_that_parse(gpu_server: tuple[str, GPUServer]) -> None:
    url, server = gpu_server
    replies = set(answer_replies(NAMES).values())
    requests = [naming_request(seed) for seed in range(12)] + [naming_request(99, temperature=0.0)]
    batches_before = server.stats.batches
    tgi = ask(TGIModel(name="tgi", url=url), requests)
    lean = ask(OpenAIHTTPModel(name="openai", model="tiny", api_key="EMPTY", base_url=url + "/v1"), requests)
    for text in tgi + lean:
        assert text in replies
        assert parse_answer(text, NAMES).action in NAMES
    assert server.stats.batches - batches_before < 2 * len(requests)  # requests sent together shared batches
    again = ask(TGIModel(name="tgi", url=url), requests[:3])
    assert again == tgi[:3]  # the request's seed decides among the allowed tokens
    assert server.stats.answered == 2 * len(requests) + 3
