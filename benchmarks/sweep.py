"""Local vs Ray: the wall time of a sweep of 32 runs against the stand-in server, and what
the Ray executor costs per run.

The stand-in server (backends/standin_server.py, its own process) plays an inference server:
capacity 64 requests at once, 20 ms each. The sweep is the naming game (24 agents, 5 rounds,
no early stop: 60 encounters, 120 calls a run) through the OpenAI backend, 32 runs, with
the response cache off so every call reaches the server. Printed, on this machine:

- local: `--runs 32`, every run in this process's event loop;
- Ray start-up: `ray.init` of a local Ray (paid once per sweep by the command line);
- Ray, 1 CPU per run: each run a Ray task holding a core, so runs go a core's worth at a time;
- Ray, `--cpus-per-run 0.125`: eight runs per core, for runs that mostly wait on a server;
- the overhead per run: 32 runs that do almost nothing (2 agents, 1 round, the in-process
  stand-in), Ray minus local, per run: the task, the worker's set-up (unpickling the
  plan, building the backends) and the records' trip back to the driver; and that
  overhead times the cores (what a run costs a worker);
- what the cluster-wide limiter adds to each call: an awaited grant and an end, to an actor;
- that the Ray sweep recorded the same moves as the local one.

    python benchmarks/sweep.py [--runs 32] [--cpus 2] [--service-time 0.02] [--capacity 64]

Timings on a shared host swing from run to run; each setting is timed once. Prints figures;
asserts nothing timed.
"""

from __future__ import annotations

import argparse
import os
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
from agentsim.llm.limiter import Limits
from agentsim.llm.specs import BackendOptions
from agentsim.runner import Experiment, ExperimentConfig

ROOT = Path(__file__).resolve().parent.parent


class Quiet:
    def start(self, experiment: dict[str, Any]) -> None: ...
    def update(self, runs: list[Any], *, final: bool = False) -> None: ...
    def stop(self) -> None: ...


def start_server(capacity: int, service_time: float) -> tuple[subprocess.Popen[str], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = subprocess.Popen([sys.executable, str(ROOT / "backends" / "standin_server.py"), "--port", str(port),
                               "--capacity", str(capacity), "--service-time", str(service_time)],
                              stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline() if server.stdout else ""
    if "stand-in server on" not in line:
        server.kill()
        raise SystemExit(f"the stand-in server did not start: {line!r}")
    return server, f"http://127.0.0.1:{port}"


def sweep(out: Path, scenario: NamingGame, *, runs: int, backend: str, executor: str, cpus_per_run: float = 1.0,
          max_in_flight: int = 64) -> float:
    """Wall seconds of one experiment, from opening its directory to its summary."""
    started = time.perf_counter()
    experiment = Experiment(ExperimentConfig(
        scenario=scenario, out=out, runs=runs, backend=backend, executor=executor, cpus_per_run=cpus_per_run,
        llm=BackendOptions(cache=False, limits=Limits(max_in_flight=max_in_flight))), Quiet())
    experiment.open()
    event_loop.run(experiment.run())
    return time.perf_counter() - started


async def limiter_round_trip(ray: Any, calls: int = 500) -> float:
    """Seconds per call that the cluster-wide limiter adds: one awaited grant and one end."""
    from agentsim.distributed.limits import ANSWERED, ClusterLimiter

    limiter = ray.remote(ClusterLimiter).options(num_cpus=0, max_concurrency=1000).remote({"m": Limits()})
    await limiter.stats.remote()  # started
    started = time.perf_counter()
    for call in range(calls):
        await limiter.acquire.remote("m", str(call), "benchmark", 0)
        limiter.release.remote(str(call), (ANSWERED, {}))
    await limiter.stats.remote()  # every end handled
    elapsed = (time.perf_counter() - started) / calls
    ray.kill(limiter)
    return elapsed


def moves(out: Path) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(out / "agentsim.db")
    try:
        return list(connection.execute("SELECT * FROM moves ORDER BY run, t, agent"))
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2, help="the local Ray's CPUs (default: every core)")
    parser.add_argument("--service-time", type=float, default=0.02)
    parser.add_argument("--capacity", type=int, default=64)
    options = parser.parse_args()
    import ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    server, url = start_server(options.capacity, options.service_time)
    backend = f"openai:stand-in@{url}/v1"
    work = NamingGame(agents=24, pool_size=10, memory_length=5, max_rounds=5, stop_at="none")
    empty = NamingGame(agents=2, pool_size=2, memory_length=1, max_rounds=1, stop_at="none")
    runs = options.runs
    try:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            sweep(root / "warm", work, runs=1, backend=backend, executor="local")  # the SDK's first-call imports
            local = sweep(root / "local", work, runs=runs, backend=backend, executor="local")
            started = time.perf_counter()
            ray.init(num_cpus=options.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
            start_up = time.perf_counter() - started
            sweep(root / "ray-warm", empty, runs=options.cpus, backend="stand-in", executor="ray")  # workers started
            one_cpu = sweep(root / "ray", work, runs=runs, backend=backend, executor="ray")
            shared = sweep(root / "ray-shared", work, runs=runs, backend=backend, executor="ray", cpus_per_run=0.125)
            same = moves(root / "ray") == moves(root / "local") == moves(root / "ray-shared")
            empty_local = sweep(root / "empty-local", empty, runs=runs, backend="stand-in", executor="local")
            empty_ray = sweep(root / "empty-ray", empty, runs=runs, backend="stand-in", executor="ray")
            admission = event_loop.run(limiter_round_trip(ray))
            ray.shutdown()
    finally:
        server.terminate()
        server.wait(10)
    calls = runs * 60 * 2
    print(f"{runs} runs x 120 calls against the stand-in server ({options.capacity} at once, "
          f"{options.service_time * 1000:.0f} ms a call), {options.cpus} CPUs")
    print(f"  local (one event loop)          {local:6.2f} s   {calls / local:7.0f} calls/s   1.00 x local")
    print(f"  Ray, 1 CPU per run              {one_cpu:6.2f} s   {calls / one_cpu:7.0f} calls/s   "
          f"{one_cpu / local:.2f} x local")
    print(f"  Ray, --cpus-per-run 0.125       {shared:6.2f} s   {calls / shared:7.0f} calls/s   "
          f"{shared / local:.2f} x local")
    print(f"  Ray start-up (ray.init, once)   {start_up:6.2f} s")
    print(f"  same moves on Ray as local: {'yes' if same else 'NO'}")
    overhead = (empty_ray - empty_local) / runs
    print(f"overhead per run ({runs} near-empty runs: 2 agents, 1 round): local {empty_local:.2f} s, "
          f"Ray {empty_ray:.2f} s")
    print(f"  {overhead * 1000:.0f} ms of wall time per run, {overhead * options.cpus * 1000:.0f} ms of a worker's "
          f"time per run ({options.cpus} running at once)")
    print(f"cluster limiter: {admission * 1e6:.0f} µs per call (a grant awaited, an end sent), one caller at a time")


if __name__ == "__main__":
    main()
