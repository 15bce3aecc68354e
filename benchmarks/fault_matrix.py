"""The fault matrix: every fault the stand-in server injects, through the openai, anthropic and
tgi backends (their real clients over real HTTP), and what became of the run: every planned
interaction recorded exactly once, or the run stopped as `failed` (and then, after `--resume`
against a healthy server, complete). Prints the markdown table docs/backends.md holds.

    python benchmarks/fault_matrix.py [--rate 0.3]

Each cell is a naming game (N 8, 4 population rounds, 16 interactions, the sequence of random
pairs) with `rate` of the requests answered with the fault (the timeout fault holds a request
past the client's 0.25 s timeout). "killed" stops the server after 20 answered requests and
starts a new one on the same port 2 s later.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "backends")]

from standin_server import ServerConfig, StandInServer  # noqa: E402 (after the sys.path line)

from agentsim.errors import RunStopped  # noqa: E402 (after the sys.path line)
from agentsim.games.naming import NamingGame  # noqa: E402 (after the sys.path line)
from agentsim.llm.retries import RetryPolicy  # noqa: E402 (after the sys.path line)
from agentsim.llm.specs import BackendOptions  # noqa: E402 (after the sys.path line)
from agentsim.runner import Experiment, ExperimentConfig  # noqa: E402 (after the sys.path line)

FAULTS = ["429", "429_retry_after", "529", "overloaded", "500", "503", "timeout", "drop", "malformed", "unparseable",
          "killed"]
PROVIDERS = ["openai", "anthropic", "tgi"]
RETRY = RetryPolicy(max_attempts=12, base_s=0.005, cap_s=0.05, deadline_s=30)


class Quiet:
    def start(self, experiment: dict[str, Any]) -> None: ...
    def update(self, runs: list[Any], *, final: bool = False) -> None: ...
    def stop(self) -> None: ...


class Server:
    """The stand-in server in a thread; `restart` stops it and starts a new one on the same port."""

    def __init__(self, config: ServerConfig, port: int = 0) -> None:
        self.config = config
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = self._call(self._start(port))
        self.port = int(self.server.url.rpartition(":")[2])
        self.requests = 0

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    async def _start(self, port: int) -> StandInServer:
        server = StandInServer(self.config)
        await server.start(port=port)
        return server

    def restart(self, down_s: float) -> None:
        self.requests += self.server.stats.requests
        self._call(self.server.stop())
        time.sleep(down_s)
        self.server = self._call(self._start(self.port))

    def total_requests(self) -> int:
        return self.requests + self.server.stats.requests

    def close(self) -> None:
        self._call(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def spec(provider: str, url: str) -> str:
    return {"openai": f"openai:stand-in-model@{url}/v1", "anthropic": f"anthropic:stand-in-model@{url}",
            "tgi": f"tgi:{url}"}[provider]


def run(out: Path, backend: str, *, resume: bool = False) -> str:
    scenario = NamingGame(agents=8, max_rounds=4, stop_at="none", max_in_flight=4)
    llm = BackendOptions(retry=RETRY, timeout_s=0.25, cache=False)
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, backend=backend, seed=3, llm=llm,
                                             resume=resume), Quiet())
    experiment.open()
    try:
        asyncio.run(experiment.run())
    except RunStopped as error:
        return f"{error.status}: {error.reason}"
    return "done"


def recorded(out: Path) -> tuple[int, int, bool]:
    """(interactions recorded, duplicates or gaps, every decision has a reply)."""
    connection = sqlite3.connect(out / "agentsim.db")
    times = [t for (t,) in connection.execute("SELECT t FROM encounters ORDER BY t")]
    moves = list(connection.execute("SELECT reply FROM decisions WHERE payoff IS NOT NULL"))
    connection.close()
    irregular = len(times) - len(set(times)) + (0 if times == list(range(len(times))) else 1)
    return len(times), irregular, len(moves) == 2 * len(times)


def cell(provider: str, fault: str, rate: float, directory: Path) -> dict[str, Any]:
    faults = {} if fault == "killed" else {fault: rate}
    server = Server(ServerConfig(capacity=8, faults=faults, retry_after_s=0.05, timeout_hold_s=0.6, seed=7))
    url = f"http://127.0.0.1:{server.port}"
    out = directory / f"{provider}-{fault}"
    stop = threading.Event()
    killer = None
    if fault == "killed":
        def kill() -> None:
            while not stop.is_set() and server.server.stats.answered < 20:
                time.sleep(0.005)
            if not stop.is_set():
                server.restart(2.0)
        killer = threading.Thread(target=kill, daemon=True)
        killer.start()
    try:
        first = run(out, spec(provider, url))
        stop.set()
        if killer is not None:
            killer.join()
        outcome = first
        if first != "done":
            outcome = f"{first}; --resume: {run(out, spec(provider, url), resume=True)}"
        interactions, irregular, answered = recorded(out)
        summary = json.loads((out / "summary.json").read_text())
        injected = sum(server.server.stats.faults.values()) if fault != "killed" else "restart"
        retries = sum(entry.get("retries", 0) for entry in summary["runs"])
        fallbacks = sum(entry.get("fallbacks", 0) for entry in summary["runs"])
    finally:
        stop.set()
        server.close()
    return {"provider": provider, "fault": fault, "injected": injected, "requests": server.total_requests(),
            "retries": retries, "outcome": outcome, "interactions": interactions, "irregular": irregular,
            "answered": answered, "fallbacks": fallbacks}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=0.3, help="share of requests answered with the fault")
    options = parser.parse_args(argv)
    print("| backend | fault | injected | requests | retries | outcome | interactions recorded | lost or twice | fallbacks |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for provider in PROVIDERS:
            for fault in FAULTS:
                row = cell(provider, fault, options.rate, Path(directory))
                complete = row["interactions"] == 16 and not row["irregular"] and row["answered"]
                print(f"| {row['provider']} | {row['fault']} | {row['injected']} | {row['requests']} | {row['retries']} "
                      f"| {row['outcome']} | {row['interactions']} of 16{'' if complete else ' (INCOMPLETE)'} "
                      f"| {row['irregular']} | {row['fallbacks']} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
