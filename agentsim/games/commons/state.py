"""A commons run's state between steps: the month, the step the month is at, the stock, the
discussion so far, and the history the metrics are computed from.

It is the run's `metrics` object, so every checkpoint keeps it and a resumed run continues
from the step it was at, mid-discussion included (the scheduler keeps the open encounter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ... import checkpoints
from ...records import EncounterRecord
from .metrics import MonthRecord

Phase = Literal["harvest", "utterance", "limit", "reflection", "importance"]


@dataclass
class StepStats:
    """One step's line in the store's `rounds` table: which month and step a round was."""

    values: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return self.values


@dataclass
class CommonsState:
    names: list[str]
    villagers: list[int]  # every villager, present or not yet
    framework: int  # the agent that extracts the agreed limit
    stock: int
    month: int = 1
    phase: Phase = "harvest"
    after_importance: Phase | Literal["month_end"] = "harvest"
    present: list[int] = field(default_factory=list)
    greedy: set[int] = field(default_factory=set)
    conversation: list[tuple[str, str]] = field(default_factory=list)
    speaker: int | None = None
    first_speaker: int | None = None
    discussion_over: bool = False
    history: list[MonthRecord] = field(default_factory=list)
    finished: str | None = None
    memories_made: int = 0
    steps: dict[int, StepStats] = field(default_factory=dict)

    def update(self, record: EncounterRecord) -> None:
        """The scenario's `resolve` changes the state; a record adds nothing more."""

    def pop_rounds(self, before: int) -> list[tuple[int, StepStats]]:
        done = sorted(round_ for round_ in self.steps if round_ < before)
        return [(round_, self.steps.pop(round_)) for round_ in done]

    @property
    def current(self) -> MonthRecord:
        return self.history[-1]

    def date(self, month: int | None = None) -> str:
        """Month m's date as GovSim shows it (the simulation starts on 2024-01-01)."""
        number = (month or self.month) - 1
        return f"{2024 + number // 12}-{number % 12 + 1:02d}-01"


checkpoints.register(StepStats, CommonsState)
