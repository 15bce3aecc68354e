"""Mesa agents of a population. Each owns its memory and its policy and takes part in one
encounter at a time; its state changes only through the outcome of its own encounters."""

from __future__ import annotations

import asyncio
import itertools
import sys
import weakref
from array import array
from collections.abc import Iterable, Sequence
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, Any, SupportsIndex

import mesa

from .records import Decision
from .seeding import continue_seed, derive_seed, seed_state

if TYPE_CHECKING:
    from .model import PopulationModel
    from .policies import Policy


class Memory(list[Any]):
    """An agent's memory: a list that keeps its last `maxlen` entries (None: every entry) as
    `append`, `extend` and `+=` add to it. A list of H references, where a deque holds a block
    of 64 whatever H is: at a million agents that is the difference between 0.1 and 0.8 KB an
    agent (docs/scale.md)."""

    __slots__ = ("maxlen",)

    def __init__(self, entries: Iterable[Any] = (), maxlen: int | None = None) -> None:
        super().__init__(entries)
        self.maxlen = maxlen
        self._trim()

    def append(self, entry: Any, /) -> None:
        list.append(self, entry)
        if self.maxlen is not None and len(self) > self.maxlen:
            del self[0]

    def extend(self, entries: Iterable[Any], /) -> None:
        list.extend(self, entries)
        self._trim()

    def __iadd__(self, entries: Iterable[Any], /) -> Memory:  # type: ignore[misc]
        self.extend(entries)
        return self

    def insert(self, index: SupportsIndex, entry: Any, /) -> None:
        list.insert(self, index, entry)
        self._trim()

    def _trim(self) -> None:
        if self.maxlen is not None and len(self) > self.maxlen:
            del self[:len(self) - self.maxlen]

    def __repr__(self) -> str:
        return f"Memory({list.__repr__(self)}, maxlen={self.maxlen})"


class _CountersByModel(weakref.WeakKeyDictionary[Any, "itertools.count[int]"]):
    """Mesa numbers a model's agents from a counter it keeps per model, in a dictionary of the
    Agent class keyed by the model, for the life of the process: a process that builds many
    models (a sweep, a reenactment of a thousand runs) would keep every one of them alive. Here
    the key is weak, so a finished model and its agents go."""

    def __getitem__(self, model: Any) -> itertools.count[int]:
        try:
            return super().__getitem__(model)
        except KeyError:
            counter = self[model] = itertools.count(1)
            return counter


class PopulationAgent(mesa.Agent):
    """An agent: a policy, a bounded memory the game fills, and a count of the encounters it
    has been through, which with the run's seed fixes the seed of each of its policy calls.

    Its own attributes are slots (a subclass may add any attribute it likes): a population of a
    million keeps what the game needs and nothing more (docs/scale.md)."""

    __slots__ = ("calls", "encounters", "index", "memory", "model", "policy", "pos", "seed_state", "unique_id")

    model: PopulationModel
    _ids = _CountersByModel()  # Mesa's per-model numbering (unique_id), without keeping the models

    def __init__(self, model: PopulationModel, policy: Policy[Any], *, memory_length: int | None) -> None:
        super().__init__(model)
        # The agent's number in the store and in its call seeds: Mesa's `unique_id` (1, 2, ...
        # in the order agents are made), counted from 0.
        self.index: int = self.unique_id - 1
        self.policy = policy
        self.memory = Memory(maxlen=memory_length)
        self.encounters = 0  # resolved encounters
        self.calls = 0  # policy calls in the open encounter; restarts when it resolves
        self.seed_state = seed_state(derive_seed(model.seed, self.index))  # the leading parts of its call seeds

    @property
    def committed(self) -> bool:
        return self.policy.kind == "committed"

    async def astep(self, situation: Any) -> Decision:
        """Ask the policy for an action in `situation` (Mesa's `step` is synchronous and
        discards results, so an encounter awaits this instead)."""
        return await self.policy.decide(self, situation)

    def next_call_seed(self) -> int:
        """The seed of this agent's next policy call: a function of the run's seed, the agent,
        its resolved encounters and the call's place in the open encounter only, so that an
        encounter asked again after an interruption gets the same seeds."""
        seed = continue_seed(self.seed_state, self.encounters, self.calls)
        self.calls += 1
        return seed

    def encounter_resolved(self) -> None:
        self.encounters += 1
        self.calls = 0

    def state(self) -> dict[str, Any]:
        return {"memory": list(self.memory), "encounters": self.encounters}

    def restore(self, state: dict[str, Any]) -> None:
        self.memory.clear()
        self.memory.extend(state["memory"])
        self.encounters = state["encounters"]
        self.calls = 0


