"""A new experiment by subclassing the naming game: one name is worth more.

Coordinating on the prize name pays double (+200 each); other matches pay +100, mismatches
-50. Does a payoff-dominant convention win against the symmetric ones, and how fast? The
subclass changes the payoff and the prompt (a template file beside this one that states the
extra rule); everything else (memory, parsing, recording, metrics) is the naming game's.

    python -m agentsim examples/prize_convention.py --runs 10
"""

from __future__ import annotations

from pathlib import Path

from agentsim.games.naming import NamingGame


class PrizeConvention(NamingGame):
    name = "prize_convention"

    def prize(self) -> str:
        return self.names[-1]

    def payoff(self, own: str | None, partner: str | None) -> int:
        base = super().payoff(own, partner)
        return 2 * base if own == partner == self.prize() else base

    def prompt_fields(self) -> dict[str, object]:
        return {"prize_name": self.prize(), "prize_payoff": f"{2 * self.params.success_payoff:+d}"}


scenario = PrizeConvention(
    agents=24,
    names=("F", "J", "Q", "M"),
    prompt=str(Path(__file__).with_name("prize_prompt.txt")),
    max_rounds=40,
)
