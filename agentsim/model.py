"""The Mesa model of one run: a population, its seeded generators, its scheduler and metrics."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mesa

from . import checkpoints
from .llm.base import LanguageModel
from .records import EncounterRecord
from .scheduler import Pending, make_scheduler
from .usage import RunUsage

if TYPE_CHECKING:
    from .agents import PopulationAgent
    from .scenario import Scenario


@dataclass(frozen=True)
class BackendShare:
    """A backend and how many agents use it (None: all the agents no other share claims)."""

    backend: LanguageModel
    count: int | None = None


class PopulationModel(mesa.Model):
    """One run. Its agents are Mesa's `agents` (an AgentSet, in the order they were made).
    Time is counted in the sequence of encounters (`time`: drawn, `completed`: resolved, in
    order) and in population rounds of N/2 encounters (`rounds_done`; encounter t is in round
    t // round_size).

    Mesa wraps `step()` and discards what it returns, so the async entry point is `astep()`,
    which runs one population round and ends by calling the synchronous `step()`."""

    def __init__(
        self,
        scenario: Scenario[Any],
        *,
        seed: int,
        replicate: int = 0,
        run_id: int = 1,
        backends: Sequence[BackendShare] = (),
        on_resolved: Callable[[EncounterRecord], None] | None = None,
    ) -> None:
        super().__init__(seed=seed)
        self.scenario = scenario
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
        scenario.build_population(self)
        self.round_size = max(1, len(self.agents) // 2)
        self.immediate = all(agent.policy.immediate for agent in self.agents)
        self.metrics = scenario.new_metrics(self)
        self.scheduler = make_scheduler(self, scenario.pairing(self))

    @property
    def population(self) -> list[PopulationAgent]:
        """The agents as a list, in the order they were made (a copy of `agents`: index it
        at build time, not in a hot loop)."""
        return list(self.agents)

    def backend_for(self, index: int) -> LanguageModel:
        """The backend agent `index` uses: shares are filled in order of the agents' indices."""
        start = 0
        for share in self.backends:
            if share.count is None or index < start + share.count:
                return share.backend
            start += share.count
        if not self.backends:
            raise RuntimeError("this model was built without a backend; pass backends=[BackendShare(...)]")
        return self.backends[-1].backend

    @property
    def finished(self) -> bool:
        limit = self.scenario.max_rounds()
        return self.stop_reason is not None or (limit > 0 and self.rounds_done >= limit)

    async def astep(self) -> None:
        await self.scheduler.run_round()
        self.rounds_done += 1
        self.scenario.on_round_end(self)
        if self.stop_reason is None:  # a rule read at the round's end (agreement on a network)
            self.stop_reason = self.scenario.stop_reason(self)
        if self.stop_reason is not None:
            await self.scheduler.drain()
        self.step()

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
        metrics, accounting, and the open part of the sequence (what was drawn for each
        encounter, and the record of those applied but not recorded yet), as plain data
        (agentsim/checkpoints.py: JSON, objects of registered classes only)."""
        state = {
            "random": self.random.getstate(),
            "rng": self.rng.bit_generator.state,
            "time": self.encounters_begun,  # the key older checkpoints use
            "completed": self.completed,
            "rounds_done": self.rounds_done,
            "stop_reason": self.stop_reason,
            "agents": [agent.state() for agent in self.agents],
            "metrics": self.metrics,
            "usage": self.usage,
            "pending": self.scheduler.pending_state(),
            "extra": self.scenario.model_state(self),
        }
        return checkpoints.dumps(state)

    def restore(self, blob: bytes) -> list[Pending]:
        """Load a checkpoint; returns the encounters to relaunch with `Scheduler.resume`."""
        state = checkpoints.loads(blob)
        self.scenario.restore_model_state(self, state["extra"])
        self.random.setstate(state["random"])
        self.rng.bit_generator.state = state["rng"]
        self.encounters_begun = state["time"]
        self.completed = state["completed"]
        self.rounds_done = state["rounds_done"]
        self.stop_reason = state["stop_reason"]
        for agent, agent_state in zip(self.agents, state["agents"], strict=True):
            agent.restore(agent_state)
        self.metrics = state["metrics"]
        self.usage = state["usage"]
        self.scheduler.population_changed()
        return state["pending"]
