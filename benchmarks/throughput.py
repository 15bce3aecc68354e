"""How close agentsim drives an inference server to its capacity, and what each call costs
the client, through the OpenAI backend (the real SDK over real HTTP).

The stand-in server (backends/standin_server.py) runs in its own process as a simulated
inference server: capacity C 32 requests at once, 100 ms per request, so at most
C / service time = 320 requests per second. The naming game with N 200 drives it (continuous
draws, up to 100 encounters in flight, the limiter's cap a little above C so the server's
queue never runs dry). Printed:

- achieved requests per second, as a fraction of C / service time (target >= 0.9);
- client CPU milliseconds per call: this process's CPU time (engine, store, cache, limiter,
  retries, the SDK, HTTP) divided by calls; the server's CPU is in its own process and not
  counted (target <= 1 ms);
- a second run with 20% of requests answered 429: the run completes with nothing lost
  (every interaction recorded once, every decision answered, no fallback), with its
  retries, requests per second and the limiter's trajectory.

    python benchmarks/throughput.py [--agents 200] [--rounds 10] [--capacity 32] [--service-time 0.1]

Timings on a shared host swing from run to run; the run is timed once per setting (a run is
thousands of calls). Prints figures; asserts nothing timed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentsim.games.naming import NamingGame
from agentsim.llm.limiter import LimitedModel, Limits
from agentsim.llm.retries import RetryPolicy
from agentsim.llm.specs import BackendOptions
from agentsim.llm.stack import layer
from agentsim.runner import Experiment, ExperimentConfig

ROOT = Path(__file__).resolve().parent.parent


class _Quiet:
    def start(self, experiment: dict[str, object]) -> None: ...
    def update(self, runs: list[object], *, final: bool = False) -> None: ...
    def stop(self) -> None: ...


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(capacity: int, service_time: float, faults: list[str]) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    command = [sys.executable, str(ROOT / "backends" / "standin_server.py"), "--port", str(port),
               "--capacity", str(capacity), "--service-time", str(service_time)]
    for fault in faults:
        command += ["--fault", fault]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline() if server.stdout else ""
    if "stand-in server on" not in line:
        server.kill()
        raise SystemExit(f"the stand-in server did not start: {line!r}")
    return server, f"http://127.0.0.1:{port}"


def warm_up(url: str) -> None:
    """One call through a throwaway client first: the SDK imports modules and builds models
    lazily on its first request, a one-time cost that is not a per-call cost."""
    from agentsim.llm.base import Message, Request, Sampling
    from agentsim.llm.openai_backend import OpenAIModel

    async def once() -> None:
        model = OpenAIModel(name="warm-up", model="stand-in-model", api_key="EMPTY", base_url=url + "/v1")
        request = Request(messages=(Message("user", "hello"),), sampling=Sampling(), seed=0, options=("A", "B"))
        await model.complete(request)
        await model.aclose()

    asyncio.run(once())


def run_once(url: str, *, agents: int, rounds: int, cap: int, out: Path, cache: Path | None) -> dict[str, Any]:
    spec = f"openai:stand-in-model@{url}/v1"
    scenario = NamingGame(agents=agents, pool_size=10, max_rounds=rounds, stop_at="none", max_in_flight=agents // 2)
    options = BackendOptions(limits=Limits(max_in_flight=cap), cache=cache is not None, cache_path=cache,
                             retry=RetryPolicy(max_attempts=20, base_s=0.05, cap_s=2.0), timeout_s=30)
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, backend=spec, seed=1, llm=options), _Quiet())
    experiment.open()
    limiter = layer(experiment.backends[spec], LimitedModel)
    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(experiment.run())
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    summary = json.loads((out / "summary.json").read_text())
    (run,) = summary["runs"]
    connection = sqlite3.connect(out / "agentsim.db")
    times = [t for (t,) in connection.execute("SELECT t FROM encounters WHERE run = 1 ORDER BY t")]
    unanswered = connection.execute("SELECT COUNT(*) FROM moves m WHERE NOT EXISTS (SELECT 1 FROM calls c WHERE "
                                     "c.run = m.run AND c.t = m.t AND c.agent = m.agent AND c.error IS NULL)").fetchone()[0]
    connection.close()
    return {"run": run, "wall": wall, "cpu": cpu, "times_ok": times == list(range(agents // 2 * rounds)),
            "unanswered": unanswered, "limiter": limiter}


def report(label: str, result: dict[str, Any], capacity: int, service_time: float, requests: int) -> None:
    run, wall, cpu = result["run"], result["wall"], result["cpu"]
    calls = run["calls"]
    ceiling = capacity / service_time
    print(f"{label}:")
    print(f"  {run['interactions']} interactions, {calls} answered calls, {requests} requests reached the server, "
          f"{wall:.2f} s")
    print(f"  throughput: {requests / wall:.0f} requests/s = {requests / wall / ceiling:.2f} of capacity "
          f"({capacity} / {service_time:g} s = {ceiling:.0f}/s); answered calls {calls / wall:.0f}/s")
    print(f"  client CPU: {cpu * 1e3 / calls:.2f} ms per answered call ({cpu:.2f} s in all)")
    print(f"  retries {run['retries']}, errors {run['errors']}, fallbacks {run['fallbacks']}, "
          f"interactions recorded once each in order: {result['times_ok']}, unanswered decisions: {result['unanswered']}")
    limiter: LimitedModel = result["limiter"]
    trajectory = limiter.trajectory
    start = trajectory[0][0]
    points = ", ".join(f"{t - start:.1f}s:{limit:.0f}" for t, limit in trajectory[:: max(1, len(trajectory) // 12)])
    print(f"  limiter: cap {limiter.limits.max_in_flight}, most in flight {limiter.max_seen}, lowest "
          f"{min(limit for _, limit in trajectory):.1f}, final {limiter.limit:.1f}, changes {len(trajectory) - 1}"
          f" [{points}]")


def server_requests(url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(url + "/stats") as response:  # loopback only
        return int(json.load(response)["requests"])


def main() -> None:
    parser = argparse.ArgumentParser(description="Throughput of the OpenAI backend against the stand-in server.")
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--capacity", type=int, default=32)
    parser.add_argument("--service-time", type=float, default=0.1)
    parser.add_argument("--cap", type=int, default=40, help="agentsim's in-flight cap (default 40: C plus a queue)")
    parser.add_argument("--no-cache", action="store_true", help="leave the response cache out of the stack")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for label, faults in (("clean", []), ("20% of requests answered 429", ["429=0.2"])):
            server, url = start_server(options.capacity, options.service_time, faults)
            try:
                warm_up(url)
                cache = None if options.no_cache else Path(scratch) / f"cache-{len(faults)}.db"
                result = run_once(url, agents=options.agents, rounds=options.rounds, cap=options.cap,
                                  out=Path(scratch) / f"out-{len(faults)}", cache=cache)
                report(label, result, options.capacity, options.service_time, server_requests(url))
            finally:
                server.terminate()
                server.wait(10)


if __name__ == "__main__":
    main()
