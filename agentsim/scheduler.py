"""Who meets whom, and how many encounters are in flight. One scheduler per run.

Pairings come in two shapes:

- a `SequentialPairing` is the papers' process: encounter t is the t-th uniformly random pair
  of the population (or, with a graph, a uniformly random agent and a uniformly random
  neighbour of it), one after another. `SequenceScheduler` runs that sequence concurrently
  and exactly: encounter t starts as soon as every earlier encounter of its agents has been
  applied, and records are taken strictly in the order t. Each agent's state therefore
  changes in the same order as in the one-at-a-time run, and the run is the same, move for
  move, whatever the latencies and whatever `max_in_flight` is;
- a `RoundPairing` (a random matching per population round) or a `GroupPairing` (the whole
  population as one group, or random groups of k drawn every round) proposes a round's groups at once; `RoundScheduler` asks them all
  and resolves them in the order they were drawn once every answer is in.

What an encounter needs from the run's generator (its pair, then `Scenario.draw`: option
orders, dice) is drawn in sequence order, so the generator's stream is the sequential run's.
What it reads of agents' state (`Scenario.start`: the memories shown in prompts) is read when
it starts, after every earlier encounter of its agents has been applied; its outcome is
applied to them (`Scenario.resolve`) before any later encounter of theirs starts; its record
reaches the metrics, the store and the stop rule in order t. docs/architecture.md says which
hook may read what.
"""

from __future__ import annotations

import asyncio
import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar, cast

import networkx as nx

if TYPE_CHECKING:
    from .agents import PopulationAgent
    from .model import PopulationModel
    from .records import EncounterRecord

# Near a stop the scheduler still looks ahead by 1/SLIVER of the encounters recorded so far (at
# least one), so the run's end keeps some concurrency; that many at most are asked past the stop.
SLIVER = 80
# How far ahead, in population rounds, while a stop rule with a bound is out of reach (or there
# is none): a one-round window leaves 0.93-0.95 of the dependency graph's width, two all of it.
FAR_ROUNDS = 2

# A checkpoint's open encounter: t, round, agent indices, what was drawn, and its record if it
# was applied but not recorded yet (a sequence's; older checkpoints of rounds have no record).
Pending = (tuple[int, int, tuple[int, ...], object]
           | tuple[int, int, tuple[int, ...], object, "EncounterRecord | None"])

D = TypeVar("D")  # what a game draws for an encounter (`Scenario.draw`)
V = TypeVar("V")  # what its participants see (`Scenario.start`)


@dataclass(slots=True, eq=False)
class Encounter(Generic[D, V]):
    """Encounter `t` of the sequence, in population round `round`. `drawn` is what the game
    drew for it from the run's generator (kept in checkpoints); `views` is what its
    participants see, read from their state when it starts; `after` is the latest earlier
    encounter it waits for (-1: none). The scheduler holds `Encounter[object, object]`; a
    game's hooks name their own types (`Encounter[tuple[float, ...], tuple[SignSituation, ...]]`)
    or leave them open (`Encounter`)."""

    t: int
    round: int
    agents: tuple[PopulationAgent, ...]
    drawn: D = cast(D, None)  # noqa: RUF009 (None until `Scenario.draw`, resp. `start`, sets it; a cast only types it)
    views: V = cast(V, None)  # noqa: RUF009
    after: int = -1


GameEncounter = Encounter[object, object]  # an encounter as the scheduler holds it: of any game


class SequentialPairing:
    """One random pair after another (the papers' process). Without a graph, a uniformly
    random ordered pair of distinct agents; with one, a uniformly random agent that has a
    neighbour and a uniformly random neighbour of it. `max_in_flight` caps how many
    encounters are asked at once; it never changes which pairs meet."""

    def __init__(self, max_in_flight: int, graph: nx.Graph | list[list[int]] | None = None) -> None:
        self.max_in_flight = max_in_flight
        self.neighbours = _neighbour_lists(graph)
        if self.neighbours is not None and not any(self.neighbours):
            raise ValueError("no pair of agents can meet: the interaction graph has no edges")

    def pair(self, model: PopulationModel, count: int) -> tuple[int, int]:
        """The next pair, as positions in the population."""
        randrange = model.random.randrange
        if self.neighbours is None:
            first, second = randrange(count), randrange(count - 1)
            return first, second + (second >= first)
        while True:
            first = randrange(count)
            neighbours = self.neighbours[first]
            if neighbours:
                return first, neighbours[randrange(len(neighbours))]


