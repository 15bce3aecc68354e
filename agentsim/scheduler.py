"""Who meets whom, and how many encounters are in flight. One scheduler serves every scenario.

Pairings come in two shapes:

- a `RoundPairing` proposes every group of a population round at once and the round ends
  when all of them are resolved (synchronous rounds, a whole-village meeting);
- a `DrawPairing` draws one group at a time among idle agents and keeps up to
  `max_in_flight` encounters going (the continuous process, network-restricted or not).

Every random draw (pairs, and the game's own draws in `Scenario.draw`) happens before any
await, from the run's generators, so a run is a function of its seed and its answers. An agent
is marked busy from the moment it is drawn until its encounter resolves, and only idle agents
can be drawn: no agent is ever in two encounters at once.
"""

from __future__ import annotations

import asyncio
import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import networkx as nx

if TYPE_CHECKING:
    from .agents import PopulationAgent
    from .model import PopulationModel


@dataclass(slots=True)
class Encounter:
    """A group that meets at interaction `t` of population round `round`; `drawn` holds what
    the game drew for it before any await (and what a checkpoint keeps of it in flight)."""

    t: int
    round: int
    agents: tuple[PopulationAgent, ...]
    drawn: Any = None


class IdlePool:
    """The idle agents' indices, kept sorted so that draws depend only on the rng."""

    def __init__(self, indices: list[int]) -> None:
        self.members = sorted(indices)

    def __len__(self) -> int:
        return len(self.members)

    def take_at(self, position: int) -> int:
        return self.members.pop(position)

    def take(self, index: int) -> None:
        position = bisect.bisect_left(self.members, index)
        if position < len(self.members) and self.members[position] == index:
            del self.members[position]

    def release(self, index: int) -> None:
        bisect.insort(self.members, index)

    def __contains__(self, index: int) -> bool:
        position = bisect.bisect_left(self.members, index)
        return position < len(self.members) and self.members[position] == index


class RoundPairing:
    """Synchronous rounds: a random perfect matching of the population (restricted to the
    graph's edges when there is one: a random maximal matching)."""

    def __init__(self, graph: nx.Graph | None = None) -> None:
        self.neighbours = _neighbour_lists(graph)

    def groups(self, model: PopulationModel) -> list[tuple[int, ...]]:
        order = list(range(len(model.population)))
        model.random.shuffle(order)
        if self.neighbours is None:
            return [(order[i], order[i + 1]) for i in range(0, len(order) - 1, 2)]
        matched = [False] * len(order)
        pairs = []
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
    """The whole population meets as one group every round (a village meeting)."""

    def groups(self, model: PopulationModel) -> list[tuple[int, ...]]:
        return [tuple(range(len(model.population)))]


class DrawPairing:
    """The continuous process: each new pair drawn uniformly among idle agents, up to
    `max_in_flight` encounters at once; `max_in_flight=1` is one random pair per time step.
    With a graph, the first agent is drawn among idle agents and its partner among its idle
    neighbours (network-restricted pairing)."""

    def __init__(self, max_in_flight: int, graph: nx.Graph | None = None) -> None:
        self.max_in_flight = max_in_flight
        self.neighbours = _neighbour_lists(graph)

    def draw(self, model: PopulationModel, idle: IdlePool) -> tuple[int, int] | None:
        rng = model.random
        if self.neighbours is None:
            if len(idle) < 2:
                return None
            first = idle.take_at(rng.randrange(len(idle)))
            return first, idle.take_at(rng.randrange(len(idle)))
        for _ in range(4 * len(idle)):
            first = idle.members[rng.randrange(len(idle))]
            free = [other for other in self.neighbours[first] if other in idle]
            if free:
                partner = free[rng.randrange(len(free))]
                idle.take(first)
                idle.take(partner)
                return first, partner
        return None


Pairing = RoundPairing | GroupPairing | DrawPairing


