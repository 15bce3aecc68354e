"""agentsim against a bare client on a GPU inference server (issue 29: "where a GPU machine that
can serve a model is available, measure it there too: agentsim against a bare client at N 1000").

Against a running server (benchmarks/gpu_server.py on a GPU: a random-weight model of a real
model's shape, dynamically batched; or any TGI / OpenAI-compatible server with /stats), the
naming game at N 1000 with the flags a user gets (no --max-in-flight, the scenario's own
max_in_flight, cache off) and the answer grammar (`constrained_decoding=true`, so every reply
is one of the names), on the TGI path (`tgi:URL`) and the lean OpenAI-compatible path
(`openai:MODEL@URL/v1`). Each run's requests are recorded at the bottom of the stack and
replayed by a bare aiohttp client, as many at once as the run had in flight (benchmarks/
throughput.py's `Recording` and `replay`). Per path it prints calls, wall, requests per
second, the client's CPU per call, the bare client's requests per second and CPU per call,
agentsim / bare, the most requests agentsim had in flight, the server's batch sizes (mean and
largest, from /stats) and the share of the wall its GPU loop was busy; then the bare client's
best rate with many requests open (what the server can do), and the host's load average.

Then the first path once more with both caps raised (`--raised-caps CALLS,ENCOUNTERS`, default
512,256: `--max-in-flight` and the scenario's `max_in_flight`), as a GPU server wants.

The rounds are chosen so that each agentsim run takes about --seconds at the rate a first
one-round run (the warm-up) reached, unless --rounds is given; each part's time is printed.

    python benchmarks/gpu_throughput.py --server-url http://127.0.0.1:8080 [--agents 1000] [--seconds 25]
                                        [--rounds R] [--paths tgi,openai] [--best-concurrency 1024]

On a GPU machine, benchmarks/gpu/run.sh starts the server and runs this (docs/backends.md).
Prints figures; asserts nothing timed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from throughput import Recording, _Quiet, load_average, replay, sustained_rate  # benchmarks/, the script's folder

from agentsim import event_loop
from agentsim.games.naming import NamingGame
from agentsim.llm import wire
from agentsim.llm.health import BackendGuard
from agentsim.llm.limiter import LimitedModel, Limits
from agentsim.llm.openai_http import OpenAIHTTPModel
from agentsim.llm.specs import BackendOptions
from agentsim.llm.stack import layer
from agentsim.llm.tgi import TGIModel
from agentsim.runner import Experiment, ExperimentConfig

MODEL = "gpu-model"


def server_get(url: str, path: str, method: str = "GET") -> dict[str, Any]:
    request = urllib.request.Request(url + path, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=30) as response:  # loopback only
        return dict(json.load(response))


def spec_for(path: str, url: str) -> str:
    return f"tgi:{url}" if path == "tgi" else f"openai:{MODEL}@{url}/v1"


def naming_run(url: str, path: str, agents: int, rounds: int, out: Path,
               caps: tuple[int, int] | None = None) -> dict[str, Any]:
    """One naming game with default flags (or `caps`: --max-in-flight CALLS and the scenario's
    max_in_flight ENCOUNTERS) and the answer grammar, its requests recorded."""
    spec = spec_for(path, url)
    scenario = NamingGame(agents=agents, pool_size=10, max_rounds=rounds, stop_at="none", constrained_decoding=True)
    options = BackendOptions(cache=False)
    if caps is not None:
        scenario = scenario.with_params(max_in_flight=caps[1])
        options = BackendOptions(cache=False, limits=Limits(max_in_flight=caps[0]))
    experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, backend=spec, seed=1, llm=options), _Quiet())
    experiment.open()
    guard = layer(experiment.backends[spec], BackendGuard)
    limiter = layer(experiment.backends[spec], LimitedModel)
    assert isinstance(guard, BackendGuard) and isinstance(limiter, LimitedModel)
    provider = guard.inner
    recording = Recording(provider)
    guard.inner = recording
    server_get(url, "/stats/reset", "POST")
    cpu, wall = time.process_time(), time.perf_counter()
    event_loop.run(experiment.run())
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    stats = server_get(url, "/stats")
    (run,) = json.loads((out / "summary.json").read_text())["runs"]
    return {"run": run, "cpu": cpu, "wall": wall, "stats": stats, "provider": provider,
            "requests": recording.requests, "in_flight": max(1, limiter.max_seen), "cap": limiter.limits.max_in_flight,
            "sustained": sustained_rate(recording.sent), "mean_in_flight": limiter.mean_in_flight(),
            "settled": max(limiter.cap_spans(0.5), key=lambda span: span[1])[0]}


def bodies_for(result: dict[str, Any], url: str) -> tuple[str, list[bytes]]:
    """The run's requests as the bodies its provider posted, and where."""
    provider = result["provider"]
    if isinstance(provider, TGIModel):
        style = provider.style or "plain"
        return url + "/generate", [wire.encode(provider.payload(request, style)) for request in result["requests"]]
    lean = provider if isinstance(provider, OpenAIHTTPModel) else OpenAIHTTPModel(
        name="bare", model=MODEL, api_key="EMPTY", base_url=url + "/v1")
    return lean.url, [wire.encode(lean.body(request)) for request in result["requests"]]


def timed_replay(url: str, target: str, bodies: list[bytes], concurrency: int) -> tuple[float, float, dict[str, Any]]:
    server_get(url, "/stats/reset", "POST")
    rate, cpu = replay(target, bodies, concurrency)
    return rate, cpu, server_get(url, "/stats")