class RoundPairing:
    """Synchronous rounds: a random perfect matching of the population (restricted to the
    graph's edges when there is one: a random maximal matching)."""

    def __init__(self, graph: nx.Graph | list[list[int]] | None = None) -> None:
        self.neighbours = _neighbour_lists(graph)

    def groups(self, model: PopulationModel, count: int) -> list[tuple[int, ...]]:
        order = list(range(count))
        model.random.shuffle(order)
        if self.neighbours is None:
            return [(order[i], order[i + 1]) for i in range(0, len(order) - 1, 2)]
        matched = [False] * len(order)
        pairs: list[tuple[int, ...]] = []
        for index in order:
            if matched[index]:
                continue
            free = [other for other in self.neighbours[index] if not matched[other]]
            if free:
                partner = free[model.random.randrange(len(free))]
                matched[index] = matched[partner] = True
                pairs.append((index, partner))
        return pairs


class GroupPairing:
    """The whole population meets as one group every round (a village meeting); with `size`,
    groups of `size` drawn afresh every round: the population in a uniformly random order
    from the run's generator, cut into consecutive groups of `size` (a public goods game's
    groups of 4). Players left over when `size` does not divide the population (the last
    ones of the order: random ones) sit the round out."""

    def __init__(self, size: int | None = None) -> None:
        if size is not None and size < 1:
            raise ValueError(f"a group has at least one member (got size={size})")
        self.size = size

    def groups(self, model: PopulationModel, count: int) -> list[tuple[int, ...]]:
        if self.size is None or self.size >= count:
            return [tuple(range(count))]
        order = list(range(count))
        model.random.shuffle(order)
        return [tuple(order[i:i + self.size]) for i in range(0, count - self.size + 1, self.size)]


Pairing = SequentialPairing | RoundPairing | GroupPairing


def make_scheduler(model: PopulationModel, pairing: Pairing) -> SequenceScheduler | RoundScheduler:
    if isinstance(pairing, SequentialPairing):
        return SequenceScheduler(model, pairing)
    return RoundScheduler(model, pairing)


class _Base:
    """What both schedulers share: the population by position, the open encounters, and
    applying an outcome."""

    def __init__(self, model: PopulationModel) -> None:
        self.model = model
        self.agents: list[PopulationAgent] = model.population  # by position: pairings draw positions
        self.open: dict[int, GameEncounter] = {}  # by t: drawn, not resolved (in t order)
        self.running: dict[int, asyncio.Task[None]] = {}  # by t: asked, answers not in yet
        # Every policy decides without suspending (rules, the in-process stand-in): encounters
        # are asked one by one, in order, which is what tasks would do with nothing to wait for.
        self.immediate = all(agent.policy.immediate for agent in self.agents)

    def population_changed(self) -> None:
        """Call after agents were added or replaced between rounds."""
        self.agents = self.model.population

    def pending(self) -> list[GameEncounter]:
        return [self.open[t] for t in sorted(self.open)]

    def pending_state(self) -> list[Pending]:
        """The open encounters for a checkpoint, each with what was drawn for it."""
        return [(encounter.t, encounter.round, tuple(agent.index for agent in encounter.agents), encounter.drawn)
                for encounter in self.pending()]

    def cancel(self) -> list[asyncio.Task[None]]:
        """Stop now. Open encounters stay open (a checkpoint keeps them); returns the
        cancelled tasks, to be awaited."""
        tasks = list(self.running.values())
        for task in tasks:
            task.cancel()
        self.running.clear()
        return tasks

    def _by_index(self) -> dict[int, PopulationAgent]:
        return {agent.index: agent for agent in self.agents}


