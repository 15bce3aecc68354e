"""Memory over a long run: RSS must be flat once warmed up (issue 29).

The naming game with N 5000 against the stand-in server (backends/standin_server.py, its own
process: capacity 1024, 10 ms) over the TGI backend, default flags, the response cache on (its
own file, bounded by --cache-max-mb) and every call recorded to the store: 300,000 calls by
default (60 population rounds of 2,500 encounters, two calls each). A thread samples this
process's resident set every half second, with the server's request count. Printed: RSS at each
tenth of the run, and its growth per call from the first third on (the warm-up: the agents'
memories fill, SQLite's page caches fill to their bound: the store's 64 MiB, docs/backends.md).
At N 5000 the store grows about 95 bytes a call, so its page cache reaches the bound after
about 700,000 calls; `--rounds 200` (a million calls) shows RSS flat from there on.

    python benchmarks/memory.py [--agents 5000] [--rounds 60]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from throughput import _Quiet, load_average, start_server

from agentsim import event_loop
from agentsim.games.naming import NamingGame
from agentsim.llm.specs import BackendOptions
from agentsim.runner import Experiment, ExperimentConfig


def rss_bytes() -> int:
    """This process's resident set, from /proc (Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def requests_so_far(url: str) -> int:
    with urllib.request.urlopen(url + "/stats") as response:  # loopback only
        return int(json.load(response)["requests"])


def main() -> None:
    parser = argparse.ArgumentParser(description="RSS over a long run against the stand-in server.")
    parser.add_argument("--agents", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=60)
    options = parser.parse_args()
    server, url = start_server(1024, 0.01, [])
    samples: list[tuple[float, int, int]] = []  # (seconds, requests, rss)
    done = threading.Event()

    def sample() -> None:
        started = time.perf_counter()
        while not done.wait(0.5):
            samples.append((time.perf_counter() - started, requests_so_far(url), rss_bytes()))

    try:
        with tempfile.TemporaryDirectory() as scratch:
            scenario = NamingGame(agents=options.agents, pool_size=10, max_rounds=options.rounds, stop_at="none")
            spec = f"tgi:{url}"
            experiment = Experiment(ExperimentConfig(scenario=scenario, out=Path(scratch) / "out", backend=spec, seed=1,
                                                     llm=BackendOptions(cache_path=Path(scratch) / "cache.db")), _Quiet())
            experiment.open()
            print(f"N {options.agents}, {options.rounds} population rounds ({options.agents // 2 * options.rounds} "
                  f"encounters), TGI backend against the stand-in server (capacity 1024, 10 ms), default flags, "
                  f"cache on; RSS before the run {rss_bytes() / 2**20:.0f} MiB; load average {load_average()}")
            watcher = threading.Thread(target=sample, daemon=True)
            watcher.start()
            wall = time.perf_counter()
            event_loop.run(experiment.run())
            wall = time.perf_counter() - wall
            done.set()
            watcher.join()
            (run,) = json.loads((Path(scratch) / "out" / "summary.json").read_text())["runs"]
            database = sum(path.stat().st_size for path in (Path(scratch) / "out").glob("agentsim.db*"))
            cache = sum(path.stat().st_size for path in Path(scratch).glob("cache.db*"))
    finally:
        server.terminate()
        server.wait(10)
    total = samples[-1][1] if samples else 0
    print(f"{run['calls']} calls in {wall:.0f} s ({run['calls'] / wall:.0f}/s); store {database / 2**20:.0f} MiB, "
          f"cache {cache / 2**20:.0f} MiB on disk; load average {load_average()}")
    print("  share of the run  requests  RSS MiB")
    for tenth in range(1, 11):
        sample_at = next((s for s in samples if s[1] >= total * tenth / 10), samples[-1])
        print(f"  {tenth / 10:16.0%}  {sample_at[1]:8d}  {sample_at[2] / 2**20:7.1f}")
    warm = next(s for s in samples if s[1] >= total / 3)
    # the last sample before the last call was answered: a sample after it may catch the run's
    # closing work (its final checkpoint, the summary), which is not growth per call
    calls_done = [s for s in samples if s[1] < total][-1]
    growth = (calls_done[2] - warm[2]) / max(1, calls_done[1] - warm[1])
    print(f"  from a third of the calls to the last sample before the end ({calls_done[1]} calls): "
          f"RSS {warm[2] / 2**20:.1f} -> {calls_done[2] / 2**20:.1f} MiB, "
          f"{growth:.1f} bytes per call (the store's SQLite page cache fills at about its growth on disk, up to "
          f"its 64 MiB bound); peak {max(s[2] for s in samples) / 2**20:.1f} MiB, closing the run included")


if __name__ == "__main__":
    main()
