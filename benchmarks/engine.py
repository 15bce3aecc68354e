"""How fast the engine runs and how much it stores, on the stand-in backend.

The naming game with W 10, H 5, everything recorded to the store, at N 1000 for 100 population
rounds (50,000 interactions, 100,000 agent decisions) and at N 100,000 for 5 (500,000
decisions), in synchronous rounds (`--pairing rounds`, the default: a random matching each
round, as the bare loop pairs its agents) or in the papers' process (`--pairing sequential`: one
random pair after another, two more draws per encounter than the bare loop makes). For each size it prints agent decisions per second,
CPU microseconds per decision, where a decision's time goes (scheduling, policy, codec, game
rules, metrics, recording: a profiled run's time by the agentsim module it was spent in, the
standard library's and SQLite's counted to the module that called them, scaled to the
unprofiled CPU time), stored bytes per interaction, and the same work done by a bare loop,
then rebuilds every recorded prompt of the first size from the store and checks it against a
hash of the prompt that was sent (a second, untimed run with the same seed).

    python benchmarks/engine.py [--agents 1000 100000] [--rounds R] [--repeat 3] [--skip-verify]

Targets (one core): at least 20,000 decisions per second, at most 400 bytes per interaction,
and at most 3x the time of a bare Python loop doing the same work (`bare_loop`: the same
game, prompt text, stand-in rule, reply parsing and SQLite rows, written as one function with
no framework). A shared host's timings swing by a third from run to run, so each is timed
`--repeat` times (3), taking turns with the bare loop, and the median and the best are printed;
the ratio is of the bests, of CPU time (what the process itself spent: a loaded host's waits
for a core are not in it) and of wall time.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import os
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from breakdown import BUCKETS, breakdown

from agentsim import event_loop
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


def timed_run(agents: int, rounds: int, pairing: str, directory: Path, *, record: str = "moves",
              profile: cProfile.Profile | None = None) -> tuple[float, float, int, int]:
    """(CPU seconds, wall seconds, interactions, bytes stored) of one experiment's `run()`:
    building the population, playing, recording, closing."""
    experiment = Experiment(ExperimentConfig(scenario=scenario(agents, rounds, pairing), out=directory, seed=1,
                                             record=record), _Quiet())
    experiment.open()
    cpu, wall = time.process_time(), time.perf_counter()
    if profile is not None:
        profile.enable()
    event_loop.run(experiment.run())
    if profile is not None:
        profile.disable()
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
    backend = _HashingStandIn(experiment.scenario.standin_part().rules)
    experiment.backends = {"stand-in": backend}
    event_loop.run(experiment.run())
    store = Store(directory)
    game = experiment.scenario
    from agentsim.seeding import derive_seed

    checked = 0
    encounters: dict[int, int] = {}
    for t, agent, attempt, context in store.rows("SELECT t, agent, attempt, context FROM calls WHERE run = 1 ORDER BY t, agent"):
        # Every interaction here is one call per agent: the call's seed follows the agent's count.
        seed = derive_seed(derive_seed(1, agent), encounters.get(agent, 0), attempt)
        encounters[agent] = encounters.get(agent, 0) + 1
        if _digest(game.codec.rebuild_messages(context)) != backend.digests[seed]:
            raise SystemExit(f"prompt of t={t} agent={agent} does not rebuild exactly")
        checked += 1
    store.close()
    return checked


_SYSTEM = ("Context: Player 1 is playing a multi-round partnership game with Player 2 for 100 rounds. At each "
           "round, Player 1 and Player 2 simultaneously pick an action from the following values: {options}. The "
           "payoff that both players get is determined by the following rule:\n1. If Players play the SAME action as "
           "each other, they will both be REWARDED with payoff +100 points.\n2. If Players play DIFFERENT actions to "
           "each other, they will both be PUNISHED with payoff -50 points.\nThe objective of each Player is to "
           "maximize their own accumulated point tally, conditional on the behavior of the other player.\n{history}"
           "It is now round {round}. The current score of Player 1 is {score}. Answer saying which value Player 1 "
           "should pick. Please think step by step before making a decision. Remember, examining history explicitly "
           "is important. Write your answer using the following format: {{'value': <VALUE_OF_PLAYER_1>; 'reason': "
           "<YOUR_REASON>}}.")
_ENTRY = "{{'round': {round}, 'Player 1': {own}, 'Player 2': {partner}, 'payoff': {payoff}}}"
_REPLY = re.compile(r"'value': ([^;]*);")


def bare_loop(agents: int, rounds: int, directory: Path) -> tuple[float, float, int]:
    """The yardstick: the same work as the engine's run, as one plain function. Every
    population round pairs the agents at random; each agent of a pair is shown the prompt
    (options shuffled, its last five interactions and score), answers by the stand-in's rule
    (win-stay, else the name partners played most, else a random name), and its reply is
    parsed back; payoffs, memories and the encounter and decision rows (in SQLite, committed
    every round) follow. Returns the CPU and wall seconds and the decisions made."""
    rng = random.Random(1)
    names = tuple("ABCDEFGHIJ")
    memories: list[list[tuple[str, str, int]]] = [[] for _ in range(agents)]
    directory.mkdir(parents=True)
    database = sqlite3.connect(directory / "bare.db")
    database.execute("CREATE TABLE encounters (t INTEGER PRIMARY KEY, round INTEGER, outcome INTEGER)")
    database.execute("CREATE TABLE decisions (t INTEGER, agent INTEGER, action TEXT, payoff INTEGER, context TEXT, "
                     "reply TEXT, prompt_tokens INTEGER, PRIMARY KEY (t, agent)) WITHOUT ROWID")
    started, cpu, t, decisions = time.perf_counter(), time.process_time(), 0, 0
    for round_ in range(rounds):
        order = list(range(agents))
        rng.shuffle(order)
        encounter_rows, decision_rows = [], []
        for first, second in zip(order[0::2], order[1::2]):
            said: list[tuple[int, str | None, str, str, int]] = []
            for agent in (first, second):
                memory = memories[agent][-5:]
                options = rng.sample(names, len(names))
                history = ""
                if memory:
                    entries = "\n".join(_ENTRY.format(round=number, own=own, partner=partner, payoff=payoff)
                                        for number, (own, partner, payoff) in enumerate(memory, start=1))
                    history = "This is the history of choices in past rounds:\n" + entries + "\n"
                prompt = _SYSTEM.format(options=f"[{', '.join(options)}]", history=history, round=len(memory) + 1,
                                        score=sum(payoff for *_, payoff in memory))
                if memory and memory[-1][0] == memory[-1][1]:
                    name = memory[-1][0]
                elif memory:
                    counts: dict[str, int] = {}
                    for _, partner, _ in memory:
                        counts[partner] = counts.get(partner, 0) + 1
                    most = max(counts.values())
                    name = next(partner for _, partner, _ in reversed(memory) if counts[partner] == most)
                else:
                    name = rng.choice(names)
                reply = f"{{'value': {name}; 'reason': 'it worked last round'}}"[:24]
                match = _REPLY.search(reply)
                said.append((agent, match.group(1) if match else None, "".join(options), reply, (len(prompt) + 3) // 4))
            first_name, second_name = said[0][1], said[1][1]
            payoff = 100 if first_name == second_name else -50
            memories[first].append((first_name, second_name, payoff))
            memories[second].append((second_name, first_name, payoff))
            encounter_rows.append((t, round_, int(payoff > 0)))
            for agent, name, context, reply, tokens in said:
                decision_rows.append((t, agent, name, payoff, context, reply, tokens))
            t += 1
            decisions += 2
        database.executemany("INSERT INTO encounters VALUES (?, ?, ?)", encounter_rows)
        database.executemany("INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?)", decision_rows)
        database.commit()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    database.close()
    return cpu, wall, decisions


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


def measure(agents: int, rounds: int, pairing: str, repeat: int, work: Path) -> dict[str, float]:
    """One size: the engine and the bare loop taking turns `repeat` times (a busy stretch of a
    shared host slows both), then one profiled run of the engine; prints and returns the figures."""
    results, bare = [], []
    for number in range(repeat):
        results.append(timed_run(agents, rounds, pairing, work / f"timed{agents}-{number}"))
        bare.append(bare_loop(agents, rounds, work / f"bare{agents}-{number}"))
        shutil.rmtree(work / f"timed{agents}-{number}", ignore_errors=True)
    interactions, size = results[0][2], results[0][3]
    decisions = 2 * interactions
    median = len(results) // 2
    rates = sorted(decisions / wall for _, wall, _, _ in results)
    cpus = sorted(cpu / decisions * 1e6 for cpu, _, _, _ in results)
    bare_rates = sorted(count / wall for _, wall, count in bare)
    bare_cpus = sorted(cpu / count * 1e6 for cpu, _, count in bare)
    profile = cProfile.Profile(time.process_time)
    timed_run(agents, rounds, pairing, work / f"profiled{agents}", profile=profile)
    shares = breakdown(profile)
    total = sum(shares.values()) or 1.0
    print(f"naming game, stand-in, N={agents:,} W=10 H=5, {rounds} rounds, pairing={pairing}, everything recorded")
    print(f"  interactions              {interactions:,}")
    print(f"  decisions per second      {rates[median]:,.0f} median, {rates[-1]:,.0f} best of {len(results)}")
    print(f"  CPU µs per decision       {cpus[median]:.1f} median, {cpus[0]:.1f} best")
    print("  where a decision's time goes (a profiled run's shares, of the best CPU time):")
    for name in [*(bucket for bucket, _ in BUCKETS), "other"]:
        if name in shares:
            print(f"    {name:22s}  {shares[name] / total:5.1%}  {shares[name] / total * cpus[0]:5.1f} µs")
    print(f"  stored bytes/interaction  {size / interactions:.0f}  ({size / 1e6:.1f} MB)")
    print(f"  bare loop, same work      {bare_rates[median]:,.0f} median, {bare_rates[-1]:,.0f} best decisions/s; "
          f"{bare_cpus[median]:.1f} median, {bare_cpus[0]:.1f} best CPU µs per decision")
    ratio_cpu, ratio_wall = cpus[0] / bare_cpus[0], bare_rates[-1] / rates[-1]
    print(f"  engine time / bare loop   {ratio_cpu:.2f}x CPU, {ratio_wall:.2f}x wall (best against best; must stay "
          f"under 3x); median against median {cpus[median] / bare_cpus[median]:.2f}x CPU")
    sys.stdout.flush()
    return {"rate": rates[-1], "ratio_cpu": ratio_cpu, "ratio_wall": ratio_wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, nargs="+", default=[1000, 100_000])
    parser.add_argument("--rounds", type=int, default=None,
                        help="population rounds (default: 100 at N 1000, enough for 500,000 decisions above)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs; the median and the best are printed")
    parser.add_argument("--skip-verify", action="store_true")
    parser.add_argument("--pairing", choices=["rounds", "sequential"], default="rounds")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="agentsim-bench-"))
    try:
        print(f"host: plain Python loop {host_speed():.0f} ns per iteration (for comparing hosts); load average "
              f"{' '.join(f'{value:.1f}' for value in os.getloadavg())}")
        for agents in options.agents:
            rounds = options.rounds or max(5, min(100, 500_000 // agents))
            measure(agents, rounds, options.pairing, options.repeat, work)
        if not options.skip_verify:
            agents = options.agents[0]
            rounds = options.rounds or max(5, min(100, 500_000 // agents))
            checked = verify_prompts(agents, rounds, options.pairing, work / "verify")
            print(f"prompts rebuilt exactly: {checked} of {checked} (N={agents:,})")
        sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
