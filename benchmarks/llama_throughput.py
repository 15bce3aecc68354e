"""`benchmarks/throughput.py --server llama`: agentsim against llama.cpp's `llama-server`
serving SmolLM2-135M-Instruct on the CPU, with 1, 2 and 4 slots (`--parallel`).

For each slot count: agentsim runs the naming game (constrained decoding, no response cache,
so every call reaches the server) with its adaptive limiter allowed up to 4x the slots, and
every request body it sends is kept; then, on a freshly started server, a plain aiohttp client
sends the very same bodies (prompts, sampling, seeds, grammar) keeping as many requests open as
agentsim kept on average (its time-weighted mean in flight, rounded): both ask the server for
the same work at the same load (a plain client at `slots` in flight against agentsim at up to
4x would measure the baseline).

That plain client sends the bodies in any order it likes, as fast as the server takes them,
which the exact process cannot: encounter t waits for every earlier encounter of its agents
(their memories are in its prompts), and at N 48 that chain, not the server, leaves the slots
idle in stretches (a traced run had 1-3 calls in flight for its last 12 seconds while the
limiter allowed 7-15). So each run is also replayed by an exact-process client: plain aiohttp
again, the same bodies, but each encounter sent only once every earlier encounter of its two
agents has its answers, as many encounters at once as the run's scenario allows and as many
calls open as agentsim's limiter held for most of the run (its time-weighted median cap). That
is what the exact process gets from this server at agentsim's load with no engine at all, so
agentsim / exact-process client is agentsim's own cost; agentsim / plain client adds what the
process's order costs. (Held at the limiter's ceiling instead, 4x the slots, it is no upper
bound: with 4 slots it reached 2.7-3.8 requests/s at 16 open, 3.7-4.2 at 4-8.)

Printed per run: the three rates and both ratios; per setting: the median ratios and their
spread (min-max) over `--repeat` runs (default 5), and where the limiter settled. Build the
server first: `backends/llamacpp/launch.sh build`. Prints figures; asserts nothing timed.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import os
import sqlite3
import statistics
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
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
from agentsim.policies import LLMPolicy
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


# Who is asking, as the policy asks: (agent, its encounters resolved so far), so that each body
# the run sends can be filed under the encounter it belongs to (`exact_client`).
_asking: contextvars.ContextVar[tuple[int, int]] = contextvars.ContextVar("asking")


def exact_client(url: str, encounters: list[tuple[tuple[int, int], ...]],
                 bodies: dict[tuple[int, int], list[dict[str, Any]]], *, encounters_at_once: int,
                 calls_at_once: int) -> float:
    """Requests/s of a plain aiohttp client that plays the exact process with no engine: each
    encounter (its agents, each with its encounter number) starts once every earlier encounter
    of its agents has its answers, with at most `encounters_at_once` encounters and
    `calls_at_once` requests open; an agent's re-asks follow its first answer, as in the run."""
    import aiohttp

    async def play() -> float:
        done: dict[tuple[int, int], asyncio.Event] = {key: asyncio.Event() for meeting in encounters for key in meeting}
        window, calls = asyncio.Semaphore(encounters_at_once), asyncio.Semaphore(calls_at_once)
        async with aiohttp.ClientSession() as session:

            async def ask(key: tuple[int, int]) -> None:
                for body in bodies.get(key, []):
                    async with calls, session.post(url + "/chat/completions", json=body) as response:
                        await response.json()

            async def encounter(meeting: tuple[tuple[int, int], ...]) -> None:
                for agent, number in meeting:
                    if number > 0:
                        await done[(agent, number - 1)].wait()
                async with window:
                    await asyncio.gather(*(ask(key) for key in meeting))
                for key in meeting:
                    done[key].set()

            started = time.perf_counter()
            await asyncio.gather(*(encounter(meeting) for meeting in encounters))
            wall = time.perf_counter() - started
        return sum(len(sent) for sent in bodies.values()) / wall

    return event_loop.run(play())


def encounter_sequence(database: Path) -> list[tuple[tuple[int, int], ...]]:
    """The run's encounters in order t, each as its agents with the encounter number each was at."""
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT t, agent FROM decisions WHERE attempt = 0 ORDER BY t, agent").fetchall()
    meetings: dict[int, list[tuple[int, int]]] = {}
    seen: dict[int, int] = {}
    for t, agent in rows:
        meetings.setdefault(t, []).append((agent, seen.get(agent, 0)))
        seen[agent] = seen.get(agent, 0) + 1
    return [tuple(meetings[t]) for t in sorted(meetings)]


