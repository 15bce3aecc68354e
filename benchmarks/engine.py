"""How fast the engine runs and how much it stores, on the stand-in backend.

The naming game with N 1000, W 10, H 5 for 100 population rounds (50,000 interactions,
100,000 agent decisions), synchronous rounds, everything recorded to the store. Prints agent
decisions per second, CPU microseconds per decision and stored bytes per interaction, then
rebuilds every recorded prompt from the store and checks it against a hash of the prompt
that was sent (a second, untimed run with the same seed).

    python benchmarks/engine.py [--agents 1000] [--rounds 100] [--skip-verify]

Targets (one core): at least 20,000 decisions per second, at most 400 bytes per interaction.
A shared host's timings swing by a third from run to run, so the run is timed `--repeat`
times (3) and the median and the best are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

from agentsim.games.naming import NamingGame
from agentsim.llm.base import Completion, Request
from agentsim.llm.standin import StandInModel
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.store import Store


class _Quiet:
    def start(self, experiment: dict[str, object]) -> None: ...
    def update(self, runs: list[object], *, final: bool = False) -> None: ...
    def stop(self) -> None: ...


class _HashingStandIn(StandInModel):
    """The stand-in, keeping a digest of every prompt it was sent, by (seed)."""

    def __init__(self, rules: list[object]) -> None:
        super().__init__(rules)  # type: ignore[arg-type]
        self.digests: dict[int | None, bytes] = {}

    async def complete(self, request: Request) -> Completion:
        self.digests[request.seed] = _digest(request.messages)
        return self.answer(request)


def _digest(messages: tuple[object, ...]) -> bytes:
    return hashlib.blake2b(repr(messages).encode(), digest_size=16).digest()


def scenario(agents: int, rounds: int, pairing: str) -> NamingGame:
    """`pairing`: rounds (the README's figures) or sequential (the default process)."""
    return NamingGame(agents=agents, pool_size=10, memory_length=5, pairing=pairing, stop_at="none", max_rounds=rounds)


def timed_run(agents: int, rounds: int, pairing: str, directory: Path) -> tuple[float, float, int, int]:
    experiment = Experiment(ExperimentConfig(scenario=scenario(agents, rounds, pairing), out=directory, seed=1), _Quiet())
    experiment.open()
    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(experiment.run())
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    store = Store(directory)
    interactions = next(iter(store.rows("SELECT COUNT(*) FROM encounters")))[0]
    size = store.bytes_on_disk()
    store.close()
    return cpu, wall, interactions, size


def verify_prompts(agents: int, rounds: int, pairing: str, directory: Path) -> int:
    """Run again with a prompt-hashing stand-in and rebuild every prompt from the store."""
    experiment = Experiment(ExperimentConfig(scenario=scenario(agents, rounds, pairing), out=directory, seed=1), _Quiet())
    experiment.open()
    backend = _HashingStandIn(experiment.scenario.standin_rules())
    experiment.backends = {"stand-in": backend}
    asyncio.run(experiment.run())
    store = Store(directory)
    game = experiment.scenario
    from agentsim.seeding import derive_seed

    checked = 0
    encounters: dict[int, int] = {}
    for t, agent, attempt, context in store.rows("SELECT t, agent, attempt, context FROM calls WHERE run = 1 ORDER BY t, agent"):
        # Every interaction here is one call per agent: the call's seed follows the agent's count.
        seed = derive_seed(derive_seed(1, agent), encounters.get(agent, 0), attempt)
        encounters[agent] = encounters.get(agent, 0) + 1
        if _digest(game.rebuild_messages(context)) != backend.digests[seed]:
            raise SystemExit(f"prompt of t={t} agent={agent} does not rebuild exactly")
        checked += 1
    store.close()
    return checked


def host_speed() -> float:
    """Nanoseconds per iteration of a plain Python loop. Hosts differ in single-core speed by
    two or three times, so the engine's figures are printed with this one's."""
    best = float("inf")
    for _ in range(3):
        started, total = time.perf_counter(), 0
        for number in range(2_000_000):
            total += number
        best = min(best, (time.perf_counter() - started) / 2_000_000 * 1e9)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs; the median and the best are printed")
    parser.add_argument("--skip-verify", action="store_true")
    parser.add_argument("--pairing", choices=["rounds", "sequential"], default="rounds")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="agentsim-bench-"))
    try:
        results = [timed_run(options.agents, options.rounds, options.pairing, work / f"timed{number}") for number in range(options.repeat)]
        interactions, size = results[0][2], results[0][3]
        decisions = 2 * interactions
        rates = sorted(decisions / wall for _, wall, _, _ in results)
        cpus = sorted(cpu / decisions * 1e6 for cpu, _, _, _ in results)
        median = len(results) // 2
        print(f"naming game, stand-in, N={options.agents} W=10 H=5, {options.rounds} rounds, pairing={options.pairing}, "
              "everything recorded")
        print(f"  interactions              {interactions}")
        print(f"  decisions per second      {rates[median]:,.0f} median, {rates[-1]:,.0f} best of {len(results)}")
        print(f"  CPU µs per decision       {cpus[median]:.1f} median, {cpus[0]:.1f} best")
        print(f"  stored bytes/interaction  {size / interactions:.0f}  ({size / 1e6:.1f} MB)")
        print(f"  host: plain Python loop   {host_speed():.0f} ns per iteration (for comparing hosts)")
        if not options.skip_verify:
            checked = verify_prompts(options.agents, options.rounds, options.pairing, work / "verify")
            print(f"  prompts rebuilt exactly   {checked} of {checked}")
        sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