class RoundScheduler(_Base):
    """Rounds of disjoint groups: every group of a round is drawn and asked at once; the round
    resolves in draw order once all its answers are in, so the outcome does not depend on
    which answer came back first. A round interrupted and resumed is finished, not redrawn."""

    def __init__(self, model: PopulationModel, pairing: RoundPairing | GroupPairing) -> None:
        super().__init__(model)
        self.pairing = pairing

    async def run_round(self) -> None:
        if self.open:
            encounters = self.pending()
        else:
            model = self.model
            encounters = []
            for group in self.pairing.groups(model, len(self.agents)):
                encounter: GameEncounter = Encounter(model.encounters_begun, model.rounds_done, tuple(self.agents[i] for i in group))
                model.encounters_begun += 1
                encounter.drawn = model.scenario.draw(model, encounter)
                self.open[encounter.t] = encounter
                encounters.append(encounter)
        for encounter in encounters:  # the previous round is resolved and a round's groups are disjoint
            encounter.views = self.model.scenario.start(self.model, encounter)
        scenario, model = self.model.scenario, self.model
        if self.immediate:  # policies that never suspend: in order, one by one, is what tasks would do
            for encounter in encounters:
                self._apply(encounter, await scenario.play(model, encounter))
            return
        answers: dict[int, object] = {}
        for encounter in encounters:
            self.running[encounter.t] = asyncio.get_running_loop().create_task(self._ask(encounter, answers))
        await asyncio.gather(*self.running.values())
        self.running.clear()
        for encounter in encounters:
            self._apply(encounter, answers[encounter.t])

    async def _ask(self, encounter: GameEncounter, answers: dict[int, object]) -> None:
        answers[encounter.t] = await self.model.scenario.play(self.model, encounter)

    def _apply(self, encounter: GameEncounter, outcome: object) -> None:
        """Apply an encounter's outcome: the game's state change and its record, at once."""
        model = self.model
        record = model.scenario.resolve(model, encounter, outcome)
        del self.open[encounter.t]
        for agent in encounter.agents:
            agent.encounter_resolved()
        model.resolved(record)

    async def resume(self, pending: list[Pending]) -> None:
        """Reopen the encounters a checkpoint kept; `run_round` finishes their round."""
        by_index = self._by_index()
        for t, round_, members, drawn, *_ in pending:
            self.open[t] = Encounter(t, round_, tuple(by_index[i] for i in members), drawn)

    async def drain(self) -> None:
        """Nothing runs between rounds."""