def population_state(agents: Iterable[PopulationAgent]) -> dict[str, Any]:
    """Every agent's state for a checkpoint, by column: its resolved encounters, its memory as
    indices into one table of the distinct entries the population remembers (an entry many
    agents hold, such as the naming game's `("M", "M", 100)`, is written once), and, for agents
    whose class adds to `state()` (SIGN's current proposal), the rest of it. The columns of
    numbers are packed (`pack`): a million agents checkpoint in a few megabytes, with no object
    per agent on the way. Distinct means distinct objects: entries equal but not the same
    object stay apart, so a restored run shares exactly what the live one shared."""
    agents = list(agents)
    plain = PopulationAgent.state
    extra: list[dict[str, Any] | None] | None = None
    if all(kind.state is plain for kind in {type(agent) for agent in agents}):  # (by column, at C speed: a million agents)
        encounters = array("q", map(attrgetter("encounters"), agents))
        memories: list[Sequence[Any]] = list(map(attrgetter("memory"), agents))
    else:  # a class that adds to `state()`: the rest of each agent's state beside its memory
        encounters, memories, extra = array("q"), [], []
        for agent in agents:
            if type(agent).state is plain:
                encounters.append(agent.encounters)
                memories.append(agent.memory)
                extra.append(None)
            else:
                state = dict(agent.state())
                memories.append(state.pop("memory"))
                encounters.append(state.pop("encounters"))
                extra.append(state)
    sizes = array("q", map(len, memories))
    remembered = list(chain.from_iterable(memories))
    identities = list(map(id, remembered))
    distinct = dict(zip(identities, remembered))  # by identity: every entry is alive while this runs
    place = {identity: number for number, identity in enumerate(distinct)}
    columns: dict[str, Any] = {"encounters": pack(encounters), "memory_sizes": pack(sizes),
                               "memory": pack(array("q", map(place.__getitem__, identities))),
                               "entries": list(distinct.values())}
    if extra is not None and any(item is not None for item in extra):
        columns["extra"] = extra
    return columns


# The widths a packed column's numbers may take, narrowest first (`pack`).
_WIDTHS = (("B", 1), ("H", 2), ("I", 4), ("q", 8))


def pack(numbers: array[int]) -> bytes:
    """Whole numbers from 0 to 2^63 - 1, how a checkpoint keeps a column of a number per
    agent: one byte giving the width w (1, 2, 4 or 8), then each number in w bytes,
    little-endian, w the narrowest that holds the largest (`unpack` reads it back)."""
    largest = max(numbers, default=0)
    code, width = next((code, width) for code, width in _WIDTHS if largest < 1 << (8 * width - (width == 8)))
    packed = array(code, numbers)
    if sys.byteorder != "little":
        packed.byteswap()
    return bytes([width]) + packed.tobytes()


def unpack(data: bytes) -> array[int]:
    """The numbers `pack` packed (ValueError: not a column `pack` writes)."""
    code = next((code for code, width in _WIDTHS if data[:1] == bytes([width])), None)
    if code is None:
        raise ValueError("a packed column starts with its width: 1, 2, 4 or 8")
    numbers = array(code)
    numbers.frombytes(data[1:])
    if sys.byteorder != "little":
        numbers.byteswap()
    return numbers


def restore_population(agents: Sequence[PopulationAgent], state: dict[str, Any]) -> None:
    """Set every agent's state from `population_state`'s columns (checked already:
    `model.checked_state`)."""
    entries, memory, extra = state["entries"], unpack(state["memory"]), state.get("extra")
    start = 0
    plain = PopulationAgent.state
    for position, (agent, encounters, size) in enumerate(zip(agents, unpack(state["encounters"]),
                                                             unpack(state["memory_sizes"]), strict=True)):
        remembered = [entries[place] for place in memory[start:start + size]]
        start += size
        if type(agent).state is plain and (extra is None or extra[position] is None):
            agent.memory[:] = remembered  # (within the game's bound: checked with the checkpoint)
            agent.encounters = encounters
            agent.calls = 0
        else:
            added = extra[position] if extra is not None else None
            agent.restore({**(added or {}), "memory": remembered, "encounters": encounters})


async def ask_together(agents: Sequence[PopulationAgent], views: Sequence[object]) -> tuple[Decision, ...]:
    """Ask each participant of an encounter for its decision on its view, all at once. Where
    every policy decides without suspending (rules, the in-process stand-in) they are asked one
    after another, which is what tasks would do, without their cost: a game need not know."""
    if all(agent.policy.immediate for agent in agents):
        return tuple([await agent.astep(view) for agent, view in zip(agents, views, strict=True)])
    return tuple(await asyncio.gather(*(agent.astep(view) for agent, view in zip(agents, views, strict=True))))