def agentsim_run(url: str, *, slots: int, agents: int, rounds: int, out: Path) -> dict[str, Any]:
    """The naming game through the OpenAI backend (its lean path, as for any local server), no
    response cache; every request body is kept."""
    spec = f"openai:smollm2@{url}"
    options = BackendOptions(limits=Limits(max_in_flight=4 * slots), cache=False, timeout_s=120,
                             retry=RetryPolicy(max_attempts=4))
    scenario = naming_game(agents, rounds)
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, backend=spec, seed=1,
                                             llm=options), _Quiet())
    experiment.open()
    limiter = layer(experiment.backends[spec], LimitedModel)
    backend = layer(experiment.backends[spec], OpenAIHTTPModel)  # a local server: the lean path
    assert isinstance(backend, OpenAIHTTPModel) and isinstance(limiter, LimitedModel)
    bodies: list[dict[str, Any]] = []
    by_encounter: dict[tuple[int, int], list[dict[str, Any]]] = {}
    build, decide = backend.body, LLMPolicy.decide

    def recorded(request: Request) -> dict[str, Any]:
        body = build(request)
        if request.options:  # not the start-up probe
            bodies.append(body)
            by_encounter.setdefault(_asking.get(), []).append(body)
        return body

    async def asking(self: LLMPolicy[Any], agent: Any, situation: Any) -> Any:
        _asking.set((agent.index, agent.encounters))
        return await decide(self, agent, situation)

    backend.body = recorded  # type: ignore[method-assign]
    LLMPolicy.decide = asking  # type: ignore[method-assign]
    try:
        wall = time.perf_counter()
        event_loop.run(experiment.run())
        wall = time.perf_counter() - wall
    finally:
        LLMPolicy.decide = decide  # type: ignore[method-assign]
    settled = {"mean_in_flight": limiter.mean_in_flight(), "median_cap": median_cap(limiter),  # at the run's end
               "run_cap": median_cap(limiter, 1.0)}
    (run,) = json.loads((out / "summary.json").read_text())["runs"]
    usage = run["usage_by_backend"][spec]
    return {"calls": usage["calls"], "tokens": usage["completion_tokens"], "wall": wall, "limiter": limiter, **settled,
            "invalid": usage["invalid_replies"], "fallbacks": usage["fallbacks"], "bodies": bodies,
            "by_encounter": by_encounter, "encounters": encounter_sequence(out / "agentsim.db"),
            "encounters_at_once": scenario.params.max_in_flight}


def main(options: Any) -> None:
    binary = Path(options.llama_server)
    if not binary.is_file():
        raise SystemExit(f"no llama-server at {binary}: run backends/llamacpp/launch.sh build (or --llama-server PATH)")
    threads = options.threads or os.cpu_count() or 1
    print(f"llama-server ({binary}), SmolLM2-135M-Instruct Q4_1, {threads} threads; naming game N {options.agents}, "
          f"{options.rounds} rounds, constrained decoding, no response cache")
    repeat = max(1, getattr(options, "repeat", 5))
    print(f"each setting {repeat} times: agentsim, then the plain client at agentsim's mean in flight, then the "
          f"exact-process client, each on a freshly started server: the median ratios and their spread")
    with tempfile.TemporaryDirectory() as scratch:
        for slots in (1, 2, 4):
            port = _free_port()
            url = f"http://127.0.0.1:{port}/v1"
            to_plain: list[float] = []
            to_exact: list[float] = []
            for attempt in range(repeat):
                with running_server(binary, slots, threads, port):
                    result = agentsim_run(url, slots=slots, agents=options.agents, rounds=options.rounds,
                                          out=Path(scratch) / f"slots-{slots}-{attempt}")
                in_flight = max(1, round(result["mean_in_flight"]))
                with running_server(binary, slots, threads, port):  # the same cold start for each client
                    requests, tokens = plain_client(url, in_flight, result["bodies"])
                with running_server(binary, slots, threads, port):
                    exact = exact_client(url, result["encounters"], result["by_encounter"],
                                         encounters_at_once=result["encounters_at_once"], calls_at_once=result["run_cap"])
                rate = result["calls"] / result["wall"]
                to_plain.append(rate / requests)
                to_exact.append(rate / exact)
                limiter = result["limiter"]
                print(f"  {slots} slot(s), run {attempt + 1}: agentsim {rate:.2f} requests/s "
                      f"({result['calls']} calls in {result['wall']:.1f} s, {result['tokens'] / result['wall']:.1f} "
                      f"tokens/s, invalid {result['invalid']}, fallbacks {result['fallbacks']}); exact-process client "
                      f"at {result['run_cap']} open {exact:.2f} requests/s: ratio {to_exact[-1]:.2f}; plain client at "
                      f"{in_flight} in flight {requests:.2f} requests/s ({tokens:.1f} tokens/s): ratio {to_plain[-1]:.2f}; "
                      f"limiter: cap {4 * slots}, most in flight {limiter.max_seen}, final {limiter.limit:.1f}, mean "
                      f"in flight {result['mean_in_flight']:.2f}, median cap over the second half "
                      f"{result['median_cap']}, latency cuts {limiter.queueing.cuts if limiter.queueing else 0}")
            for label, ratios in (("the exact-process client (agentsim's own cost)", to_exact),
                                  ("the plain client at equal requests in flight (and the process's order)", to_plain)):
                ordered = sorted(ratios)
                print(f"{slots} slot(s): agentsim / {label}: median {statistics.median(ordered):.2f}, "
                      f"spread {ordered[0]:.2f}-{ordered[-1]:.2f} over {len(ordered)} runs")


@contextlib.contextmanager
def running_server(binary: Path, slots: int, threads: int, port: int) -> Iterator[None]:
    server = start_llama_server(binary, slots, threads, port)
    try:
        yield
    finally:
        server.terminate()
        server.wait(10)


def median_cap(limiter: LimitedModel, share: float = 0.5) -> int:
    """The cap the limiter held most of the last `share` of the run (time-weighted median); over
    the second half, where it settled."""
    spans = limiter.cap_spans(share)
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
