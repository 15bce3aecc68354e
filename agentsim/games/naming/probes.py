"""Naming-game probes: runs whose agents are asked from chosen memories, not from their own.

They go through the whole normal path (the scheduler's concurrency, the LLM policy with its
re-asks and fallbacks, the store), so what they measure is what a run would see:

- `FirstChoiceProbe`: every agent is always asked with an empty memory. Each decision is one
  sample of the individual bias (the paper's first-round choices, Fig. 2B left, Fig. S4, S5).
- `StrategyProbe`: decision k is asked with memory configuration k (cycling) out of every
  memory of the lengths in `probe_lengths`: lengths (0, 1, 2) are the first three
  interactions of Table 1, length 5 the H = 5 states of Fig. S8. Each configuration is asked
  equally often, so each gets a sampled probability with a confidence interval.

Both record the memory shown in each call's context, so `agentsim.analysis` reads them like
any run.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ...agents import PopulationAgent
from ...model import PopulationModel
from ...params import require
from ...scheduler import Encounter
from .game import NamingGame, NamingParams
from .readout import NamingReadout
from .situation import Memory, NamingSituation


class FirstChoiceProbe(NamingGame):
    """Individual bias: agents meet as usual but never remember, so every choice is a first one."""

    name = "individual_bias"
    independent_calls = True  # an empty memory every time: a prompt depends on the seed alone

    def remember(self, agent: PopulationAgent, own: str | None, partner: str | None, payoff: int) -> None:
        return None

    def stop_reason(self, model: PopulationModel) -> str | None:
        return None


@dataclass(frozen=True, kw_only=True)
class StrategyProbeParams(NamingParams):
    probe_lengths: tuple[int, ...] = (0, 1, 2)  # memory lengths whose every configuration is asked

    def validate(self) -> None:
        super().validate()
        require(len(self.probe_lengths) >= 1, "probe_lengths must name at least one memory length")
        require(all(0 <= length <= self.memory_length or length == 0 for length in self.probe_lengths),
                f"probe_lengths must lie between 0 and memory_length={self.memory_length}")
        pool = len(self.names) if self.names else self.pool_size
        count = sum((pool * pool) ** length for length in self.probe_lengths)
        require(count <= 200_000, f"probe_lengths ask {count} memory configurations; use a smaller pool or shorter lengths")


class StrategyProbe(NamingGame):
    """Strategy tables: decision k of the run is asked from configuration k mod C."""

    name = "strategies"
    Params = StrategyProbeParams
    independent_calls = True  # each decision is asked from a chosen memory, not the agent's own
    params: StrategyProbeParams

    @cached_property
    def configurations(self) -> tuple[tuple[Memory, ...], ...]:
        """Every memory of each probed length: (own, partner, payoff) entries, oldest first."""
        names = self.names
        entries = [(own, partner, self.payoff(own, partner)) for own in names for partner in names]
        found: list[tuple[Memory, ...]] = []
        for length in self.params.probe_lengths:
            found.extend(itertools.product(entries, repeat=length))
        return tuple(found)

    def start(self, model: PopulationModel, encounter: Encounter) -> tuple[NamingSituation | None, ...]:
        """Each asked agent's options, with configuration 2t + its position as its memory."""
        configurations = self.configurations
        return tuple(None if options is None else
                     NamingSituation(options, configurations[(2 * encounter.t + position) % len(configurations)])
                     for position, options in enumerate(encounter.drawn))

    def remember(self, agent: PopulationAgent, own: str | None, partner: str | None, payoff: int) -> None:
        return None

    def stop_reason(self, model: PopulationModel) -> str | None:
        return None

    def readout(self) -> StrategyProbeReadout:
        return StrategyProbeReadout(self)


class StrategyProbeReadout(NamingReadout):
    """A strategy probe's summary: how many memory configurations it asks (no consensus to report)."""

    game: StrategyProbe

    def run_summary(self, model: PopulationModel[None]) -> dict[str, Any]:
        return {"configurations": len(self.game.configurations)}
