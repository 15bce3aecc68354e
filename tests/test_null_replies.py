"""Issue 37 (10): a reply with no text (`{"generated_text": null}`, a chat message whose content
is null, an Anthropic text block without text) is an unreadable reply, as one naming no option
is: re-asked, then a recorded fallback; never a crash (it was a TypeError in the naming game's
answer reader, exit 1)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from helpers import cli

from agentsim.errors import BackendError
from agentsim.llm import wire
from agentsim.llm.base import Message, Request, Sampling
from agentsim.llm.openai_backend import read_completion
from agentsim.llm.tgi import TGIModel

ROOT = Path(__file__).resolve().parent.parent


class NullServer:
    """A TGI-shaped server on 127.0.0.1 whose every generation has `generated_text: null`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.requests = 0
        app = web.Application()
        app.add_routes([web.get("/info", self._info), web.post("/generate", self._generate)])
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)

        async def start() -> str:
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]

        self.url = asyncio.run_coroutine_threadsafe(start(), self.loop).result(10)

    async def _info(self, request: web.Request) -> web.Response:
        return web.json_response({"model_id": "HuggingFaceTB/SmolLM2-135M-Instruct"})

    async def _generate(self, request: web.Request) -> web.Response:
        self.requests += 1
        return web.json_response({"generated_text": None, "details": {"finish_reason": "length", "generated_tokens": 0}})

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def null_server() -> Iterator[NullServer]:
    server = NullServer()
    yield server
    server.stop()


def test_tgi_null_text_is_an_empty_reply(null_server: NullServer) -> None:
    async def ask() -> str:
        model = TGIModel(name="tgi", url=null_server.url)
        try:
            completion = await model.complete(Request(messages=(Message("user", "Say a name."),), sampling=Sampling()))
        finally:
            await model.aclose()
        return completion.text

    assert asyncio.run(ask()) == ""


def test_a_run_on_null_replies_stops_as_unreadable_not_a_crash(null_server: NullServer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    ran = cli(str(ROOT / "scenarios" / "naming_game.py"), "--backend", f"tgi:{null_server.url}", "--no-live",
              "--no-model-check", "--set", "agents=4", "--set", "max_rounds=2", "--out", str(out))
    assert "Traceback" not in ran.stderr and "TypeError" not in ran.stderr, ran.stderr
    assert ran.returncode == 3, ran.stderr  # mostly fallbacks: the health rule stops it, as for unreadable text
    assert null_server.requests > 0
    summary = json.loads((out / "summary.json").read_text())
    assert all(run["fallbacks"] > 0 for run in summary["runs"]), summary["runs"]


def test_every_http_backend_reads_null_text_as_empty() -> None:
    chat = {"choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "stop"}], "usage": {}}
    assert read_completion(json.dumps(chat).encode(), {}, "m").text == ""
    assert wire.reply_text(None, "anthropic") == ""
    with pytest.raises(BackendError) as raised:
        wire.reply_text(7, "tgi")  # not text at all: a body that broke its format, retried as malformed
    assert raised.value.kind == "malformed"

