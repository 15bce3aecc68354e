"""The fault matrix: every fault the stand-in server injects, through the openai, anthropic and
tgi backends (their real clients over real HTTP), transient and permanent, in a short and a
long run, and what became of each run: its exit code, then (if it stopped) the exit code of
`--resume` against the healthy server, the interactions recorded, any lost or recorded twice,
and the fallbacks. Prints the markdown table docs/backends.md holds, and the totals.

    python benchmarks/fault_matrix.py [--rate 0.3] [--long 100] [--providers openai,tgi]

Each cell is a naming game of N 8 (the sequence of random pairs), 3 population rounds (12
interactions) or `--long` rounds. "transient": `rate` of the requests answered with the
fault from the start; "permanent": every request after the start-up probe's. "killed" stops
the server after 20 answered requests and starts a new one on the same port 2 s later;
"mostly_unparseable" answers 90% of the requests (in either mode) with a reply that names no
option. The
timeout fault holds a request past the client's 0.25 s timeout; a drip sends the body a
byte every 50 ms. A run that cannot get the model's answers must stop with exit 3 (before
recording anything that stands for the failure), and after `--resume` be complete.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "backends")]

from standin_server import FAULT_KINDS, ServerConfig, StandInServer  # noqa: E402 (after the sys.path line)

from agentsim.errors import RunStopped, UserError  # noqa: E402 (after the sys.path line)
from agentsim.games.naming import NamingGame  # noqa: E402 (after the sys.path line)
from agentsim.llm.retries import RetryPolicy  # noqa: E402 (after the sys.path line)
from agentsim.llm.specs import BackendOptions  # noqa: E402 (after the sys.path line)
from agentsim.runner import Experiment, ExperimentConfig  # noqa: E402 (after the sys.path line)

FAULTS = [*FAULT_KINDS, "mostly_unparseable", "killed"]
PROVIDERS = ["openai", "anthropic", "tgi"]
RETRY = RetryPolicy(max_attempts=12, base_s=0.005, cap_s=0.05, deadline_s=30)
SHORT = 3


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

    def heal(self) -> None:
        self.server.config.faults = {}

    def total_requests(self) -> int:
        return self.requests + self.server.stats.requests

    def close(self) -> None:
        self._call(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def spec(provider: str, url: str) -> str:
    return {"openai": f"openai:stand-in-model@{url}/v1", "anthropic": f"anthropic:stand-in-model@{url}",
            "tgi": f"tgi:{url}"}[provider]


def run(out: Path, backend: str, rounds: int, *, resume: bool = False) -> int:
    """One run in process; the exit code the command line would give."""
    scenario = NamingGame(agents=8, max_rounds=rounds, stop_at="none", max_in_flight=4)
    llm = BackendOptions(retry=RETRY, timeout_s=0.25, cache=False)
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, backend=backend, seed=3, llm=llm,
                                             resume=resume), Quiet())
    try:
        experiment.open()
        asyncio.run(experiment.run())
    except RunStopped as error:
        return error.exit_code
    except UserError:
        return 2
    return 0


def recorded(out: Path) -> dict[str, int]:
    """Interactions recorded, lost (a gap in t), recorded twice, fallbacks, and decisions
    recorded without any reply (a fallback standing for a backend's failure)."""
    connection = sqlite3.connect(out / "agentsim.db")
    try:
        times = [t for (t,) in connection.execute("SELECT t FROM encounters ORDER BY t")]
        moves = list(connection.execute("SELECT reply, fallback IS 1 FROM decisions WHERE payoff IS NOT NULL"))
    finally:
        connection.close()
    distinct = set(times)
    return {"interactions": len(distinct), "twice": len(times) - len(distinct),
            "lost": (max(distinct) + 1 - len(distinct)) if distinct else 0,
            "fallbacks": sum(fallback for _, fallback in moves), "without_reply": sum(not reply for reply, _ in moves)}


def cell(provider: str, fault: str, mode: str, rounds: int, rate: float, directory: Path) -> dict[str, Any]:
    if fault == "mostly_unparseable":
        kinds = {"unparseable": 0.9}
    else:
        kinds = {} if fault == "killed" else {fault: rate if mode == "transient" else 1.0}
    config = ServerConfig(capacity=8, faults=kinds, healthy_first=1 if mode == "permanent" else 0, retry_after_s=0.05,
                          timeout_hold_s=0.6, drip_interval_s=0.05, seed=7)
    server = Server(config)
    url = f"http://127.0.0.1:{server.port}"
    out = directory / f"{provider}-{fault}-{mode}-{rounds}"
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
    started = time.monotonic()
    try:
        first = run(out, spec(provider, url), rounds)
        stop.set()
        if killer is not None:
            killer.join()
        before = recorded(out)
        resumed = None
        if first != 0:
            server.heal()
            resumed = run(out, spec(provider, url), rounds, resume=True)
        after = recorded(out)
    finally:
        stop.set()
        server.close()
    return {"provider": provider, "fault": fault, "mode": mode, "rounds": rounds, "exit": first, "resume": resumed,
            "requests": server.total_requests(), "before": before, "after": after, "planned": rounds * 4,
            "seconds": time.monotonic() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=0.3, help="share of requests answered with a transient fault")
    parser.add_argument("--long", type=int, default=100, help="population rounds of the long run (default 100)")
    parser.add_argument("--providers", default=",".join(PROVIDERS), help="which backends (default: all three)")
    options = parser.parse_args(argv)
    rows = []
    print("| backend | fault | mode | rounds | exit | --resume | requests | recorded before | recorded after "
          "| lost | twice | fallbacks (without a reply) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for provider in options.providers.split(","):
            for fault in FAULTS:
                for mode in ("transient", "permanent"):
                    if fault == "killed" and mode == "permanent":
                        continue  # a server that never comes back is "drop" or "timeout", permanent
                    for rounds in (SHORT, options.long):
                        row = cell(provider, fault, mode, rounds, options.rate, Path(directory))
                        rows.append(row)
                        after = row["after"]
                        complete = after["interactions"] == row["planned"]
                        print(f"| {provider} | {fault} | {mode} | {rounds} | {row['exit']} "
                              f"| {'-' if row['resume'] is None else row['resume']} | {row['requests']} "
                              f"| {row['before']['interactions']} | {after['interactions']} of {row['planned']}"
                              f"{'' if complete else ' (INCOMPLETE)'} | {after['lost']} | {after['twice']} "
                              f"| {after['fallbacks']} ({after['without_reply']}) |", flush=True)
    exits = collections.Counter(row["exit"] for row in rows)
    resumes = collections.Counter(row["resume"] for row in rows if row["resume"] is not None)
    print(f"\nruns {len(rows)}; exit codes {dict(sorted(exits.items()))}; --resume exit codes "
          f"{dict(sorted(resumes.items()))}; lost {sum(row['after']['lost'] for row in rows)}; recorded twice "
          f"{sum(row['after']['twice'] for row in rows)}; incomplete after resume "
          f"{sum(row['after']['interactions'] != row['planned'] for row in rows)}; fallbacks without a reply "
          f"{sum(row['after']['without_reply'] for row in rows)}; {sum(row['seconds'] for row in rows):.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
