"""`benchmarks/throughput.py --server llama`: agentsim against llama.cpp's `llama-server`
serving SmolLM2-135M-Instruct on the CPU, with 1, 2 and 4 slots (`--parallel`).

For each slot count: agentsim runs the naming game (constrained decoding, no response cache,
so every call reaches the server) with its adaptive limiter allowed up to 4x the slots, and
every request body it sends is kept; then, on a freshly started server, a plain aiohttp client
sends the very same bodies (prompts, sampling, seeds, grammar) keeping as many requests open as
agentsim kept on average (its time-weighted mean in flight, rounded): both ask the server for
the same work at the same load, so the ratio measures agentsim's overhead, not a difference in
how much the server is given to batch (a plain client at `slots` in flight against agentsim at
up to 4x would measure the baseline). Printed per run: both rates and the ratio; per setting:
the median ratio and its spread (min-max) over `--repeat` runs (default 5), and where the
limiter settled. Build the server first: `backends/llamacpp/launch.sh build`. Prints figures;
asserts nothing timed.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from agentsim import event_loop
from agentsim.games.naming import NamingGame
from agentsim.llm.base import Request
from agentsim.llm.limiter import LimitedModel, Limits
from agentsim.llm.llamacpp import smollm2_path
from agentsim.llm.openai_http import OpenAIHTTPModel
from agentsim.llm.retries import RetryPolicy
from agentsim.llm.specs import BackendOptions
from agentsim.llm.stack import layer
from agentsim.runner import Experiment, ExperimentConfig

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SERVER = ROOT / "backends" / "llamacpp" / ".build" / "bin" / "llama-server"


class _Quiet:
    def start(self, experiment: dict[str, object]) -> None: ...
    def update(self, runs: list[object], *, final: bool = False) -> None: ...
    def stop(self) -> None: ...


def start_llama_server(binary: Path, slots: int, threads: int, port: int) -> subprocess.Popen[bytes]:
    command = [str(binary), "--model", str(smollm2_path()), "--alias", "smollm2", "--host", "127.0.0.1",
               "--port", str(port), "--parallel", str(slots), "--ctx-size", str(slots * 2048),
               "--threads", str(threads), "--threads-batch", str(threads), "--cont-batching", "--no-webui"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:  # loopback only
                if response.status == 200:
                    return server
        except OSError:
            if server.poll() is not None:
                break
        time.sleep(0.5)
    server.kill()
    raise SystemExit(f"llama-server did not start ({binary})")


def naming_game(agents: int, rounds: int) -> NamingGame:
    return NamingGame(agents=agents, names=("Q", "M"), max_rounds=rounds, stop_at="none", constrained_decoding=True,
                      max_in_flight=agents // 2)


def plain_client(url: str, concurrency: int, bodies: list[dict[str, Any]]) -> tuple[float, float]:
    """Requests/s and generated tokens/s of a bare aiohttp client keeping `concurrency` requests
    open, sending `bodies`: the very requests agentsim sent (prompts, sampling, seeds, grammar),
    so the server does the same work for both."""
    import aiohttp

    async def hammer() -> tuple[float, float]:
        tokens = 0
        queue = list(reversed(bodies))
        async with aiohttp.ClientSession() as session:

            async def worker() -> None:
                nonlocal tokens
                while queue:
                    body = queue.pop()
                    async with session.post(url + "/chat/completions", json=body) as response:
                        answer = await response.json()
                    tokens += int(answer["usage"]["completion_tokens"])

            started = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            wall = time.perf_counter() - started
        return len(bodies) / wall, tokens / wall

    return event_loop.run(hammer())


def agentsim_run(url: str, *, slots: int, agents: int, rounds: int, out: Path) -> dict[str, Any]:
    """The naming game through the OpenAI backend (its lean path, as for any local server), no
    response cache; every request body is kept."""
    spec = f"openai:smollm2@{url}"
    options = BackendOptions(limits=Limits(max_in_flight=4 * slots), cache=False, timeout_s=120,
                             retry=RetryPolicy(max_attempts=4))
    experiment = Experiment(ExperimentConfig(scenario=naming_game(agents, rounds), out=out, backend=spec, seed=1,
                                             llm=options), _Quiet())
    experiment.open()
    limiter = layer(experiment.backends[spec], LimitedModel)
    backend = layer(experiment.backends[spec], OpenAIHTTPModel)  # a local server: the lean path
    assert isinstance(backend, OpenAIHTTPModel) and isinstance(limiter, LimitedModel)
    bodies: list[dict[str, Any]] = []
    build = backend.body

    def recorded(request: Request) -> dict[str, Any]:
        body = build(request)
        if request.options:  # not the start-up probe
            bodies.append(body)
        return body

    backend.body = recorded  # type: ignore[method-assign]
    wall = time.perf_counter()
    event_loop.run(experiment.run())
    wall = time.perf_counter() - wall
    settled = {"mean_in_flight": limiter.mean_in_flight(), "median_cap": median_cap(limiter)}  # at the run's end
    (run,) = json.loads((out / "summary.json").read_text())["runs"]
    usage = run["usage_by_backend"][spec]
    return {"calls": usage["calls"], "tokens": usage["completion_tokens"], "wall": wall, "limiter": limiter, **settled,
            "invalid": usage["invalid_replies"], "fallbacks": usage["fallbacks"], "bodies": bodies}


def main(options: Any) -> None:
    binary = Path(options.llama_server)
    if not binary.is_file():
        raise SystemExit(f"no llama-server at {binary}: run backends/llamacpp/launch.sh build (or --llama-server PATH)")
    threads = options.threads or os.cpu_count() or 1
    print(f"llama-server ({binary}), SmolLM2-135M-Instruct Q4_1, {threads} threads; naming game N {options.agents}, "
          f"{options.rounds} rounds, constrained decoding, no response cache")
    repeat = max(1, getattr(options, "repeat", 5))
    print(f"each setting {repeat} times, agentsim then the plain client at agentsim's mean in flight, each on a freshly "
          f"started server: the median ratio and its spread")
    with tempfile.TemporaryDirectory() as scratch:
        for slots in (1, 2, 4):
            port = _free_port()
            url = f"http://127.0.0.1:{port}/v1"
            ratios: list[float] = []
            for attempt in range(repeat):
                server = start_llama_server(binary, slots, threads, port)
                try:
                    result = agentsim_run(url, slots=slots, agents=options.agents, rounds=options.rounds,
                                          out=Path(scratch) / f"slots-{slots}-{attempt}")
                finally:
                    server.terminate()
                    server.wait(10)
                in_flight = max(1, round(result["mean_in_flight"]))
                server = start_llama_server(binary, slots, threads, port)  # the same cold start for the plain client
                try:
                    requests, tokens = plain_client(url, in_flight, result["bodies"])
                finally:
                    server.terminate()
                    server.wait(10)
                rate = result["calls"] / result["wall"]
                ratios.append(rate / requests)
                limiter = result["limiter"]
                print(f"  {slots} slot(s), run {attempt + 1}: agentsim {rate:.2f} requests/s "
                      f"({result['calls']} calls in {result['wall']:.1f} s, {result['tokens'] / result['wall']:.1f} "
                      f"tokens/s, invalid {result['invalid']}, fallbacks {result['fallbacks']}), plain client at "
                      f"{in_flight} in flight {requests:.2f} requests/s ({tokens:.1f} tokens/s): ratio {ratios[-1]:.2f}; "
                      f"limiter: cap {4 * slots}, most in flight {limiter.max_seen}, final {limiter.limit:.1f}, mean "
                      f"in flight {result['mean_in_flight']:.2f}, median cap over the second half "
                      f"{result['median_cap']}, latency cuts {limiter.queueing.cuts if limiter.queueing else 0}")
            ordered = sorted(ratios)
            print(f"{slots} slot(s): agentsim / plain client at equal requests in flight: median "
                  f"{statistics.median(ordered):.2f}, spread {ordered[0]:.2f}-{ordered[-1]:.2f} over {len(ordered)} runs")


def median_cap(limiter: LimitedModel) -> int:
    """The cap the limiter held most of the second half of the run (time-weighted median): where it settled."""
    spans = limiter.cap_spans(0.5)
    passed, total = 0.0, sum(seconds for _, seconds in spans)
    for value, seconds in sorted(spans):
        passed += seconds
        if passed >= total / 2:
            return value
    return int(limiter.limit)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