class SequenceScheduler(_Base):
    """The sequence of encounters, run concurrently and exactly.

    Encounter t depends on the previous encounter of each of its agents (and of each agent
    `Scenario.reads` names). It is asked once those have been applied, and its outcome is
    applied (`Scenario.resolve`: its participants' state, its record) as soon as its answers
    are in: each agent's state changes in the order of its own encounters, which is all that
    its later prompts read, so every prompt is the one the one-at-a-time run shows. Records
    go to the metrics, the store and the stop rule strictly in order t.

    The scheduler works ahead of the last recorded encounter by two population rounds (`far`,
    N encounters) where the scenario bounds its stop (`stop_distance`: how many records at
    least before its stop rule could fire), and by less near the stop: no further than that
    bound or a sliver (1/`SLIVER` of the records so far), whichever is more. Without a bound,
    by one round (`window`, N/2 encounters). `reach`, the first encounter it
    may not ask yet, only grows and is updated after every record, so it is a function of
    the records alone, not of when answers came. It asks at most `max_in_flight` at once.
    When the run stops at t* by its own rule (a consensus, a flip), `drain` still asks and
    applies every encounter before `reach`, recording none: those are the ones a run may
    have asked before it knew it would stop, so what is asked is a function of the seed too,
    and a rerun finds every answer it asks for in the cache; with a bound, they are at most
    the sliver. A stop from outside (a budget, a signal) cancels instead."""

    def __init__(self, model: PopulationModel, pairing: SequentialPairing) -> None:
        super().__init__(model)
        self.pairing = pairing
        self.window = model.round_size  # not max_in_flight: what is asked must not depend on it
        # with a bound on the stop (`Scenario.stop_distance`), further while the stop is out of reach
        self.far = FAR_ROUNDS * model.round_size
        self.reach = 0  # encounters before it may be asked: a function of the records so far
        self.ready: list[tuple[int, GameEncounter]] = []  # a heap by t: may be asked now
        self.records: dict[int, EncounterRecord] = {}  # by t: applied, waiting for its turn to be recorded
        self.last: dict[int, GameEncounter] = {}  # by agent index: the latest encounter drawn with it
        self.blockers: dict[int, int] = {}  # by t: how many of its dependencies are not applied yet
        self.dependents: dict[int, list[GameEncounter]] = {}  # by t: the encounters waiting for it
        self.failure: BaseException | None = None
        self.wakeup = asyncio.Event()

    def population_changed(self) -> None:
        if self.open:
            raise RuntimeError("the population changed while encounters were drawn ahead; a scenario that replaces "
                               "agents between rounds needs pairing=rounds or a group pairing")
        super().population_changed()

    # --- the sequence ----------------------------------------------------------------------
    def _limit(self) -> int:
        rounds = self.model.scenario.max_rounds()
        return rounds * self.model.round_size if rounds > 0 else 1 << 62

    def _draw(self) -> GameEncounter:
        """Encounter `model.encounters_begun`: its pair, then the game's draws for it."""
        model = self.model
        t = model.encounters_begun
        first, second = self.pairing.pair(model, len(self.agents))
        encounter: GameEncounter = Encounter(t, t // model.round_size, (self.agents[first], self.agents[second]))
        model.encounters_begun = t + 1
        encounter.drawn = model.scenario.draw(model, encounter)
        self._enqueue(encounter)
        return encounter

    def _enqueue(self, encounter: GameEncounter) -> None:
        """Open a drawn encounter behind the earlier open encounters of its agents."""
        blockers = 0
        for agent in encounter.agents + tuple(self.model.scenario.reads(self.model, encounter)):
            previous = self.last.get(agent.index)
            if previous is not None and previous.t in self.blockers:
                waiting = self.dependents[previous.t]
                if not waiting or waiting[-1] is not encounter:  # the two met last time together
                    waiting.append(encounter)
                    blockers += 1
            self.last[agent.index] = encounter
        self.open[encounter.t] = encounter
        self.blockers[encounter.t] = blockers
        self.dependents[encounter.t] = []
        if not blockers:
            heapq.heappush(self.ready, (encounter.t, encounter))

    def _fill(self, horizon: int) -> None:
        """Ask ready encounters before `horizon`, drawing up to it, up to `max_in_flight` at once."""
        running, ready, model, limit = self.running, self.ready, self.model, self.pairing.max_in_flight
        horizon = min(horizon, self._limit())
        while len(running) < limit:
            if ready and ready[0][0] < horizon:
                self._start(heapq.heappop(ready)[1])
            elif model.encounters_begun < horizon:
                self._draw()
            else:
                return

    def _start(self, encounter: GameEncounter) -> None:
        model = self.model
        encounter.views = model.scenario.start(model, encounter)
        self.running[encounter.t] = asyncio.get_running_loop().create_task(self._ask(encounter))

    async def _ask(self, encounter: GameEncounter) -> None:
        try:
            outcome = await self.model.scenario.play(self.model, encounter)
            self._apply_now(encounter, outcome)
        except Exception as error:
            if self.failure is None:
                self.failure = error
        del self.running[encounter.t]
        self.wakeup.set()

    def _apply_now(self, encounter: GameEncounter, outcome: object) -> None:
        """Apply the outcome to the participants (their earlier encounters are applied, their
        later ones not started) and keep the record for its turn; free what waited for it."""
        model = self.model
        self.records[encounter.t] = model.scenario.resolve(model, encounter, outcome)
        for agent in encounter.agents:
            agent.encounter_resolved()
        del self.blockers[encounter.t]
        for waiter in self.dependents.pop(encounter.t):
            self.blockers[waiter.t] -= 1
            if not self.blockers[waiter.t]:
                heapq.heappush(self.ready, (waiter.t, waiter))

    def _record_next(self) -> bool:
        """Hand the next encounter's record to the model (metrics, store, stop rule), if applied."""
        model = self.model
        record = self.records.pop(model.completed, None)
        if record is None:
            return False
        del self.open[model.completed]
        model.resolved(record)
        if model.stop_reason is None:
            self._extend_reach()
        return True

    def _extend_reach(self) -> None:
        """Look ahead from the records so far: a round, or less where the stop rule could fire
        sooner (then by its bound, or the sliver if more). Called after every record while the
        run has not stopped, so `reach` depends on the records alone."""
        model = self.model
        done, far = model.completed, self.far
        if self.reach >= done + far:
            return
        distance = model.scenario.stop_distance(model, far)
        ahead = self.window if distance is None else min(far, max(done // SLIVER, distance, 1))
        self.reach = max(self.reach, done + ahead)

    # --- a round -------------------------------------------------------------------------
    async def run_round(self) -> None:
        """Record the encounters of the next population round (or until the run stops)."""
        model = self.model
        boundary = min((model.rounds_done + 1) * model.round_size, self._limit())
        if self.immediate:
            await self._run_immediate(boundary)
            return
        wakeup = self.wakeup
        if model.stop_reason is None:
            self._extend_reach()  # the run's start, or a resumed one's
        while model.completed < boundary and model.stop_reason is None:
            if self._record_next():
                continue
            self._fill(self.reach)
            if self.failure is not None:
                raise self.failure
            if not self.running and model.completed not in self.records:
                raise RuntimeError(f"encounter {model.completed} can never be asked (the scheduler is stuck)")
            wakeup.clear()
            await wakeup.wait()

    async def _run_immediate(self, boundary: int) -> None:
        """Policies that never suspend: draw, ask, apply and record one encounter after
        another, which is what the concurrent path amounts to with nothing to wait for."""
        model = self.model
        scenario, pair, agents, resolved = model.scenario, self.pairing.pair, self.agents, model.resolved
        round_size, count = model.round_size, len(agents)
        while model.completed < boundary and model.stop_reason is None:
            t = model.encounters_begun
            first, second = pair(model, count)
            encounter: GameEncounter = Encounter(t, t // round_size, (agents[first], agents[second]))
            model.encounters_begun = t + 1
            encounter.drawn = scenario.draw(model, encounter)
            encounter.views = scenario.start(model, encounter)
            record = scenario.resolve(model, encounter, await scenario.play(model, encounter))
            for agent in encounter.agents:
                agent.encounter_resolved()
            resolved(record)

    # --- the end, checkpoints --------------------------------------------------------------
    async def drain(self) -> None:
        """End the run where it stopped: ask and apply what it may have asked ahead (before
        `reach`), recording nothing (a stop the run decided), or cancel what is in flight (no
        stop of its own: the round limit)."""
        model = self.model
        if self.immediate:
            pass  # answered in process: nothing runs ahead, nothing is cached
        elif model.stop_reason is not None:
            while True:
                self._fill(self.reach)
                if not self.running:
                    break
                self.wakeup.clear()
                await self.wakeup.wait()
        else:
            await asyncio.gather(*self.cancel(), return_exceptions=True)
        self.failure = None
        for structure in (self.open, self.records, self.last, self.blockers, self.dependents):
            structure.clear()
        self.ready.clear()

    def pending_state(self) -> list[Pending]:
        """The open part of the sequence for a checkpoint: each encounter with what was drawn
        for it and, if it was applied but not recorded yet, its record."""
        return [(encounter.t, encounter.round, tuple(agent.index for agent in encounter.agents), encounter.drawn,
                 self.records.get(encounter.t)) for encounter in self.pending()]

    async def resume(self, pending: list[Pending]) -> None:
        """Reopen the open part of the sequence a checkpoint kept, in order: an applied one
        waits to be recorded; the others are asked again (with the same seeds) in their turn."""
        by_index = self._by_index()
        for t, round_, members, drawn, *applied in sorted(pending, key=lambda item: item[0]):
            encounter: GameEncounter = Encounter(t, round_, tuple(by_index[i] for i in members), drawn)
            record = applied[0] if applied else None
            if record is None:
                self._enqueue(encounter)
            else:
                self.open[t] = encounter
                self.records[t] = record


def _neighbour_lists(graph: nx.Graph | list[list[int]] | None) -> list[list[int]] | None:
    """Each agent's neighbours, sorted: a graph's, or lists given as they are (`Topology.neighbour_lists`)."""
    if graph is None or isinstance(graph, list):
        return graph
    return [sorted(graph.neighbors(node)) for node in range(graph.number_of_nodes())]
