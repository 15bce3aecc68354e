"""The Mesa model of one run: a population, its seeded generators, its scheduler and metrics."""

from __future__ import annotations

import asyncio
import collections
import enum
import numbers
import random
import secrets
import weakref
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar, cast

import mesa

from . import checkpoints, event_loop
from .agents import PopulationAgent, population_state, restore_population, unpack
from .blocking import run_blocking
from .llm.base import LanguageModel
from .records import EncounterRecord
from .scenario_files import scenario_from
from .scheduler import Pending, make_scheduler
from .usage import RunUsage

if TYPE_CHECKING:
    from .parts import Readout
    from .scenario import Scenario

St = TypeVar("St")


@dataclass(frozen=True)
class BackendShare:
    """A backend and how many agents use it (None: all the agents no other share claims)."""

    backend: LanguageModel
    count: int | None = None


class AgentRegistry(mesa.Model):
    """Mesa's `Model`, its registry of agents kept light. Mesa registers each agent in a dict and
    in two AgentSets (all agents, and those of its type), each a WeakKeyDictionary: a weak
    reference and a Python-level insertion per agent and set, about 400 bytes and a few
    microseconds an agent, for sets nobody may ask for. Here an agent is appended to a list;
    `agents` and `agents_by_type` are Mesa's AgentSets, made from it when first asked for (and
    again after the population changed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._members: list[PopulationAgent] = []  # in the order made: the hard references
        self._agent_set: mesa.agent.AgentSet | None = None
        super().__init__(*args, **kwargs)

    @property
    def population(self) -> list[PopulationAgent]:
        """The agents as a list, in the order they were made (a copy: index it at build time,
        not in a hot loop). Unlike `agents`, it never makes Mesa's AgentSet."""
        return list(self._members)

    def register_agent(self, agent: Any) -> None:
        self._members.append(agent)
        self._agent_set = None

    def deregister_agent(self, agent: Any) -> None:
        self._members.remove(agent)
        self._agent_set = None

    def remove_all_agents(self) -> None:
        for agent in list(self._members):
            agent.remove()

    @property
    def agents(self) -> mesa.agent.AgentSet:
        """Mesa's AgentSet of every agent, in the order they were made."""
        if self._agent_set is None:
            self._agent_set = mesa.agent.AgentSet(self._members, random=self.random)
        return self._agent_set

    @agents.setter
    def agents(self, agents: Any) -> None:
        raise AttributeError("model.agents is Mesa's: agentsim keeps the population there; use another attribute name")

    @property
    def agent_types(self) -> list[type]:
        return list(dict.fromkeys(type(agent) for agent in self._members))

    @property
    def agents_by_type(self) -> dict[type, mesa.agent.AgentSet]:
        return {kind: mesa.agent.AgentSet([agent for agent in self._members if type(agent) is kind], random=self.random)
                for kind in self.agent_types}


