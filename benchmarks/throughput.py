"""How close agentsim drives an inference server to its capacity, and what each call costs
the client, through the OpenAI backend (the real SDK's request over real HTTP).

The stand-in server (backends/standin_server.py) runs in its own process as a simulated
inference server: capacity C 32 requests at once, 100 ms per request, so at most
C / service time = 320 requests per second. The naming game with N 200 drives it (the sequence
of random pairs, up to 100 encounters in flight, the limiter's cap at 2C so the server's queue
does not run dry while the client waits for the CPU). Printed:

- achieved requests per second, as a fraction of C / service time (target >= 0.9);
- client CPU milliseconds per call: this process's CPU time (engine, store, cache, limiter,
  retries, the SDK, HTTP) divided by calls; the server's CPU is in its own process and not
  counted (target <= 1 ms);
- a second run with 20% of requests answered 429: the run completes with nothing lost
  (every interaction recorded once, every decision answered, no fallback), with its
  retries, requests per second and the limiter's trajectory;
- a reference run through the TGI backend, which is agentsim's own stack on a plain aiohttp
  session with no SDK.

`--only scheduler` (also run by default) measures the scheduler with the flags a user gets (no
--max-in-flight, the scenario's own max_in_flight): the naming game at N 24, 200 and 1000
through the same server, on the TGI and the OpenAI-compatible path, every encounter's pair
drawn as the one-at-a-time process draws it. It prints the concurrency achieved (encounters
done x service time / wall: how many unqueued encounters ran at once, on average) against two
ceilings: the width of the run's dependency graph (the exact process's ceiling: the same
figure for an ideal run in which every encounter takes the service time and starts the moment
the previous encounter of each of its agents has finished; computed from the run's own
recorded sequence) and the server's capacity (requests per second against C / service time,
and against a bare aiohttp client on this host now). Targets: at least 0.9 of the width at
N 24 (the population, not the server, is the limit there), at least 0.9 of the capacity at
N 200 and 1000. The limiter's cap, from its default to where it ended, is printed beside.

`--only stop`: calls asked after the stop rule fired, as a share of the run's calls (runs to
consensus at N 24 and 200, to a flip at N 1000; target at most 2%).

`--only client`: CPU per call on the TGI, the lean OpenAI-compatible (llm/openai_http.py) and
the SDK path against a server of capacity 1024 and 10 ms, and requests per second against a
bare aiohttp client replaying the very requests the run sent.

`--only startup`: seconds from the command to the first request the server sees, and the CPU
seconds the process had used by then (less sensitive to the host's load; Linux's /proc).

Every section prints the host's load average beside its figures.

The OpenAI backend's calls go through the SDK's public API
(`chat.completions.with_raw_response.create`); the TGI run's client CPU against it is what the
SDK costs per call.

    python benchmarks/throughput.py [--agents 200] [--rounds 10] [--capacity 32] [--service-time 0.1]
                                    [--only openai|429|tgi|scheduler]
    python benchmarks/throughput.py --server llama [--llama-server PATH] [--threads T] [--repeat 5]   # llama_throughput.py

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

from agentsim import event_loop
from agentsim.games.naming import NamingGame
from agentsim.llm import wire
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

    event_loop.run(once())


def run_once(url: str, *, agents: int, rounds: int, cap: int | None, out: Path, cache: Path | None,
             provider: str = "openai", max_in_flight: int | None = None, stop_at: str = "none") -> dict[str, Any]:
    """One run; `cap` and `max_in_flight` None: the defaults a user gets."""
    spec = f"openai:stand-in-model@{url}/v1" if provider == "openai" else f"tgi:{url}"
    scenario = NamingGame(agents=agents, pool_size=10, max_rounds=rounds, stop_at=stop_at)
    if max_in_flight is not None:
        scenario = scenario.with_params(max_in_flight=max_in_flight)
    options = BackendOptions(limits=Limits() if cap is None else Limits(max_in_flight=cap), cache=cache is not None,
                             cache_path=cache, retry=RetryPolicy(max_attempts=20, base_s=0.05, cap_s=2.0), timeout_s=30)
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, backend=spec, seed=1, llm=options), _Quiet())
    experiment.open()
    limiter = layer(experiment.backends[spec], LimitedModel)
    cpu, wall = time.process_time(), time.perf_counter()
    event_loop.run(experiment.run())
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    summary = json.loads((out / "summary.json").read_text())
    (run,) = summary["runs"]
    connection = sqlite3.connect(out / "agentsim.db")
    times = [t for (t,) in connection.execute("SELECT t FROM encounters WHERE run = 1 ORDER BY t")]
    unanswered = connection.execute("SELECT COUNT(*) FROM moves m WHERE NOT EXISTS (SELECT 1 FROM calls c WHERE "
                                     "c.run = m.run AND c.t = m.t AND c.agent = m.agent AND c.error IS NULL)").fetchone()[0]
    connection.close()
    return {"run": run, "wall": wall, "cpu": cpu, "times_ok": times == list(range(len(times))),
            "unanswered": unanswered, "limiter": limiter}


def report(label: str, result: dict[str, Any], capacity: int, service_time: float, requests: int) -> None:
    run, wall, cpu = result["run"], result["wall"], result["cpu"]
    calls = run["calls"]
    ceiling = capacity / service_time
    print(f"{label}:")
    print(f"  {run['interactions']} interactions, {calls} answered calls, {requests} requests reached the server, "
          f"{wall:.2f} s")
    print(f"  throughput: {requests / wall:.0f} requests/s = {requests / wall / ceiling:.2f} of capacity "
          f"({capacity} / {service_time:g} s = {ceiling:.0f}/s); answered calls {calls / wall:.0f}/s = "
          f"{calls / wall / ceiling:.2f} of capacity (a 429 takes no service time, answered calls do)")
    print(f"  client CPU: {cpu * 1e3 / calls:.2f} ms per answered call ({cpu:.2f} s in all)")
    usage = next(iter(run["usage_by_backend"].values()))
    print(f"  latency per call (queue at the server included): p50 {usage['latency_p50_s'] * 1e3:.0f} ms, "
          f"p95 {usage['latency_p95_s'] * 1e3:.0f} ms")
    print(f"  retries {run['retries']}, errors {run['errors']}, fallbacks {run['fallbacks']}, "
          f"interactions recorded once each in order: {result['times_ok']}, unanswered decisions: {result['unanswered']}")
    limiter: LimitedModel = result["limiter"]
    trajectory = limiter.trajectory
    start = trajectory[0][0]
    points = ", ".join(f"{t - start:.1f}s:{limit:.0f}" for t, limit in trajectory[:: max(1, len(trajectory) // 12)])
    print(f"  limiter: cap {limiter.limits.max_in_flight}, most in flight {limiter.max_seen}, lowest "
          f"{min(limit for _, limit in trajectory):.1f}, final {limiter.limit:.1f}, changes {len(trajectory) - 1}"
          f" [{points}]")


def dependency_width(database: Path, service_time: float) -> tuple[float, int]:
    """The width of the recorded sequence's dependency graph, and its encounters: the mean
    number of encounters in flight in an ideal run where every encounter takes `service_time`
    and starts the moment the previous encounter of each of its agents has finished (no cap,
    no window, no server limit)."""
    connection = sqlite3.connect(database)
    agents_at: dict[int, set[int]] = {}
    for t, agent in connection.execute("SELECT DISTINCT t, agent FROM decisions WHERE run = 1 ORDER BY t"):
        agents_at.setdefault(t, set()).add(agent)
    connection.close()
    free_at: dict[int, float] = {}  # by agent: when its latest encounter finishes
    makespan = 0.0
    for t in sorted(agents_at):
        finish = max(free_at.get(agent, 0.0) for agent in agents_at[t]) + service_time
        for agent in agents_at[t]:
            free_at[agent] = finish
        makespan = max(makespan, finish)
    return len(agents_at) * service_time / makespan, len(agents_at)


def bare_client_rate(url: str, concurrency: int, seconds: float = 5.0) -> float:
    """Requests per second a bare aiohttp client keeping `concurrency` requests open gets
    from the server: its capacity as this host delivers it right now (a loaded host's timers
    and scheduling make 100 ms sleeps longer)."""
    import aiohttp

    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 4}

    async def hammer() -> float:
        done = 0
        async with aiohttp.ClientSession() as session:
            end = time.perf_counter() + seconds

            async def worker() -> None:
                nonlocal done
                while time.perf_counter() < end:
                    async with session.post(url + "/v1/chat/completions", json=body) as response:
                        await response.read()
                    done += 1

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return done / (time.perf_counter() - started)

    return event_loop.run(hammer())


def scheduler_figures(url: str, options: argparse.Namespace, scratch: Path) -> None:
    """The naming game at N 24, 200 and 1000 with the flags a user gets (no --max-in-flight,
    the scenario's own max_in_flight), on the TGI and the OpenAI-compatible path."""
    service, capacity = options.service_time, options.capacity
    ceiling = capacity / service
    measured = bare_client_rate(url, 2 * capacity)
    print(f"scheduler, default flags: the sequence of random pairs against the server (C {capacity}, {service:g} s: "
          f"{ceiling:.0f}/s; a bare aiohttp client with {2 * capacity} open gets {measured:.0f}/s = "
          f"{measured / ceiling:.2f} on this host now; load average {load_average()})")
    print("  path        N  encounters  wall s  requests/s  of capacity  of bare client  achieved  width  of width  cap")
    for provider in ("tgi", "openai"):
        for agents, rounds in ((24, 40), (200, 20), (1000, 4)):  # 480, 2000 and 2000 encounters
            out = scratch / f"scheduler-{provider}-{agents}"
            before = server_requests(url)
            result = run_once(url, agents=agents, rounds=rounds, cap=None, out=out, cache=None, provider=provider)
            requests = server_requests(url) - before
            width, encounters = dependency_width(out / "agentsim.db", service)
            achieved = encounters * service / result["wall"]
            rate = requests / result["wall"]
            limiter: LimitedModel = result["limiter"]
            print(f"  {provider:6s}  {agents:5d}  {encounters:10d}  {result['wall']:6.2f}  {rate:10.0f}  "
                  f"{rate / ceiling:11.2f}  {rate / measured:14.2f}  {achieved:8.1f}  {width:5.1f}  "
                  f"{achieved / width:8.2f}  {limiter.limits.max_in_flight}->{limiter.limit:.0f}")


def stop_figures(url: str, scratch: Path) -> None:
    """Calls asked after the stop rule fired, as a share of the run's calls: runs to consensus
    at N 24 and 200, and to a flip at N 1000 (a committed quarter), default flags."""
    print(f"exact stop: calls asked after the stop rule fired (load average {load_average()})")
    print("  setting                 stopped at t  calls  after the stop  share")
    settings = (("N 24, consensus", dict(agents=24, pool_size=10, stop_at="consensus", max_rounds=400)),
                ("N 200, consensus", dict(agents=200, pool_size=10, stop_at="consensus", max_rounds=400)),
                ("N 1000, flip", dict(agents=1000, names=("Q", "M"), memory_length=5, majority_name="M",
                                      committed_name="Q", committed=250, stop_at="flip", max_rounds=100)))
    for label, params in settings:
        out = scratch / f"stop-{label.split(',')[0].replace(' ', '')}"
        spec = f"tgi:{url}"
        experiment = Experiment(ExperimentConfig(scenario=NamingGame(**params), out=out, backend=spec, seed=1,
                                                 llm=BackendOptions(cache=False)), _Quiet())
        experiment.open()
        event_loop.run(experiment.run())
        (run,) = json.loads((out / "summary.json").read_text())["runs"]
        connection = sqlite3.connect(out / "agentsim.db")
        (recorded,) = connection.execute("SELECT COUNT(*) FROM calls WHERE run = 1 AND t < ?",
                                         (run["interactions"],)).fetchone()
        connection.close()
        calls = run["calls"]
        print(f"  {label:22s}  {run['interactions'] - 1:12d}  {calls:5d}  {calls - recorded:14d}  "
              f"{(calls - recorded) / calls:5.1%}   ({run['stop_reason']})")


class Recording:
    """The provider at the bottom of the stack, keeping every request it is sent (for the bare
    client's replay)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.immediate, self.requests = inner, inner.name, False, []
        self.endpoint = getattr(inner, "endpoint", "")
        self.sent: list[float] = []

    async def complete(self, request: Any) -> Any:
        self.requests.append(request)
        self.sent.append(time.perf_counter())
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def sustained_rate(sent: list[float], share: float = 0.9) -> float:
    """Requests per second over the middle `share` of the requests (by when they were sent):
    the rate a client sustains, without its start (store, probe) and its tail (the last calls
    in flight draining), which a replay of ready-made bodies does not have."""
    times = sorted(sent)
    low, high = int(len(times) * (1 - share) / 2), int(len(times) * (1 + share) / 2) - 1
    return (high - low) / (times[high] - times[low]) if high > low and times[high] > times[low] else float("nan")


def client_figures(options: argparse.Namespace, scratch: Path) -> None:
    """CPU per call on each path against a fast server (capacity 1024, 10 ms), default flags,
    and the rate one agentsim process sustains against a bare aiohttp client replaying the very
    requests the run sent (each path's own bodies, built beforehand), as many at once as the
    run had in flight. Both rates are over the middle 90% of the requests (`sustained_rate`):
    the run's start (store, start-up probe) and its drain are the run's, not a per-call cost,
    and `--only startup` times the start. The last two columns split agentsim's CPU per call:
    the engine's share (less the bare client's, the same HTTP work) and the most it could be for
    agentsim to reach 0.9 of the bare client on the one core a process gets. N 1000 and 20
    rounds unless --agents/--rounds given."""
    from agentsim.llm.health import BackendGuard
    from agentsim.llm.openai_backend import OpenAIModel
    from agentsim.llm.openai_http import OpenAIHTTPModel
    from agentsim.llm.tgi import TGIModel

    agents = options.agents if "--agents" in sys.argv else 1000
    rounds = options.rounds if "--rounds" in sys.argv else 20
    server, url = start_server(1024, 0.01, [])
    try:
        warm_up(url)
        print(f"client cost against a server of capacity 1024, 10 ms (at most 102400/s; on this host the server's "
              f"own CPU is the limit), N {agents}, {rounds} rounds, default flags, agentsim and the bare client both on "
              f"{event_loop.loop_name()}'s event loop; load average {load_average()}")
        print("  path              calls  wall s  requests/s  sustained/s  CPU ms/call  bare sustained/s  "
              "bare CPU ms/call  agentsim/bare  most in flight  engine ms/call  engine ms/call for 0.9")
        for path in ("tgi", "openai-lean", "openai-sdk"):
            provider = "tgi" if path == "tgi" else "openai"
            spec = f"openai:stand-in-model@{url}/v1" if provider == "openai" else f"tgi:{url}"
            scenario = NamingGame(agents=agents, pool_size=10, max_rounds=rounds, stop_at="none")
            out = scratch / f"client-{path}"
            experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, backend=spec, seed=1,
                                                     llm=BackendOptions(cache=False)), _Quiet())
            experiment.open()
            guard = layer(experiment.backends[spec], BackendGuard)
            assert isinstance(guard, BackendGuard)
            if path == "openai-sdk":  # the SDK's path, as OpenAI's own API gets it
                guard.inner = OpenAIModel(name=spec, model="stand-in-model", api_key="EMPTY", base_url=url + "/v1")
            provider_model = guard.inner
            recording = Recording(provider_model)
            guard.inner = recording
            limiter = layer(experiment.backends[spec], LimitedModel)
            assert isinstance(limiter, LimitedModel)
            before = server_requests(url)
            cpu, wall = time.process_time(), time.perf_counter()
            event_loop.run(experiment.run())
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            requests = server_requests(url) - before
            in_flight = max(1, limiter.max_seen)
            if isinstance(provider_model, TGIModel):
                style = provider_model.style or "plain"
                target = url + "/generate"
                bodies = [wire.encode(provider_model.payload(request, style)) for request in recording.requests]
            else:
                lean = OpenAIHTTPModel(name=spec, model="stand-in-model", api_key="EMPTY", base_url=url + "/v1")
                target, bodies = lean.url, [wire.encode(lean.body(request)) for request in recording.requests]
            bare_rate, bare_cpu = replay(target, bodies, in_flight)
            rate = sustained_rate(recording.sent)
            # The engine's share: agentsim's CPU per call less the bare client's (the same HTTP
            # work); and what 0.9 of the bare client's rate would leave it, one core being all
            # one process gets.
            engine, engine_for_target = cpu / requests - bare_cpu, 1 / (0.9 * bare_rate) - bare_cpu
            print(f"  {path:14s}  {requests:7d}  {wall:6.2f}  {requests / wall:10.0f}  {rate:11.0f}  "
                  f"{cpu * 1e3 / requests:11.2f}  {bare_rate:16.0f}  {bare_cpu * 1e3:16.2f}  {rate / bare_rate:13.2f}  "
                  f"{in_flight:14d}  {engine * 1e3:14.3f}  {engine_for_target * 1e3:22.3f}")
    finally:
        server.terminate()
        server.wait(10)


def replay(url: str, bodies: list[bytes], concurrency: int) -> tuple[float, float]:
    """A bare aiohttp client posting `bodies` with `concurrency` open: the requests per second
    it sustains (`sustained_rate`) and its CPU seconds per request."""
    import aiohttp

    sent: list[float] = []

    async def post_all() -> None:
        headers = {"Content-Type": "application/json", "Authorization": "Bearer EMPTY"}
        left = iter(bodies)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency), headers=headers) as session:

            async def worker() -> None:
                for body in left:
                    sent.append(time.perf_counter())
                    async with session.post(url, data=body) as response:
                        json.loads(await response.read())

            await asyncio.gather(*(worker() for _ in range(concurrency)))

    cpu = time.process_time()
    event_loop.run(post_all())
    return sustained_rate(sent), (time.process_time() - cpu) / len(bodies)


def startup_figures(scratch: Path, repeat: int = 3) -> None:
    """Seconds from the command (`python -m agentsim scenarios/naming_game.py --backend tgi:URL`)
    to the server's first request (the start-up probe), and to the end of a 2-round run at N 24;
    the host's load beside them (start-up is mostly imports: mesa, with pandas and scipy)."""
    import os

    server, url = start_server(32, 0.1, [])
    try:
        print(f"start-up: the command to the first request the server sees (load average {load_average()})")
        for attempt in range(repeat):
            before = server_requests(url)
            out = scratch / f"startup-{attempt}"
            command = [sys.executable, "-m", "agentsim", str(ROOT / "scenarios" / "naming_game.py"), "--backend",
                       f"tgi:{url}", "--no-live", "--no-cache", "--out", str(out), "--set", "agents=24",
                       "--set", "max_rounds=2", "--set", "stop_at=none"]
            started = time.perf_counter()
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       env={**os.environ, "PYTHONPATH": str(ROOT)})
            first, cpu = None, None
            while process.poll() is None:
                if first is None and server_requests(url) > before:
                    first, cpu = time.perf_counter() - started, process_cpu_seconds(process.pid)
                time.sleep(0.005)
            ended = time.perf_counter() - started
            print(f"  first request after {first if first is not None else float('nan'):.2f} s "
                  f"({cpu if cpu is not None else float('nan'):.2f} s of CPU), "
                  f"the run done after {ended:.2f} s (exit {process.returncode}); load average {load_average()}")
    finally:
        server.terminate()
        server.wait(10)


