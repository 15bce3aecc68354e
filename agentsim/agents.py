"""Mesa agents of a population. Each owns its memory and its policy and takes part in one
encounter at a time; its state changes only through the outcome of its own encounters."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import mesa

from .records import Decision
from .seeding import derive_seed

if TYPE_CHECKING:
    from .model import PopulationModel
    from .policies import Policy


class PopulationAgent(mesa.Agent):
    """An agent: a policy, a bounded memory the game fills, and a count of decisions taken
    (which, with the run's seed, fixes the seed of each of its policy calls: `call_seed`)."""

    model: PopulationModel

    def __init__(self, model: PopulationModel, policy: Policy, *, memory_length: int) -> None:
        super().__init__(model)
        self.index = len(model.population)
        model.population.append(self)
        self.policy = policy
        self.memory: deque[Any] = deque(maxlen=memory_length)
        self.decisions = 0
        self.seed_base = derive_seed(model.seed, self.index)

    @property
    def committed(self) -> bool:
        return self.policy.kind == "committed"

    async def astep(self, situation: Any) -> Decision:
        """Ask the policy for an action in `situation` (Mesa's `step` is synchronous and
        discards results, so an encounter awaits this instead)."""
        decision = await self.policy.decide(self, situation)
        self.decisions += 1
        return decision

    def call_seed(self, attempt: int) -> int:
        """The seed of attempt `attempt` (0 first, -1 for a fallback's die) of the current
        decision: a function of the run's seed, this agent and its decision count only."""
        return derive_seed(self.seed_base, (self.decisions << 8) | (attempt + 1))

    def state(self) -> dict[str, Any]:
        return {"memory": list(self.memory), "decisions": self.decisions}

    def restore(self, state: dict[str, Any]) -> None:
        self.memory.clear()
        self.memory.extend(state["memory"])
        self.decisions = state["decisions"]
