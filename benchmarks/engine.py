"""How fast the engine runs and how much it stores, on the stand-in backend.

The naming game with N 1000, W 10, H 5 for 100 population rounds (50,000 interactions,
100,000 agent decisions), synchronous rounds, everything recorded to the store. Prints agent
decisions per second, CPU microseconds per decision and stored bytes per interaction, then
rebuilds every recorded prompt from the store and checks it against a hash of the prompt
that was sent (a second, untimed run with the same seed).

    python benchmarks/engine.py [--agents 1000] [--rounds 100] [--skip-verify]

Targets (one core): at least 20,000 decisions per second, at most 400 bytes per interaction,
and at most 3x the time of a bare Python loop doing the same work (`bare_loop`: the same
game, prompt text, stand-in rule, reply parsing and SQLite rows, written as one function with
no framework). A shared host's timings swing by a third from run to run, so each is timed
`--repeat` times (3) and the median and the best are printed; the ratio is of the bests.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

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


def timed_run(agents: int, rounds: int, pairing: str, directory: Path) -> tuple[float, float, int, int]:
    experiment = Experiment(ExperimentConfig(scenario=scenario(agents, rounds, pairing), out=directory, seed=1), _Quiet())
    experiment.open()
    cpu, wall = time.process_time(), time.perf_counter()
    event_loop.run(experiment.run())
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


def bare_loop(agents: int, rounds: int, directory: Path) -> tuple[float, int]:
    """The yardstick: the same work as the engine's run, as one plain function. Every
    population round pairs the agents at random; each agent of a pair is shown the prompt
    (options shuffled, its last five interactions and score), answers by the stand-in's rule
    (win-stay, else the name partners played most, else a random name), and its reply is
    parsed back; payoffs, memories and the encounter and decision rows (in SQLite, committed
    every round) follow. Returns the wall seconds and the decisions made."""
    rng = random.Random(1)
    names = tuple("ABCDEFGHIJ")
    memories: list[list[tuple[str, str, int]]] = [[] for _ in range(agents)]
    directory.mkdir(parents=True)
    database = sqlite3.connect(directory / "bare.db")
    database.execute("CREATE TABLE encounters (t INTEGER PRIMARY KEY, round INTEGER, outcome INTEGER)")
    database.execute("CREATE TABLE decisions (t INTEGER, agent INTEGER, action TEXT, payoff INTEGER, context TEXT, "
                     "reply TEXT, prompt_tokens INTEGER, PRIMARY KEY (t, agent)) WITHOUT ROWID")
    started, t, decisions = time.perf_counter(), 0, 0
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
    wall = time.perf_counter() - started
    database.close()
    return wall, decisions


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
        # The engine and the bare loop take turns, so that a busy stretch of a shared host slows both.
        results, bare = [], []
        for number in range(options.repeat):
            results.append(timed_run(options.agents, options.rounds, options.pairing, work / f"timed{number}"))
            bare.append(bare_loop(options.agents, options.rounds, work / f"bare{number}"))
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
        bare_rates = sorted(count / wall for wall, count in bare)
        print(f"  bare loop, same work      {bare_rates[median]:,.0f} median, {bare_rates[-1]:,.0f} best decisions/s")
        print(f"  engine time / bare loop   {bare_rates[-1] / rates[-1]:.2f}x (best against best; must stay under 3x)")
        print(f"  host: plain Python loop   {host_speed():.0f} ns per iteration (for comparing hosts)")
        if not options.skip_verify:
            checked = verify_prompts(options.agents, options.rounds, options.pairing, work / "verify")
            print(f"  prompts rebuilt exactly   {checked} of {checked}")
        sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
