"""What a player sees when it is asked, and what it keeps of its own rounds (its memory: the
agent's state, which checkpoints hold as plain data)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .params import ACTIONS


class Play(NamedTuple):
    """One round of one player: its move, its partner's, and its payoff."""

    own: str
    partner: str
    payoff: int


@dataclass(frozen=True, slots=True)
class DilemmaView:
    """A player's situation: the round (from 1), its own last rounds (oldest first) and its
    partner's last moves (oldest first: the partner's public record, its reputation)."""

    round: int
    history: tuple[Play, ...]
    partner_record: tuple[str, ...]

    @property
    def options(self) -> tuple[str, ...]:
        return ACTIONS

    @property
    def partner_reputation(self) -> float | None:
        """The share of C among the partner's last moves; None before its first round."""
        if not self.partner_record:
            return None
        return self.partner_record.count("C") / len(self.partner_record)
