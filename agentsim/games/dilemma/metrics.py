"""What is measured while a run goes: cooperation per round and per model, payoffs, fallbacks.

A fallback move (no reply gave it) plays its part in the game (its payoff, the partner's
reputation) but is no one's choice: it is counted beside, never in a cooperation rate. The
metrics go whole into checkpoints, so they hold plain data only; each finished round's tally
goes to the store's rounds table (`pop_rounds`), where the report reads it back.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ...figures import LiveFigures
from ...records import EncounterRecord
from .params import COOPERATE


@dataclass(slots=True)
class Tally:
    """Moves, the choices among them (fallbacks left out), cooperations among those, payoffs."""

    moves: int = 0
    choices: int = 0
    cooperations: int = 0
    fallbacks: int = 0
    payoff: int = 0

    def add(self, action: str | None, payoff: float, fallback: bool) -> None:
        self.moves += 1
        self.payoff += int(payoff)
        if fallback:
            self.fallbacks += 1
        else:
            self.choices += 1
            self.cooperations += action == COOPERATE

    @property
    def cooperation_rate(self) -> float | None:
        return self.cooperations / self.choices if self.choices else None

    @property
    def mean_payoff(self) -> float | None:
        return self.payoff / self.moves if self.moves else None

    def as_dict(self) -> dict[str, Any]:
        rate, mean = self.cooperation_rate, self.mean_payoff
        return {"moves": self.moves, "choices": self.choices, "cooperations": self.cooperations,
                "fallbacks": self.fallbacks, "cooperation_rate": None if rate is None else round(rate, 6),
                "mean_payoff": None if mean is None else round(mean, 6)}


@dataclass(slots=True)
class RoundTally:
    """One round: the whole population's tally and each model's."""

    total: Tally = field(default_factory=Tally)
    by_model: dict[str, Tally] = field(default_factory=dict)
    mutual_cooperations: int = 0
    encounters: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {**self.total.as_dict(), "encounters": self.encounters, "mutual_cooperations": self.mutual_cooperations,
                "by_model": {label: tally.as_dict() for label, tally in sorted(self.by_model.items())}}


@dataclass(slots=True)
class DilemmaMetrics:
    """The run's measurements. `models` maps each agent to the label of its model."""

    models: dict[int, str]
    total: Tally = field(default_factory=Tally)
    by_model: dict[str, Tally] = field(default_factory=dict)
    rounds: list[RoundTally] = field(default_factory=list)  # every round so far, in order
    recorded: int = 0  # rounds handed to the store

    def update(self, record: EncounterRecord) -> None:
        while len(self.rounds) <= record.round:
            self.rounds.append(RoundTally())
        tally = self.rounds[record.round]
        tally.encounters += 1
        tally.mutual_cooperations += all(move.action == COOPERATE and not move.fallback for move in record.moves)
        for move in record.moves:
            label = self.models.get(move.agent, "?")
            for target in (self.total, tally.total, self.by_model.setdefault(label, Tally()),
                           tally.by_model.setdefault(label, Tally())):
                target.add(move.action, move.payoff, move.fallback)

    def pop_rounds(self, before: int) -> Iterator[tuple[int, RoundTally]]:
        """The rounds before `before` not yet handed to the store (the runner records them)."""
        while self.recorded < min(before, len(self.rounds)):
            yield self.recorded, self.rounds[self.recorded]
            self.recorded += 1

    @property
    def cooperation_history(self) -> list[float]:
        """Each round's cooperation rate (rounds with no choice left out)."""
        return [rate for tally in self.rounds if (rate := tally.total.cooperation_rate) is not None]


@dataclass(frozen=True, kw_only=True)
class DilemmaFigures:
    """A dilemma run's headline figures; `as_live` words them for the live view."""

    cooperation_rate: float | None
    last_round_rate: float | None
    mean_payoff: float | None
    fallbacks: int
    by_model: dict[str, float | None]

    @classmethod
    def of(cls, metrics: DilemmaMetrics) -> DilemmaFigures:
        last = metrics.rounds[-1].total.cooperation_rate if metrics.rounds else None
        return cls(cooperation_rate=metrics.total.cooperation_rate, last_round_rate=last,
                   mean_payoff=metrics.total.mean_payoff, fallbacks=metrics.total.fallbacks,
                   by_model={label: tally.cooperation_rate for label, tally in sorted(metrics.by_model.items())})

    def as_live(self) -> LiveFigures:
        rate = self.cooperation_rate
        lines = [("cooperation", "-" if rate is None else f"{rate:.0%} of choices"
                  + ("" if self.last_round_rate is None else f" ({self.last_round_rate:.0%} in the latest round)")),
                 ("mean payoff", "-" if self.mean_payoff is None else f"{self.mean_payoff:.2f} per move")]
        if len(self.by_model) > 1:
            lines.extend((f"C: {label}", "-" if value is None else f"{value:.0%}") for label, value in self.by_model.items())
        if rate is None:
            return LiveFigures(lines=tuple(lines))
        note = f"{self.fallbacks} fallbacks left out" if self.fallbacks else "every move a choice"
        return LiveFigures(shares={"C": rate, "D": 1 - rate}, shares_label="choices", shares_note=note, lines=tuple(lines))