class PopulationModel(AgentRegistry, Generic[St]):
    """One run. Its agents are Mesa's `agents` (an AgentSet, in the order they were made).
    Time is counted in the sequence of encounters (`encounters_begun`: drawn, `completed`: resolved, in
    order) and in population rounds of N/2 encounters (`rounds_done`; encounter t is in round
    t // round_size). Mesa's `steps` counts population rounds too.

    As Mesa users expect, `PopulationModel(NamingGame(agents=8), seed=0)` builds a run on the
    built-in stand-in (no backend named), `step()` plays one population round synchronously
    (on an event loop of the model's own; from inside a running loop, as in a notebook, on a
    worker thread), `running` turns False when the run is over (so `mesa.batch_run` stops), and
    `datacollector` is a `mesa.DataCollector` that records the run's `seed` and the scenario's
    model-level series (its readout's `model_series`: the naming game's agreement, leading share, ...)
    for the state it was built in (step 0) and after each step.

    Its keyword arguments are Mesa's model parameters: `scenario` is a Scenario class or
    object, or a scenario file's path (read as every front door reads it,
    `scenario_files.scenario_from`: the file's RUNS, POPULATION and VARIANTS are an
    experiment's, not one model's), and any other keyword is one of the scenario's parameters
    (`PopulationModel(NamingGame, agents=8, committed=2)`), so `mesa.batch_run` sweeps them as
    it sweeps any model's (`parameters={"scenario": NamingGame, "agents": [6, 10]}`) and its
    rows carry them as plain columns. `seed` is optional, as in Mesa: without one, a seed is
    drawn from the operating system, kept as `seed` and reported in every DataCollector row
    (`rng=`, Mesa's other spelling, takes a whole number too).

    It is generic over the run's own state `St` (`state`, made by `Scenario.new_state`): a
    game's hooks take a `PopulationModel[ItsState]` and read `model.state` typed.

    Inside an event loop, the entry point is `astep()` (the runner's): it plays one round and
    ends by calling `step()`, which then only does Mesa's bookkeeping and collects the row."""

    def __init__(
        self,
        scenario: Scenario[Any, Any, St] | type[Scenario[Any, Any, St]] | str | Path,
        *,
        seed: int | None = None,
        rng: int | None = None,
        replicate: int = 0,
        run_id: int = 1,
        backends: Sequence[BackendShare] = (),
        on_resolved: Callable[[EncounterRecord], None] | None = None,
        **kwargs: Any,  # (named so: Mesa's SolaraViz checks a model's parameters against `kwargs`)
    ) -> None:
        scenario = scenario_from(scenario, kwargs)[0]  # as every front door builds it (agentsim/configure.py)
        if rng is not None:  # Mesa's other spelling; agentsim's draws all derive from one whole number
            if seed is not None:
                raise ValueError("PopulationModel takes seed= or rng=, not both (as Mesa's models)")
            if isinstance(rng, bool) or not isinstance(rng, numbers.Integral):
                raise TypeError(f"PopulationModel's rng must be a whole number (a seed) or None (got {rng!r}); "
                                f"agentsim derives every generator of a run from one seed")
            seed = rng
        if seed is None:
            seed = secrets.randbelow(2**31)  # Mesa's way: a fresh seed, kept and reported
        elif isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"PopulationModel's seed must be a whole number or None (got {seed!r})")
        seed = int(seed)
        super().__init__(seed=seed)
        # What is drawn once per experiment (a name pool) from the seed, for a model built on its
        # own (Mesa's way); a no-op on the scenario an experiment resolved already.
        self.scenario = scenario = scenario.for_experiment(seed)
        self.seed = seed
        self.replicate = replicate
        self.run_id = run_id
        self.backends = tuple(backends)
        self.usage = RunUsage()
        self.encounters_begun = 0  # not `time`: Mesa 3.4's step() advances Model.time
        self.completed = 0
        self.rounds_done = 0
        self.stop_reason: str | None = None
        self._on_resolved = on_resolved
        # Policies agents share, by the id of their backend (`NamingGame.agent_policy`): a policy
        # keeps nothing of an agent's, so a million agents on one backend hold one.
        self.shared_policies: dict[int, Any] = {}
        self._default_backend: LanguageModel | None = None
        self._round_played = False  # `astep` played the round that the `step()` it calls books
        self._loop: asyncio.AbstractEventLoop | None = None  # `step()`'s, while encounters are in flight
        self._loop_finalizer: weakref.finalize[Any, Any] | None = None
        scenario.build_population(self)
        self.round_size = max(1, len(self._members) // 2)
        # The run's own typed state (a month's stock, a generation's order), made by the rules.
        self.state: St = scenario.new_state(self)
        # What is measured (a `RunMetrics`), typed loosely: each family reads it as its own class.
        self.metrics: Any = scenario.new_metrics(self)
        # What the run shows of itself (agentsim/parts.py): live figures, series, its summary.
        self.readout: Readout[St] = scenario.readout()
        self.scheduler = make_scheduler(self, scenario.pairing(self))
        self._series: tuple[int, dict[str, Any]] | None = None
        self.datacollector = mesa.DataCollector(model_reporters={"seed": "seed"} | {
            key: partial(_series_value, key) for key in self.readout.model_series(self)})
        self.datacollector.collect(self)  # step 0: the state before any round, as Mesa's models collect it

    def backend_for(self, index: int) -> LanguageModel:
        """The backend agent `index` uses: shares are filled in order of the agents' indices;
        with no share given, the built-in stand-in (made once, on first use: rule agents ask none)."""
        start = 0
        for share in self.backends:
            if share.count is None or index < start + share.count:
                return share.backend
            start += share.count
        if not self.backends:
            if self._default_backend is None:
                from .llm.specs import build_backend  # lazy: the LLM stack, only when a model asks for it

                self._default_backend = build_backend("stand-in", rules=self.scenario.standin_part().rules)
            return self._default_backend
        return self.backends[-1].backend

    @property
    def finished(self) -> bool:
        limit = self.scenario.max_rounds()
        return self.stop_reason is not None or (limit > 0 and self.rounds_done >= limit)

    async def astep(self) -> None:
        """One population round, in the running event loop; ends by calling `step()` (Mesa's
        step counter and the DataCollector's row)."""
        await self._play_round()
        self._round_played = True
        self.step()

    async def _play_round(self) -> None:
        await self.scheduler.run_round()
        self.rounds_done += 1
        self.scenario.on_round_end(self)
        if self.stop_reason is None:  # a rule read at the round's end (agreement on a network)
            self.stop_reason = self.scenario.stop_reason(self)
        if self.stop_reason is not None:
            await self.scheduler.drain()

    def step(self) -> None:
        """One population round, synchronously (Mesa's `step`); called by `astep()`, only the
        bookkeeping of the round it played. A finished run plays and records nothing more
        (`running` is False)."""
        if not self._round_played:
            if self.finished:
                self.running = False
                return
            if self._loop is None:
                # Policies that suspend keep encounters (and the scheduler's events) on one loop
                # from step to step: it lives as long as the run (closed at the end, by `close()`
                # or when the model is collected); the stand-in's rounds each get a fresh one.
                self._loop = event_loop.new_event_loop()
                self._loop_finalizer = weakref.finalize(self, self._loop.close)
            run_blocking(self._play_round(), self._loop)
            if self.finished:
                run_blocking(self.scheduler.drain(), self._loop)  # as `arun` ends
            if self.scheduler.immediate or self.finished:
                self.close()
        self._round_played = False
        self.running = not self.finished
        self._series = None
        self.datacollector.collect(self)

    def close(self) -> None:
        """Close the loop `step()` drives the run on (once the run is over, or to abandon it)."""
        loop, self._loop = self._loop, None
        if self._loop_finalizer is not None:
            self._loop_finalizer.detach()
            self._loop_finalizer = None
        if loop is not None and not loop.is_closed():
            if self.scheduler.running:
                run_blocking(_cancelled(self.scheduler.cancel()), loop)
            loop.close()

    def series(self) -> dict[str, Any]:
        """The readout's model-level series now (what the DataCollector records), computed once per step."""
        if self._series is None or self._series[0] != self.rounds_done:
            self._series = (self.rounds_done, self.readout.model_series(self))
        return self._series[1]

    async def arun(self) -> None:
        while not self.finished:
            await self.astep()
        await self.scheduler.drain()

    def resolved(self, record: EncounterRecord) -> None:
        self.completed += 1
        if self.metrics is not None:
            self.metrics.update(record)
        if self._on_resolved is not None:
            self._on_resolved(record)
        if self.stop_reason is None:
            self.stop_reason = self.scenario.stop_reason(self)

    # --- checkpoints -------------------------------------------------------------------
    def checkpoint(self) -> bytes:
        """Everything needed to continue this run exactly: generators, agents, counters,
        metrics, the run's state (`state`), accounting, and the open part of the sequence (what was drawn for each
        encounter, and the record of those applied but not recorded yet), as plain data
        (agentsim/checkpoints.py: JSON, objects of registered classes only)."""
        state = {
            "random": self.random.getstate(),
            "rng": self.rng.bit_generator.state,
            "time": self.encounters_begun,  # the key older checkpoints use
            "completed": self.completed,
            "rounds_done": self.rounds_done,
            "stop_reason": self.stop_reason,
            "population": population_state(self._members),  # (before: "agents", one state per agent)
            "metrics": self.metrics,
            "usage": self.usage,
            "pending": self.scheduler.pending_state(),
            "reach": getattr(self.scheduler, "reach", 0),  # how far the sequence may be asked ahead
            "state": self.state,
        }
        return checkpoints.dumps(state)

    def restore(self, blob: bytes) -> list[Pending]:
        """Load a checkpoint; returns the encounters to relaunch with `Scheduler.resume`. The
        checkpoint is checked whole against this run's layout before any of it is used
        (`checked_state`): a tampered one raises `CheckpointError` and changes nothing."""
        state = checked_state(self, checkpoints.loads(blob))
        # "extra": where checkpoints before `model.state` kept a scenario's run state (evolution's).
        self.state = cast(St, state["state"] if "state" in state else state.get("extra"))
        self.random.setstate(state["random"])
        self.rng.bit_generator.state = state["rng"]
        self.encounters_begun = state["time"]
        self.completed = state["completed"]
        self.rounds_done = state["rounds_done"]
        self.stop_reason = state["stop_reason"]
        if "population" in state:
            restore_population(self._members, state["population"])
        else:  # a checkpoint written before agents were kept by column
            for agent, agent_state in zip(self._members, state["agents"], strict=True):
                agent.restore(agent_state)
        self.metrics = state["metrics"]
        self.usage = state["usage"]
        self.scheduler.population_changed()
        if hasattr(self.scheduler, "reach"):
            self.scheduler.reach = state.get("reach", 0)
        # The collector starts again from the state resumed from (its rows before are in the store).
        self.datacollector = mesa.DataCollector(model_reporters=self.datacollector.model_reporters)
        self._series = None
        self.datacollector.collect(self)
        return state["pending"]


_COUNTERS = ("time", "completed", "rounds_done")
_MAX_COUNT = 2**53  # encounters and rounds of any run fit, far below it


def checked_state(model: PopulationModel[Any], state: Any) -> dict[str, Any]:
    """`state`, a checkpoint read back, if it fits `model` (a run built afresh from the same
    scenario and seed): every key a checkpoint holds, of its type and in its range, the
    counters consistent with each other and with the open encounters, the agents as many and
    shaped as the run's, its metrics, usage and run state of the types the scenario makes (each
    attribute as the fresh run's). Else `CheckpointError` naming the first thing wrong."""
    def refuse(what: str) -> NoReturn:
        raise checkpoints.CheckpointError(f"the checkpoint's {what}", incompatible=False)

    if not isinstance(state, dict):
        refuse(f"state is {_kind(state)}, not a mapping")
    missing = [key for key in ("random", "rng", *_COUNTERS, "stop_reason", "metrics", "usage", "pending")
               if key not in state]
    if "population" not in state and "agents" not in state:
        missing.insert(4, "population")
    if missing:
        refuse(f"state lacks {', '.join(missing)}")
    try:
        random.Random().setstate(state["random"])
    except (TypeError, ValueError, OverflowError):
        refuse("'random' is not a generator state")
    try:
        type(model.rng.bit_generator)().state = state["rng"]
    except (TypeError, ValueError, KeyError, OverflowError):
        refuse("'rng' is not a numpy generator state")
    for key in _COUNTERS:
        value = state[key]
        if type(value) is not int or not 0 <= value <= _MAX_COUNT:
            refuse(f"'{key}' is {_kind(value)}, not a count from 0 to 2^53")
    limit = model.scenario.max_rounds()
    if limit > 0 and state["rounds_done"] > limit:
        refuse(f"'rounds_done' is {state['rounds_done']}, past the run's {limit} rounds")
    pending = state["pending"]
    if not isinstance(pending, list):
        refuse(f"'pending' is {_kind(pending)}, not a list")
    agents = len(model.population)
    # Encounters drawn are completed, open, or (a run that stopped early) drawn ahead and
    # dropped: the scheduler draws at most two population rounds ahead.
    if not state["completed"] + len(pending) <= state["time"] <= state["completed"] + len(pending) + 4 * agents + 4:
        refuse(f"counters disagree: {state['time']} encounters begun, {state['completed']} completed and "
               f"{len(pending)} open")
    for entry in pending:
        if (not isinstance(entry, tuple) or len(entry) not in (4, 5) or type(entry[0]) is not int
                or not state["completed"] <= entry[0] < state["time"] or type(entry[1]) is not int or entry[1] < 0
                or not isinstance(entry[2], tuple) or not entry[2]
                or not all(type(index) is int and 0 <= index < agents for index in entry[2])
                or (len(entry) == 5 and entry[4] is not None and not isinstance(entry[4], EncounterRecord))):
            refuse(f"open encounter {_kind(entry)} is not (t, round, agents, drawn[, record]) of this run")
    if len({entry[0] for entry in pending}) != len(pending):
        refuse("open encounters repeat an encounter")
    if state["stop_reason"] is not None and not isinstance(state["stop_reason"], str):
        refuse(f"'stop_reason' is {_kind(state['stop_reason'])}, not text")
    if "reach" in state and (type(state["reach"]) is not int or not 0 <= state["reach"] <= _MAX_COUNT):
        refuse(f"'reach' is {_kind(state['reach'])}, not a count")
    if "population" in state:
        _check_population(model, state["population"], refuse)
    else:  # a checkpoint written before agents were kept by column
        fresh = [agent.state() for agent in model.population]
        if not isinstance(state["agents"], list) or len(state["agents"]) != len(fresh):
            refuse(f"agents are {_kind(state['agents'])}, not the run's {len(fresh)}")
        for index, (value, agent_template) in enumerate(zip(state["agents"], fresh, strict=True)):
            _same_shape(value, agent_template, f"agent {index}'s state", refuse)
        _alike_memories([agent.get("memory") if isinstance(agent, dict) else None for agent in state["agents"]],
                        refuse)
    run_state = "state" if "state" in state else "extra"
    for key, template, what in (("metrics", model.metrics, "metrics"), ("usage", model.usage, "usage"),
                                (run_state, model.state, "run state")):
        if template is None and state.get(key) is not None:  # the scenario keeps none
            refuse(f"{what} is {_kind(state[key])} where the scenario keeps none")
        _same_shape(state.get(key), template, what, refuse)
    return state


def _same_shape(value: Any, template: Any, where: str, refuse: Callable[[str], NoReturn], depth: int = 0) -> None:
    """Refuse `value` unless it is shaped as `template` (what a fresh run holds there): the
    same type (any number for a number), a registered object's attributes each shaped as
    the template's, a container's items each shaped as one of the template's. None in the
    template (a value not set yet) takes anything."""
    if template is None or depth > checkpoints.MAX_DEPTH:
        return
    if isinstance(template, bool) or not isinstance(template, (int, float)):
        if type(value) is not type(template):
            refuse(f"{where} is {_kind(value)}, not {_kind(template)}")
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        refuse(f"{where} is {_kind(value)}, not a number")
    if isinstance(template, dict):
        keys = {type(key) for key in template}
        items = [item for item in template.values() if item is not None]
        if not keys:
            return  # a fresh run's table is empty: nothing to hold its entries to
        if (len(keys) == 1 and items and len({type(each) for each in items}) == 1
                and _scalars_fit(value.keys(), next(iter(template))) and _scalars_fit(value.values(), items[0])):
            return  # a large table of plain values (an agent's latest name by index): checked at C speed
        for key, item in value.items():
            if keys and type(key) not in keys and not (isinstance(key, (int, float)) and keys & {int, float}):
                refuse(f"{where} has a key {_kind(key)}")
            if key in template:
                _same_shape(item, template[key], f"{where}[{key!r}]", refuse, depth + 1)
            elif items and len({type(each) for each in items}) == 1:
                _same_shape(item, items[0], f"{where}[{key!r}]", refuse, depth + 1)
        return
    if isinstance(template, (list, tuple, set, frozenset, collections.deque)):
        items = [item for item in template if item is not None]
        if isinstance(template, tuple) and items and len(items) == len(template) and len(value) == len(template):
            for index, (item, kind) in enumerate(zip(value, template, strict=True)):
                _same_shape(item, kind, f"{where}[{index}]", refuse, depth + 1)
        elif items and len({type(each) for each in items}) == 1 and not isinstance(template, tuple):
            if _scalars_fit(value, items[0]):
                return  # a long run of plain values (a window of counts): checked at C speed
            for item in value:
                _same_shape(item, items[0], f"{where} item", refuse, depth + 1)
        return
    if checkpoints.name_of(type(template)) is not None and not isinstance(template, enum.Enum):
        attributes = checkpoints.attributes(template)
        for key, item in checkpoints.attributes(value).items():
            if key in attributes:
                _same_shape(item, attributes[key], f"{where}.{key}", refuse, depth + 1)


def _scalars_fit(values: Any, template: Any) -> bool:
    """Whether every one of `values` passes `_same_shape` against `template`, a plain value
    (text, a number, a truth value), judged from their types alone; False when that cannot
    tell (then each is checked, and the first wrong one named)."""
    kinds = set(map(type, values))
    if type(template) in (str, bool):
        return kinds <= {type(template)}
    if type(template) in (int, float):
        return kinds <= {int, float}
    return False


def _check_population(model: PopulationModel[Any], population: Any, refuse: Callable[[str], NoReturn]) -> None:
    """The agents' columns (`agents.population_state`) fit the run: a column per agent of
    whole numbers in range, memories within the game's bound, indices inside the table of
    entries, the entries shaped alike, and what an agent's class adds shaped as a fresh one's."""
    agents = model.population
    count = len(agents)
    columns = {"encounters", "memory_sizes", "memory", "entries", "extra"}
    if not isinstance(population, dict) or not {"encounters", "memory_sizes", "memory", "entries"} <= set(population) \
            or not set(population) <= columns:
        refuse(f"population is {_kind(population)}, not the agents' columns")
    encounters, sizes, memory = (_packed(population, key, refuse) for key in ("encounters", "memory_sizes", "memory"))
    for key, column in (("encounters", encounters), ("memory_sizes", sizes)):
        if len(column) != count:
            refuse(f"population's {key} are {len(column)}, not one for each of the run's {count} agents")
    for key, column in (("encounters", encounters), ("memory_sizes", sizes), ("memory", memory)):
        if column and not 0 <= min(column) <= max(column) <= _MAX_COUNT:
            refuse(f"population's {key} hold something other than counts from 0 to 2^53")
    entries = population["entries"]
    if not isinstance(entries, list):
        refuse(f"population's entries are {_kind(entries)}, not a list")
    if len(memory) != sum(sizes):
        refuse(f"population's memory holds {len(memory)} entries, not the {sum(sizes)} its sizes add up to")
    if memory and max(memory) >= len(entries):
        refuse(f"population's memory points outside its {len(entries)} entries")
    for index, (agent, size) in enumerate(zip(agents, sizes, strict=True)):
        bound = getattr(agent.memory, "maxlen", None)
        if bound is not None and size > bound:
            refuse(f"agent {index}'s memory holds {size} entries, more than the game's {bound}")
    _alike_memories([entries], refuse, lambda _: "a remembered encounter")
    extra = population.get("extra")
    if extra is None:
        if any(type(agent).state is not PopulationAgent.state for agent in agents):
            refuse("population lacks what the run's agents keep beside their memories")
        return
    if not isinstance(extra, list) or len(extra) != count:
        refuse(f"population's extra is {_kind(extra)}, not one for each of the run's {count} agents")
    for index, (value, agent) in enumerate(zip(extra, agents, strict=True)):
        if type(agent).state is PopulationAgent.state:
            if value is not None:
                refuse(f"agent {index}'s state holds {_kind(value)} its class does not keep")
            continue
        template = {key: item for key, item in agent.state().items() if key not in ("memory", "encounters")}
        if not isinstance(value, dict) or set(value) != set(template):
            refuse(f"agent {index}'s state is {_kind(value)}, not {_kind(template)}")
        _same_shape(value, template, f"agent {index}'s state", refuse)


def _packed(population: dict[str, Any], key: str, refuse: Callable[[str], NoReturn]) -> array[int]:
    column = population[key]
    try:
        if type(column) is bytes:
            return unpack(column)
    except ValueError:
        pass
    refuse(f"population's {key} are {_kind(column)}, not packed counts")


def _alike_memories(memories: list[Any], refuse: Callable[[str], NoReturn],
                    named: Callable[[int], str] = lambda index: f"agent {index}'s memory") -> None:
    """Every remembered encounter of every agent shaped alike (a fresh run remembers none, so
    the game's own entries are the measure): one tampered entry differs from the rest."""
    reference: Any = _NO_SHAPE
    for index, memory in enumerate(memories):
        for entry in memory if isinstance(memory, list) else ():
            shape = _shape(entry)
            if reference is _NO_SHAPE:
                reference = shape
            elif not _compatible(shape, reference):
                refuse(f"{named(index)} holds {_kind(entry)}, unlike the other entries")


_NO_SHAPE = object()


def _shape(value: Any) -> Any:
    """A value's type tree, numbers alike and None (a value not known) as a wildcard."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, tuple):
        return ("tuple", *(_shape(item) for item in value))
    return type(value).__name__


def _compatible(shape: Any, other: Any) -> bool:
    if shape is None or other is None:
        return True
    if isinstance(shape, tuple) and isinstance(other, tuple):
        return len(shape) == len(other) and all(_compatible(a, b) for a, b in zip(shape, other, strict=True))
    return bool(shape == other)


def _kind(value: Any) -> str:
    text = repr(value)
    return f"a {type(value).__name__} ({text if len(text) <= 30 else text[:27] + '...'})"


def _series_value(key: str, model: PopulationModel[Any]) -> Any:
    """A DataCollector model reporter, as `partial(_series_value, key)`: one of the readout's
    series (a partial of a module function, which Mesa calls with the model and pickle takes)."""
    return model.series().get(key)


async def _cancelled(tasks: Sequence[asyncio.Future[Any]]) -> None:
    await asyncio.gather(*tasks, return_exceptions=True)
