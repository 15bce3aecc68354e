"""Mesa agents of a population. Each owns its memory and its policy and takes part in one
encounter at a time; its state changes only through the outcome of its own encounters."""

from __future__ import annotations

import asyncio
import itertools
import weakref
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import mesa

from .records import Decision
from .seeding import continue_seed, derive_seed, seed_state

if TYPE_CHECKING:
    from .model import PopulationModel
    from .policies import Policy


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
    has been through, which with the run's seed fixes the seed of each of its policy calls."""

    model: PopulationModel
    _ids = _CountersByModel()  # Mesa's per-model numbering (unique_id), without keeping the models

    def __init__(self, model: PopulationModel, policy: Policy[Any], *, memory_length: int | None) -> None:
        super().__init__(model)
        # The agent's number in the store and in its call seeds: Mesa's `unique_id` (1, 2, ...
        # in the order agents are made), counted from 0.
        self.index: int = self.unique_id - 1
        self.policy = policy
        self.memory: deque[Any] = deque(maxlen=memory_length)
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


async def ask_together(agents: Sequence[PopulationAgent], views: Sequence[object]) -> tuple[Decision, ...]:
    """Ask each participant of an encounter for its decision on its view, all at once. Where
    every policy decides without suspending (rules, the in-process stand-in) they are asked one
    after another, which is what tasks would do, without their cost: a game need not know."""
    if all(agent.policy.immediate for agent in agents):
        return tuple([await agent.astep(view) for agent, view in zip(agents, views, strict=True)])
    return tuple(await asyncio.gather(*(agent.astep(view) for agent, view in zip(agents, views, strict=True))))