def batches(stats: dict[str, Any], wall: float) -> str:
    busy = stats.get("gpu_loop_s")
    return (f"{stats.get('batch_mean', 0):.0f}/{stats.get('batch_max', 0)}"
            + (f" busy {busy / wall:.2f}" if busy is not None else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="agentsim against a bare client on a GPU inference server, N 1000.")
    parser.add_argument("--server-url", required=True, help="a running benchmarks/gpu_server.py (or TGI-like server with /stats)")
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=None, help="population rounds per run (default: from --seconds)")
    parser.add_argument("--seconds", type=float, default=25.0,
                        help="each agentsim run's aimed length, at the warm-up run's rate (default 25)")
    parser.add_argument("--max-rounds", type=int, default=40, help="most rounds --seconds may choose (default 40)")
    parser.add_argument("--paths", default="tgi,openai", help="comma-separated: tgi, openai (default both)")
    parser.add_argument("--best-concurrency", type=int, default=1024,
                        help="requests the bare client keeps open for the server's best rate (default 1024)")
    parser.add_argument("--raised-caps", default="512,256",
                        help="CALLS,ENCOUNTERS: one more run of the first path with --max-in-flight CALLS and the "
                             "scenario's max_in_flight ENCOUNTERS, as a GPU server wants (default 512,256; 'none' skips it)")
    parser.add_argument("--best-seconds", type=float, default=10.0,
                        help="the best-rate replay's aimed length, at the fastest rate seen (default 10)")
    options = parser.parse_args(argv)
    paths = [path.strip() for path in options.paths.split(",") if path.strip()]
    if not paths or any(path not in ("tgi", "openai") for path in paths):
        parser.exit(2, "gpu_throughput: error: --paths takes tgi, openai or both (tgi,openai)\n")
    url = options.server_url.rstrip("/")
    begun = time.perf_counter()
    info = server_get(url, "/info")
    print(f"server {url}: {info.get('model_id')}, {info.get('model_dtype', '?')} on {info.get('model_device_type', '?')}, "
          f"batches up to {info.get('max_batch_size', info.get('max_concurrent_requests'))}; load average {load_average()}")
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        part = time.perf_counter()
        pilot = naming_run(url, paths[0], options.agents, 1, scratch / "warm-up")
        pilot_rate = pilot["run"]["calls"] / pilot["wall"]
        rounds = options.rounds or max(2, min(options.max_rounds, round(options.seconds * pilot_rate / options.agents)))
        print(f"warm-up: {paths[0]}, N {options.agents}, 1 round: {pilot['run']['calls']} calls in {pilot['wall']:.1f} s "
              f"= {pilot_rate:.0f}/s; each run below: {rounds} rounds ({time.perf_counter() - part:.1f} s)")
        print(f"naming game N {options.agents}, {rounds} rounds, default flags, cache off, answer grammar; load average "
              f"{load_average()}")
        print("  (rates sustained over the middle 90% of each run's requests; in flight: most, mean, the cap it held longest)")
        print("  path          calls  wall s  requests/s  sustained/s  CPU ms/call  bare sustained/s  bare CPU ms/call  agentsim/bare  "
              "in flight most/mean/cap  batches mean/max  bare batches  parsed  part s")
        recorded: list[bytes] = []
        recorded_target, fastest = "", pilot_rate
        settings: list[tuple[str, tuple[int, int] | None]] = [(path, None) for path in paths]
        if options.raised_caps != "none":
            calls, encounters = (int(value) for value in options.raised_caps.split(","))
            settings.append((paths[0], (calls, encounters)))
        for path, caps in settings:
            part = time.perf_counter()
            label = path if caps is None else f"{path} {caps[0]}/{caps[1]}"
            result = naming_run(url, path, options.agents, rounds, scratch / f"run-{label.replace(' ', '-').replace('/', '-')}", caps)
            run, stats = result["run"], result["stats"]
            requests, wall = int(stats["requests"]), result["wall"]
            target, bodies = bodies_for(result, url)
            if not recorded:
                recorded, recorded_target = bodies, target
            bare_rate, bare_cpu, bare_stats = timed_replay(url, target, bodies, result["in_flight"])
            rate = result["sustained"]
            fastest = max(fastest, rate, bare_rate)
            clean = not run["errors"] and run["fallbacks"] == 0 and run.get("reasks", 0) == 0
            print(f"  {label:11s}  {requests:6d}  {wall:6.1f}  {requests / wall:10.0f}  {rate:11.0f}  "
                  f"{result['cpu'] * 1e3 / requests:11.2f}  {bare_rate:16.0f}  {bare_cpu * 1e3:16.2f}  {rate / bare_rate:13.2f}  "
                  f"{result['in_flight']:>9d}/{result['mean_in_flight']:.0f}/{result['settled']:<5d}  {batches(stats, wall):>16s}  "
                  f"{batches(bare_stats, len(bodies) / bare_rate):>12s}  {'yes' if clean else 'NO':>6s}  "
                  f"{time.perf_counter() - part:6.1f}")
            if not clean:
                print(f"    errors {run['errors']}, fallbacks {run['fallbacks']}, re-asks {run.get('reasks')}, retries {run['retries']}, "
                      f"answered calls {run['calls']} of {requests} requests")
        part = time.perf_counter()
        recorded = recorded[: max(2000, int(options.best_seconds * fastest))]  # about --best-seconds at the fastest rate seen
        bare_best, bare_best_cpu, best_stats = timed_replay(url, recorded_target, recorded, options.best_concurrency)
        print(f"bare client, {options.best_concurrency} open, {len(recorded)} {paths[0]} bodies: {bare_best:.0f} requests/s "
              f"({bare_best_cpu * 1e3:.2f} ms CPU/request; batches mean/max busy {batches(best_stats, len(recorded) / bare_best)}) "
              f"= what the server can do; load average {load_average()} ({time.perf_counter() - part:.1f} s)")
    print(f"total {time.perf_counter() - begun:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
