"""A commons run's state between steps: the month, the step the month is at, the stock, the
discussion so far, and the history the metrics are computed from.

It is the run's `state` (`Scenario.new_state`), so every checkpoint keeps it and a resumed run
continues from the step it was at, mid-discussion included (the scheduler keeps the open
encounter).
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Literal

from ...records import EncounterRecord
from .metrics import MonthRecord

Phase = Literal["harvest", "utterance", "limit", "reflection", "importance"]

# GovSim's clock (simulation/scenarios/common/environment/concurrent_env.py): month m's harvest
# is on its first day, the discussion the day before its last, the reflection on its last; a
# thought or a conversation is kept 63 days (conf/experiment/*.yaml, store.expiration_delta).
KEPT = timedelta(days=63)


def month_day(month: int, step: Literal["harvest", "discussion", "reflection"]) -> date:
    """The day of month `month`'s step (month 1 is January 2024)."""
    year, index = 2024 + (month - 1) // 12, (month - 1) % 12 + 1
    if step == "harvest":
        return date(year, index, 1)
    last = date(year, index, calendar.monthrange(year, index)[1])
    return last - timedelta(days=1) if step == "discussion" else last


@dataclass
class StepStats:
    """One step's line in the store's `rounds` table: which month and step a round was."""

    values: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return self.values


@dataclass
class StepLog:
    """The run's metrics (`model.metrics`): each round's step, until the runner writes it to
    the store's `rounds` table. Everything else a commons run measures is read from the
    state's history of months."""

    steps: dict[int, StepStats] = field(default_factory=dict)

    def update(self, record: EncounterRecord) -> None:
        """The scenario's `resolve` changes the state; a record adds nothing more."""

    def pop_rounds(self, before: int) -> list[tuple[int, StepStats]]:
        done = sorted(round_ for round_ in self.steps if round_ < before)
        return [(round_, self.steps.pop(round_)) for round_ in done]


@dataclass
class CommonsState:
    """The run's world (`model.state`): the month, its step, the stock, the discussion so far,
    who is present, and the history of months the metrics are computed from."""

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
    discussion_over: bool = False
    history: list[MonthRecord] = field(default_factory=list)
    finished: str | None = None
    memories_made: int = 0

    @property
    def current(self) -> MonthRecord:
        return self.history[-1]

    def day(self, step: Literal["harvest", "discussion", "reflection"]) -> date:
        return month_day(self.month, step)
