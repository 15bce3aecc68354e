"""What a cultural-evolution run measures: per generation, the mean payoff (each agent's mean
final payoff over the generation's games, averaged over agents), the donation fraction
(Donor game: units given over units held, per donor decision), the cooperation rate (Stag
Hunt: stag hunts per choice), and the roster with every text. Fallbacks are counted and kept
out of the fractions: a fallback is not a choice."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...records import EncounterRecord


@dataclass
class EvolutionMetrics:
    generations: list[dict[str, Any]] = field(default_factory=list)
    donated: float = 0.0  # sum of donated fractions this generation
    donations: int = 0
    stags: int = 0
    hunts: int = 0
    punishments: int = 0
    refusals: int = 0
    invalid_actions: int = 0  # Donor game: more than the donor held (Vallinder and Hughes's "invalid action")
    fallbacks: dict[str, int] = field(default_factory=dict)  # by phase kind
    _rows: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    def update(self, record: EncounterRecord) -> None:
        """Tallies come from the game's own calls (it knows what a donor held)."""

    def text_written(self, kind: str, fallback: bool) -> None:
        if fallback:
            self.fallbacks[kind] = self.fallbacks.get(kind, 0) + 1

    def donation(self, kind: str, fraction: float | None, fallback: bool) -> None:
        if fallback:
            self.fallbacks["play"] = self.fallbacks.get("play", 0) + 1
            return
        if kind == "punish":
            self.punishments += 1
        elif kind == "refuse":
            self.refusals += 1
        elif kind == "invalid":
            self.invalid_actions += 1
        if fraction is not None:
            self.donated += fraction if kind == "donate" else 0.0
            self.donations += 1

    def hunt(self, action: str | None, fallback: bool) -> None:
        if fallback or action is None:
            self.fallbacks["play"] = self.fallbacks.get("play", 0) + 1
            return
        self.hunts += 1
        self.stags += action == "STAG"

    def close_generation(self, round_: int, generation: int, roster: list[dict[str, Any]], survivors: list[str]) -> None:
        scores = [entry["score"] for entry in roster]
        record = {
            "generation": generation,
            "mean_payoff": sum(scores) / len(scores),
            "payoffs": {entry["name"]: entry["score"] for entry in roster},
            "survivors": survivors,
            "donation_fraction": self.donated / self.donations if self.donations else None,
            "donor_choices": self.donations,
            "punishments": self.punishments,
            "refusals": self.refusals,
            "invalid_actions": self.invalid_actions,
            "cooperation_rate": self.stags / self.hunts if self.hunts else None,
            "hunt_choices": self.hunts,
            "fallbacks": dict(self.fallbacks),
        }
        self.generations.append(record)
        self._rows.append((round_, record | {"roster": roster}))
        self.donated, self.donations, self.stags, self.hunts = 0.0, 0, 0, 0
        self.punishments = self.refusals = self.invalid_actions = 0
        self.fallbacks = {}

    def pop_rounds(self, before: int) -> list[tuple[int, Any]]:
        """Generation rows for the store's `rounds` table (keyed by the generation's last
        scheduler round), each with its roster: every agent's name, parent, texts and score."""
        ready = [row for row in self._rows if row[0] < before]
        self._rows = [row for row in self._rows if row[0] >= before]
        return [(round_, _Stats(stats)) for round_, stats in ready]

    def summary(self) -> list[dict[str, Any]]:
        return [dict(record) for record in self.generations]


class _Stats(dict[str, Any]):
    def as_dict(self) -> dict[str, Any]:
        return dict(self)
