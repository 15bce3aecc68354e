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

from standin_server import ServerConfig, StandInServer  # noqa: E402


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
