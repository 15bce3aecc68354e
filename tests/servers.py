"""The stand-in server (backends/standin_server.py) for tests: started on a free loopback port
in a thread with its own event loop, so that in-process runs and CLI subprocesses alike reach
it over real HTTP."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import ROOT

sys.path.insert(0, str(ROOT / "backends"))

from standin_server import ServerConfig, StandInServer


async def cancel_the_rest() -> None:
    """Handlers still waiting when a server stops (a fault that holds a connection open) are
    cancelled and awaited: left pending, the garbage collector reports each as destroyed."""
    current = asyncio.current_task()
    rest = [task for task in asyncio.all_tasks() if task is not current]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


class ServerThread:
    def __init__(self, config: ServerConfig) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(self._make(config), self.loop).result(10)
        self.url = asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(10)

    @staticmethod
    async def _make(config: ServerConfig) -> StandInServer:
        return StandInServer(config)

    @property
    def stats(self) -> Any:
        return self.server.stats

    def faults(self, faults: dict[str, float]) -> None:
        self.server.config.faults = dict(faults)

    def reset(self) -> None:
        asyncio.run_coroutine_threadsafe(self._reset(), self.loop).result(10)

    async def _reset(self) -> None:
        from standin_server import Stats

        self.server.stats = Stats()

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        asyncio.run_coroutine_threadsafe(cancel_the_rest(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def standin_server() -> Iterator[Callable[..., ServerThread]]:
    """A factory: `standin_server(capacity=4, service_time_s=0.01, faults={...})`."""
    started: list[ServerThread] = []

    def start(**config: Any) -> ServerThread:
        server = ServerThread(ServerConfig(**config))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


class ScriptedServer:
    """A bare OpenAI-compatible chat server on 127.0.0.1 that answers every request the same
    way: `echo` (the last prompt back as the reply, which no game can read), or an HTTP
    `status` with an error body. It counts the requests that reach it. Not the stand-in: a
    third party's server, as a user meets one."""

    def __init__(self, *, mode: str = "echo", status: int = 400) -> None:
        from aiohttp import web

        self.mode, self.status, self.requests = mode, status, 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        app = web.Application()
        app.add_routes([web.post("/v1/chat/completions", self._chat)])
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)

        async def start() -> str:
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]

        self.url = asyncio.run_coroutine_threadsafe(start(), self.loop).result(10)

    async def _chat(self, request: Any) -> Any:
        from aiohttp import web

        self.requests += 1
        body = await request.json()
        if self.mode == "status":
            return web.json_response({"error": {"message": "unsupported parameter", "type": "invalid_request_error"}},
                                     status=self.status)
        text = body["messages"][-1]["content"][:200]
        return web.json_response({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                               "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        asyncio.run_coroutine_threadsafe(cancel_the_rest(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def scripted_server() -> Iterator[Callable[..., ScriptedServer]]:
    started: list[ScriptedServer] = []

    def start(**config: Any) -> ScriptedServer:
        server = ScriptedServer(**config)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