def load_average() -> str:
    import os

    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def process_cpu_seconds(pid: int) -> float | None:
    """Another process's CPU time (user + system), from /proc on Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        import os

        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


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
    parser.add_argument("--cap", type=int, default=64,
                        help="agentsim's in-flight cap (default 64: 2C, so the server's queue does not run dry)")
    parser.add_argument("--no-cache", action="store_true", help="leave the response cache out of the stack")
    parser.add_argument("--only", choices=["openai", "429", "tgi", "scheduler", "stop", "client", "startup"],
                        default=None,
                        help="run one setting only; scheduler: the concurrency figures at N 24, 200 and 1000")
    parser.add_argument("--server", choices=["standin", "llama"], default="standin",
                        help="llama: agentsim against llama.cpp's llama-server on SmolLM2 with 1, 2 and 4 slots "
                             "(benchmarks/llama_throughput.py; N 48 and 2 rounds unless given: more encounters ready than slots)")
    parser.add_argument("--llama-server", default=None, help="the llama-server binary (default: backends/llamacpp/.build)")
    parser.add_argument("--threads", type=int, default=None, help="llama-server's CPU threads (default: all cores)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="llama: runs per setting, each agentsim then two plain clients replaying its requests "
                             "(at its mean in flight in any order; in the exact process's order at its cap); the "
                             "median ratios and their spreads are printed")
    options = parser.parse_args()
    if options.server == "llama":
        import llama_throughput

        if "--agents" not in sys.argv:
            options.agents = 48
        if "--rounds" not in sys.argv:
            options.rounds = 2
        options.llama_server = options.llama_server or str(llama_throughput.DEFAULT_SERVER)
        llama_throughput.main(options)
        return
    print(f"N {options.agents}, {options.rounds} population rounds, server capacity {options.capacity}, "
          f"service {options.service_time:g} s, agentsim cap {options.cap}, cache {'off' if options.no_cache else 'on'}")
    settings = [("openai", "OpenAI backend, clean", "openai", []),
                ("429", "OpenAI backend, 20% of requests answered 429", "openai", ["429=0.2"]),
                ("tgi", "reference: TGI backend (our stack on plain aiohttp, no SDK), clean", "tgi", [])]
    with tempfile.TemporaryDirectory() as scratch:
        for number, (name, label, provider, faults) in enumerate(settings):
            if options.only and options.only != name:
                continue
            server, url = start_server(options.capacity, options.service_time, faults)
            try:
                warm_up(url)
                before = process_cpu_seconds(server.pid)
                cache = None if options.no_cache else Path(scratch) / f"cache-{number}.db"
                result = run_once(url, agents=options.agents, rounds=options.rounds, cap=options.cap,
                                  out=Path(scratch) / f"out-{number}", cache=cache, provider=provider)
                requests = server_requests(url)
                report(label, result, options.capacity, options.service_time, requests)
                after = process_cpu_seconds(server.pid)
                if before is not None and after is not None:
                    print(f"  server CPU (its own process): {(after - before) * 1e3 / requests:.2f} ms per request")
            finally:
                server.terminate()
                server.wait(10)
        if options.only in (None, "startup"):
            startup_figures(Path(scratch))
        if options.only in (None, "client"):
            client_figures(options, Path(scratch))
        if options.only in (None, "scheduler", "stop"):
            server, url = start_server(options.capacity, options.service_time if options.only != "stop" else 0.0, [])
            try:
                warm_up(url)
                if options.only != "stop":
                    scheduler_figures(url, options, Path(scratch))
                if options.only in (None, "stop"):
                    stop_figures(url, Path(scratch))
            finally:
                server.terminate()
                server.wait(10)


if __name__ == "__main__":
    main()