class Scheduler:
    """Runs a model's encounters round by round under its pairing.

    An encounter is open from the moment it is drawn until it is resolved. Under a draw
    pairing it resolves as soon as its answers are in; under a round pairing every encounter
    of the round resolves in the order it was drawn once all answers are in, so the round's
    outcome does not depend on which answer came back first. What is open when a checkpoint is
    taken is kept with what was drawn for it, and relaunched on resume."""

    def __init__(self, model: PopulationModel, pairing: Pairing) -> None:
        self.model = model
        self.pairing = pairing
        self.open: dict[int, Encounter] = {}  # by t: drawn, not yet resolved
        self.in_flight: dict[asyncio.Task[None], Encounter] = {}
        self.idle = IdlePool(list(range(len(model.population))))
        self._draws = isinstance(pairing, DrawPairing)  # rounds are disjoint by construction

    def population_changed(self) -> None:
        """Call after agents were added or replaced between rounds."""
        busy = {agent.index for encounter in self.open.values() for agent in encounter.agents}
        self.idle = IdlePool([index for index in range(len(self.model.population)) if index not in busy])

    def pending(self) -> list[Encounter]:
        return [self.open[t] for t in sorted(self.open)]

    async def run_round(self) -> None:
        """Advance one population round (or until the model is asked to stop)."""
        if self._draws:
            await self._run_draws(self.pairing)  # type: ignore[arg-type]
        elif self.open:  # a round interrupted and resumed: finish it rather than draw anew
            await self._finish_round(self.pending())
        else:
            await self._run_groups(self.pairing.groups(self.model))  # type: ignore[union-attr]

    async def resume(self, pending: list[tuple[int, int, tuple[int, ...], Any]]) -> None:
        """Reopen the encounters a checkpoint kept; draws relaunch them at once, a round
        relaunches them when `run_round` finishes it."""
        for t, round_, members, drawn in pending:
            if self._draws:
                for index in members:
                    self.idle.take(index)
            encounter = Encounter(t, round_, tuple(self.model.population[i] for i in members), drawn)
            self.open[t] = encounter
            if self._draws:
                self._launch(encounter)

    async def drain(self) -> None:
        """Let every encounter in flight finish (their calls are already paid for)."""
        while self.in_flight:
            await self._wait_one()

    def cancel(self) -> list[asyncio.Task[None]]:
        """Stop now. Open encounters stay open (a checkpoint keeps them); returns the
        cancelled tasks, to be awaited."""
        tasks = list(self.in_flight)
        for task in tasks:
            task.cancel()
        self.in_flight.clear()
        return tasks

    # --- internals -------------------------------------------------------------------
    async def _run_groups(self, groups: list[tuple[int, ...]]) -> None:
        encounters = [self._open(group, self.model.rounds_done) for group in groups]
        if self.model.immediate:
            # Policies that never suspend: in order, one by one, is what tasks would do.
            play, resolve = self.model.scenario.play, self._resolve
            for encounter in encounters:
                resolve(encounter, await play(self.model, encounter))
            return
        await self._finish_round(encounters)

    async def _finish_round(self, encounters: list[Encounter]) -> None:
        answers: dict[int, Any] = {}
        for encounter in encounters:
            self._launch(encounter, answers)
        await self.drain()
        for encounter in encounters:
            self._resolve(encounter, answers[encounter.t])

    async def _run_draws(self, pairing: DrawPairing) -> None:
        model = self.model
        boundary = (model.rounds_done + 1) * model.round_size
        while model.time < boundary and model.stop_reason is None:
            while len(self.in_flight) < pairing.max_in_flight and model.time < boundary:
                group = pairing.draw(model, self.idle)
                if group is None:
                    break
                self._launch(self._open(group, model.time // model.round_size))
            if not self.in_flight:
                raise RuntimeError("no pair of idle agents can meet: the interaction graph has no edges")
            await self._wait_one()

    def _open(self, members: tuple[int, ...], round_: int) -> Encounter:
        model = self.model
        if self._draws:
            for index in members:
                self.idle.take(index)
        encounter = Encounter(model.time, round_, tuple(map(model.population.__getitem__, members)))
        model.time += 1
        encounter.drawn = model.scenario.draw(model, encounter)
        self.open[encounter.t] = encounter
        return encounter

    def _launch(self, encounter: Encounter, answers: dict[int, Any] | None = None) -> None:
        """Ask the encounter's participants in a task; resolve on completion, or leave the
        answers in `answers` for the round to resolve in order."""
        task = asyncio.get_running_loop().create_task(self._play(encounter, answers))
        self.in_flight[task] = encounter

    async def _play(self, encounter: Encounter, answers: dict[int, Any] | None) -> None:
        outcome = await self.model.scenario.play(self.model, encounter)
        if answers is None:
            self._resolve(encounter, outcome)
        else:
            answers[encounter.t] = outcome

    async def _wait_one(self) -> None:
        done, _ = await asyncio.wait(self.in_flight, return_when=asyncio.FIRST_COMPLETED)
        for task in sorted(done, key=lambda task: self.in_flight[task].t):
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
            del self.in_flight[task]

    def _resolve(self, encounter: Encounter, outcome: Any) -> None:
        """Apply an encounter's outcome: the game's state change and its record, at once."""
        model = self.model
        record = model.scenario.resolve(model, encounter, outcome)
        del self.open[encounter.t]
        for agent in encounter.agents:
            agent.encounter_resolved()
            if self._draws:
                self.idle.release(agent.index)
        model.resolved(record)


def _neighbour_lists(graph: nx.Graph | None) -> list[list[int]] | None:
    if graph is None:
        return None
    return [sorted(graph.neighbors(node)) for node in range(graph.number_of_nodes())]
