"""Populations at theory scale (issue 48): the engine per decision against a bare loop, memory
per agent and store bytes per encounter at each recording level, from 1,000 agents to a
million; and model calls against decisions with `--sample-locally` on SmolLM2.

1. The naming game on the stand-in (W 10, H 5), for N = 10^3, 10^4, 10^5 on the complete graph
   (uniform random pairs) and 10^6 on a ring (each agent meets its 4 nearest neighbours), for a
   few population rounds, at each recording level (`--record moves`, `rounds`, `summary`),
   each run in a process of its own. Printed per N and level: CPU µs per decision (the whole
   run: building the population, playing, recording, closing), at `moves` the same work done
   by a bare loop in that process and the ratio (benchmarks/engine.py's `bare_loop`; goal at
   most 3x), peak memory per agent ((peak RSS - RSS before the run) / N; goal at most 2 KB at
   10^5), and store bytes per encounter played (agentsim.db at the end, checkpoints included).
2. SmolLM2-135M-Instruct in process (`local:smollm2`, llama.cpp, the answer grammar) with
   `--sample-locally`, the committed-minority scenario (scenarios/critical_mass.py: consensus
   on M, a quarter committed to Q) at N = 10^3, 10^4 and 10^5 for `--smollm2-rounds` rounds,
   with memory H = `--smollm2-memory` (3: at most 2 x 4^3 = 128 distinct prompts, two option
   orders by four remembered pairs per entry; the paper's 5 allows 2,048, each a call of a
   second or more on a loaded 2-core host), each N with a response cache of its own: the calls that reached the model, the decisions,
   their ratio, wall time and peak memory; then each N again from a copy of its cache with one
   encounter in flight instead of 64, which must record the same moves (the scheduler's
   exactness at that size: every answer now a local draw, in another order).

    python benchmarks/scale.py [--sizes 1000 10000 100000 1000000] [--levels moves rounds summary]
                               [--smollm2-sizes 1000 10000 100000] [--smollm2-rounds 3] [--smollm2-memory 3]
                               [--skip-engine] [--skip-smollm2]

Prints figures; asserts nothing. A host shared with others slows every figure but the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LEVELS = ("moves", "rounds", "summary")


def rounds_for(agents: int) -> int:
    """Population rounds at N: 20,000 decisions or more, and 2 at a million."""
    return max(2, min(20, 2_000_000 // agents // 10))


def rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def one_run(agents: int, level: str, rounds: int, topology: str, directory: Path, bare: bool) -> dict[str, Any]:
    """One naming-game run in this process (a fresh one: its peak RSS is this run's)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from engine import _Quiet, bare_loop

    from agentsim import event_loop
    from agentsim.games.naming import NamingGame
    from agentsim.runner import Experiment, ExperimentConfig

    network = {"pairing": "network", "topology": topology, "topology_degree": 4} if topology != "complete" else {}
    game = NamingGame(agents=agents, pool_size=10, memory_length=5, stop_at="none", max_rounds=rounds, **network)
    experiment = Experiment(ExperimentConfig(scenario=game, out=directory / "run", seed=1, record=level), _Quiet())
    experiment.open()
    before, cpu, wall = rss(), time.process_time(), time.perf_counter()
    event_loop.run(experiment.run())
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    connection = sqlite3.connect(directory / "run" / "agentsim.db")
    played = json.loads(connection.execute("SELECT summary FROM runs WHERE run = 1").fetchone()[0])["interactions"]
    recorded = connection.execute("SELECT COUNT(*) FROM encounters").fetchone()[0]
    connection.close()
    size = sum(path.stat().st_size for path in (directory / "run").glob("agentsim.db*"))
    result = {"agents": agents, "level": level, "rounds": rounds, "topology": topology, "decisions": 2 * played,
              "encounters": played, "recorded": recorded, "cpu": cpu, "wall": wall, "peak_per_agent": (peak - before) / agents,
              "peak": peak, "bytes": size}
    if bare:
        bare_cpu, _, decisions = bare_loop(agents, rounds, directory / "bare")
        result["bare_cpu_per_decision"] = bare_cpu / decisions
    return result


def run_in_process(agents: int, level: str, rounds: int, topology: str, work: Path, bare: bool) -> dict[str, Any]:
    directory = work / f"n{agents}-{level}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    result = subprocess.run([sys.executable, __file__, "--one", str(agents), level, str(rounds), topology, str(directory),
                             "1" if bare else "0"], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    shutil.rmtree(directory, ignore_errors=True)
    if result.returncode != 0:
        raise SystemExit(f"N={agents} {level}: exit {result.returncode}: {result.stderr.strip()[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def engine_table(sizes: list[int], levels: list[str], work: Path) -> None:
    print("1. the naming game on the stand-in, W 10 H 5; CPU per decision for the whole run, at --record moves "
          "beside a bare loop doing the same work in the same process")
    print(f"  {'N':>9} {'graph':8} {'rounds':>6} {'level':8} {'CPU µs/decision':>16} {'bare µs':>8} {'ratio':>6} "
          f"{'peak B/agent':>13} {'store B/encounter':>18} {'recorded':>9}")
    for agents in sizes:
        topology = "ring" if agents >= 1_000_000 else "complete"
        for level in levels:
            found = run_in_process(agents, level, rounds_for(agents), topology, work, bare=level == "moves")
            per_decision = found["cpu"] / found["decisions"] * 1e6
            bare = found.get("bare_cpu_per_decision")
            shown = (f"{bare * 1e6:8.1f} {per_decision / (bare * 1e6):5.2f}x" if bare else f"{'':8} {'':6}")
            print(f"  {agents:>9,} {topology:8} {found['rounds']:>6} {level:8} {per_decision:16.1f} {shown} "
                  f"{found['peak_per_agent']:13,.0f} {found['bytes'] / found['encounters']:18.1f} "
                  f"{found['recorded'] / found['encounters']:8.1%}")
            sys.stdout.flush()


def agentsim(*arguments: str) -> subprocess.CompletedProcess[str]:
    """`python -m agentsim ARGUMENTS`, its peak memory read from /usr/bin/time when there is one."""
    command = [sys.executable, "-m", "agentsim", *arguments]
    timed = Path("/usr/bin/time").is_file()
    return subprocess.run((["/usr/bin/time", "-f", "peak_kb=%M"] if timed else []) + command, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def smollm2_table(sizes: list[int], rounds: int, memory: int, work: Path) -> None:
    print(f"2. SmolLM2-135M (local:smollm2, constrained, in process) with --sample-locally: the committed-minority "
          f"scenario (consensus on M, 25% committed to Q, H={memory}), {rounds} rounds, a response cache per N")
    print(f"  {'N':>7} {'decisions':>10} {'calls':>7} {'decisions/call':>15} {'wall s':>7} {'peak MiB':>9}  "
          f"one in flight, from the cache")
    for agents in sizes:
        common = ["scenarios/critical_mass.py", "--backend", "local:smollm2", "--set", "constrained_decoding=true",
                  "--set", f"agents={agents}", "--set", "committed=0", "--set", "committed_fraction=0.25",
                  "--set", "stop_at=none", "--set", f"max_rounds={rounds}", "--set", f"memory_length={memory}",
                  "--sample-locally", "--record", "rounds",
                  "--no-live"]
        cache = work / f"cache{agents}.db"
        started = time.monotonic()
        first = agentsim(*common, "--cache", str(cache), "--out", str(work / f"smollm2-{agents}"))
        wall = time.monotonic() - started
        if first.returncode != 0:
            raise SystemExit(f"SmolLM2 N={agents}: exit {first.returncode}: {first.stderr.strip()[-1500:]}")
        (run,) = json.loads((work / f"smollm2-{agents}" / "summary.json").read_text())["runs"]
        usage = run["usage_by_backend"]["local:smollm2"]
        calls = usage["calls"] - usage["sampled_locally"] - usage["cache_hits"]
        peak = next((int(line.split("=")[1]) for line in first.stderr.splitlines() if line.startswith("peak_kb=")), 0)
        with sqlite3.connect(cache) as source, sqlite3.connect(work / f"again{agents}.db") as copy:
            source.backup(copy)  # (the cache is a WAL database: its -wal holds what the run learnt last)
        again = agentsim(*common, "--set", "max_in_flight=1", "--cache", str(work / f"again{agents}.db"),
                         "--out", str(work / f"again-{agents}"))
        same = again.returncode == 0 and _moves(work / f"smollm2-{agents}") == _moves(work / f"again-{agents}")
        print(f"  {agents:>7,} {usage['calls']:>10,} {calls:>7,} {usage['calls'] / max(calls, 1):15.1f} {wall:7.0f} "
              f"{peak / 1024:9.0f}  {'the same moves' if same else 'DIFFERENT MOVES'}")
        sys.stdout.flush()


def _moves(directory: Path) -> tuple[Any, ...]:
    """What two runs must share: the sampled agents' moves, the per-round tallies, the summary's figures."""
    connection = sqlite3.connect(directory / "agentsim.db")
    moves = connection.execute("SELECT run, t, agent, action, payoff, context FROM decisions ORDER BY run, t, agent, "
                               "attempt").fetchall()
    rounds = connection.execute("SELECT run, round, stats FROM rounds ORDER BY run, round").fetchall()
    summary = json.loads(connection.execute("SELECT summary FROM runs WHERE run = 1").fetchone()[0])
    connection.close()
    kept = {key: value for key, value in summary.items() if key in ("interactions", "flip", "final_alternative_share",
                                                                    "final_agreement", "leading_name")}
    return moves, rounds, kept


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        agents, level, rounds, topology, directory, bare = sys.argv[2:8]
        print(json.dumps(one_run(int(agents), level, int(rounds), topology, Path(directory), bare == "1")))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--levels", nargs="+", choices=LEVELS, default=list(LEVELS))
    parser.add_argument("--smollm2-sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--smollm2-rounds", type=int, default=3)
    parser.add_argument("--smollm2-memory", type=int, default=3)
    parser.add_argument("--skip-smollm2", action="store_true")
    parser.add_argument("--skip-engine", action="store_true")
    options = parser.parse_args()
    print(f"load average {' '.join(f'{value:.1f}' for value in os.getloadavg())}; {os.cpu_count()} CPUs")
    work = Path(tempfile.mkdtemp(prefix="agentsim-scale-"))
    try:
        if not options.skip_engine:
            engine_table(options.sizes, options.levels, work)
        if not options.skip_smollm2:
            smollm2_table(options.smollm2_sizes, options.smollm2_rounds, options.smollm2_memory, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
